package nullbinder

import (
	"io"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Options
		wantErr []string
	}{{
		name: "defaults",
		want: Options{SchedulerName: SchedulerName, Client: Client{QPS: -1, Burst: 1000, BindWorkers: 16}},
	}, {
		name: "the harness's settings",
		args: []string{"--kubeconfig=/k", "--kube-api-qps=1000", "--kube-api-burst=1000", "--bind-workers=32", "--scheduler-name=other"},
		want: Options{Kubeconfig: "/k", SchedulerName: "other", Client: Client{QPS: 1000, Burst: 1000, BindWorkers: 32}},
	}, {
		name: "every invalid flag reported",
		args: []string{"--scheduler-name=", "--kube-api-qps=0", "--kube-api-burst=0", "--bind-workers=0"},
		wantErr: []string{"--scheduler-name: must not be empty", "--kube-api-qps: must not be 0",
			"--kube-api-burst: must be at least 1, got 0", "--bind-workers: must be at least 1, got 0"},
	}, {
		name: "no client-side limit",
		args: []string{"--kube-api-qps=-1", "--bind-workers=256"},
		want: Options{SchedulerName: SchedulerName, Client: Client{QPS: -1, Burst: 1000, BindWorkers: 256}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseFlags(tc.args, io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *o != tc.want {
				t.Errorf("options = %+v, want %+v", *o, tc.want)
			}
		})
	}
}

func TestClientLimit(t *testing.T) {
	tests := []struct {
		client Client
		want   string
	}{
		{client: Client{QPS: -1, Burst: 1000}, want: "none (client-go's limiter off)"},
		{client: Client{QPS: 1000, Burst: 500}, want: "QPS 1000, burst 500"},
	}
	for _, tc := range tests {
		if got := tc.client.Limit(); got != tc.want {
			t.Errorf("%+v: Limit() = %q, want %q", tc.client, got, tc.want)
		}
	}
}
