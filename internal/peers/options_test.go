package peers

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// files makes an executable, a plain file and a kubeconfig-like file in a
// temporary folder.
func files(t *testing.T) (exe, plain, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	exe, plain, kubeconfig = filepath.Join(dir, "exe"), filepath.Join(dir, "plain"), filepath.Join(dir, "kubeconfig")
	for path, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644, kubeconfig: 0o600} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return exe, plain, kubeconfig
}

func TestOptionsValidate(t *testing.T) {
	exe, plain, kubeconfig := files(t)
	dir := filepath.Dir(exe)
	valid := Options{Binary: exe, Kubeconfig: kubeconfig, LogFile: filepath.Join(dir, "log")}
	cases := []struct {
		name  string
		edit  func(*VolcanoOptions, *CoschedulingOptions)
		wants []string // every one must be in the error; none means valid
	}{
		{name: "valid, defaults", edit: func(*VolcanoOptions, *CoschedulingOptions) {}},
		{name: "valid, everything set", edit: func(v *VolcanoOptions, c *CoschedulingOptions) {
			v.QPS, v.Burst, v.Verbosity, v.SchedulePeriod = 1000, 1000, 4, 100*time.Millisecond
			v.Actions, v.Plugins = []string{"enqueue", "allocate", "preempt"}, []string{"gang", "proportion"}
			c.QPS, c.Burst, c.Verbosity, c.PermitWaitingTime = 1000, 1000, 4, 10*time.Second
		}},
		{name: "no binary", edit: func(v *VolcanoOptions, c *CoschedulingOptions) { v.Binary, c.Binary = "", "" },
			wants: []string{"Binary: empty", "hack/peer-schedulers.sh"}},
		{name: "missing binary", edit: func(v *VolcanoOptions, c *CoschedulingOptions) {
			v.Binary, c.Binary = filepath.Join(dir, "nope"), filepath.Join(dir, "nope")
		}, wants: []string{"Binary: ", "no such file", "build it with hack/peer-schedulers.sh"}},
		{name: "binary not executable", edit: func(v *VolcanoOptions, c *CoschedulingOptions) { v.Binary, c.Binary = plain, plain },
			wants: []string{"Binary: " + plain + " is not an executable file"}},
		{name: "binary is a folder", edit: func(v *VolcanoOptions, c *CoschedulingOptions) { v.Binary, c.Binary = dir, dir },
			wants: []string{"Binary: " + dir + " is not an executable file"}},
		{name: "no kubeconfig", edit: func(v *VolcanoOptions, c *CoschedulingOptions) { v.Kubeconfig, c.Kubeconfig = "", "" },
			wants: []string{"Kubeconfig: empty"}},
		{name: "missing kubeconfig", edit: func(v *VolcanoOptions, c *CoschedulingOptions) {
			v.Kubeconfig, c.Kubeconfig = filepath.Join(dir, "nope"), filepath.Join(dir, "nope")
		}, wants: []string{"Kubeconfig: ", "no such file"}},
		{name: "negative limits", edit: func(v *VolcanoOptions, c *CoschedulingOptions) {
			v.QPS, v.Burst, v.Verbosity = -1, -1, -1
			c.QPS, c.Burst, c.Verbosity = -1, -1, -1
		}, wants: []string{"Burst: must be 0 (the scheduler's default) or more, got -1", "Verbosity: must be 0 or more, got -1"}},
		{name: "no log file", edit: func(v *VolcanoOptions, c *CoschedulingOptions) { v.LogFile, c.LogFile = "", "" },
			wants: []string{"LogFile: empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, c := VolcanoOptions{Options: valid}, CoschedulingOptions{Options: valid}
			tc.edit(&v, &c)
			for kind, err := range map[string]error{"volcano": v.Validate(), "coscheduling": c.Validate()} {
				checkErr(t, kind, err, tc.wants)
			}
		})
	}
}

func TestVolcanoOptionsValidate(t *testing.T) {
	exe, _, kubeconfig := files(t)
	cases := []struct {
		name  string
		edit  func(*VolcanoOptions)
		wants []string
	}{
		{name: "negative period", edit: func(o *VolcanoOptions) { o.SchedulePeriod = -time.Second },
			wants: []string{"SchedulePeriod: must be 0 (Volcano's default, 1s) or more, got -1s"}},
		{name: "unknown action", edit: func(o *VolcanoOptions) { o.Actions = []string{"enqueue", "alocate"} },
			wants: []string{`Actions: Volcano has no action "alocate"; allowed: allocate, backfill, enqueue, preempt, reclaim, shuffle`}},
		{name: "unknown plugin", edit: func(o *VolcanoOptions) { o.Plugins = []string{"gang", "predicate"} },
			wants: []string{`Plugins: Volcano has no plugin "predicate"; allowed: binpack,`, "predicates"}},
		{name: "action twice", edit: func(o *VolcanoOptions) { o.Actions = []string{"allocate", "allocate"} },
			wants: []string{`Actions: "allocate" is listed twice`}},
		{name: "plugin twice", edit: func(o *VolcanoOptions) { o.Plugins = []string{"gang", "gang"} },
			wants: []string{`Plugins: "gang" is listed twice`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := VolcanoOptions{Options: Options{Binary: exe, Kubeconfig: kubeconfig, LogFile: "log"}}
			tc.edit(&o)
			checkErr(t, "volcano", o.Validate(), tc.wants)
		})
	}
}

func TestCoschedulingOptionsValidate(t *testing.T) {
	exe, _, kubeconfig := files(t)
	for _, d := range []time.Duration{-time.Second, 1500 * time.Millisecond} {
		o := CoschedulingOptions{Options: Options{Binary: exe, Kubeconfig: kubeconfig, LogFile: "log"}, PermitWaitingTime: d}
		checkErr(t, d.String(), o.Validate(), []string{"PermitWaitingTime: must be whole seconds, 0 (the plugin's default, 60s) or more, got " + d.String()})
	}
}

func checkErr(t *testing.T, kind string, err error, wants []string) {
	t.Helper()
	if len(wants) == 0 {
		if err != nil {
			t.Errorf("%s: unexpected error: %v", kind, err)
		}
		return
	}
	if err == nil {
		t.Errorf("%s: no error, want one with %q", kind, wants)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", kind, err, w)
		}
	}
}

func TestVolcanoConf(t *testing.T) {
	cases := []struct {
		name string
		opts VolcanoOptions
		want string
	}{
		{name: "defaults", want: `actions: enqueue, allocate, backfill
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: nodeorder
`},
		{name: "chosen", opts: VolcanoOptions{Actions: []string{"enqueue", "allocate", "preempt"}, Plugins: []string{"gang", "drf"}},
			want: `actions: enqueue, allocate, preempt
tiers:
- plugins:
  - name: gang
  - name: drf
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.opts.withDefaults().conf()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("conf:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestVolcanoArgs(t *testing.T) {
	cases := []struct {
		name string
		opts VolcanoOptions
		want []string
		not  []string
	}{
		{name: "defaults", want: []string{"--leader-elect=false", "--disable-default-scheduler-config=true", "--scheduler-name=volcano", "--scheduler-conf=/d/volcano-scheduler.conf", "--kubeconfig=/k"},
			not: []string{"--schedule-period", "--kube-api-qps", "--kube-api-burst", "--v="}},
		{name: "set", opts: VolcanoOptions{Options: Options{QPS: 500, Burst: 600, Verbosity: 3}, SchedulePeriod: 200 * time.Millisecond},
			want: []string{"--schedule-period=200ms", "--kube-api-qps=500", "--kube-api-burst=600", "--v=3"}},
		{name: "no client-side limit", opts: VolcanoOptions{Options: Options{QPS: -1}},
			want: []string{"--kube-api-qps=-1"}, not: []string{"--kube-api-burst"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Kubeconfig = "/k"
			checkArgs(t, tc.opts.args("/d"), tc.want, tc.not)
		})
	}
}

func checkArgs(t *testing.T, args, want, not []string) {
	t.Helper()
	joined := " " + strings.Join(args, " ") + " "
	for _, w := range want {
		if !strings.Contains(joined, " "+w+" ") {
			t.Errorf("args %q lack %q", args, w)
		}
	}
	for _, n := range not {
		if strings.Contains(joined, n) {
			t.Errorf("args %q have %q", args, n)
		}
	}
}

func TestCoschedulingConfig(t *testing.T) {
	cases := []struct {
		name       string
		opts       CoschedulingOptions
		wantClient map[string]any
		wantArgs   []any
	}{
		{name: "defaults", wantClient: map[string]any{"kubeconfig": "/k"}},
		{name: "set", opts: CoschedulingOptions{Options: Options{QPS: 1000, Burst: 900}, PermitWaitingTime: 10 * time.Second},
			wantClient: map[string]any{"kubeconfig": "/k", "qps": float64(1000), "burst": float64(900)},
			wantArgs:   []any{map[string]any{"name": "Coscheduling", "args": map[string]any{"permitWaitingTimeSeconds": float64(10)}}}},
		{name: "no client-side limit", opts: CoschedulingOptions{Options: Options{QPS: -1}},
			wantClient: map[string]any{"kubeconfig": "/k", "qps": float64(-1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Kubeconfig = "/k"
			raw, err := tc.opts.config()
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"apiVersion":       "kubescheduler.config.k8s.io/v1",
				"kind":             "KubeSchedulerConfiguration",
				"leaderElection":   map[string]any{"leaderElect": false},
				"clientConnection": tc.wantClient,
				"profiles": []any{map[string]any{
					"schedulerName": "scheduler-plugins-scheduler",
					"plugins": map[string]any{
						"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": "Coscheduling"}}},
						"queueSort": map[string]any{
							"enabled":  []any{map[string]any{"name": "Coscheduling"}},
							"disabled": []any{map[string]any{"name": "*"}},
						},
					},
				}},
			}
			if tc.wantArgs != nil {
				want["profiles"].([]any)[0].(map[string]any)["pluginConfig"] = tc.wantArgs
			}
			wantRaw, _ := yaml.Marshal(want)
			gotRaw, _ := yaml.Marshal(got)
			if string(gotRaw) != string(wantRaw) {
				t.Errorf("config:\n%s\nwant:\n%s", gotRaw, wantRaw)
			}
			checkArgs(t, tc.opts.args("/d"), []string{"--config=/d/kube-scheduler.yaml", "--secure-port=0"}, []string{"--v="})
		})
	}
}

func TestKubeSchedulerOptions(t *testing.T) {
	exe, _, kubeconfig := files(t)
	// A missing binary points at the script that builds this one.
	o := KubeSchedulerOptions{Options: Options{Kubeconfig: kubeconfig, LogFile: "log"}}
	checkErr(t, "kube-scheduler", o.Validate(), []string{"Binary: empty; give the path hack/controlplane.sh prints"})
	o.Binary = exe + "-missing"
	checkErr(t, "kube-scheduler", o.Validate(), []string{"no such file", "(build it with hack/controlplane.sh)"})
	o.Binary, o.QPS, o.Burst = exe, 200, 300
	checkErr(t, "kube-scheduler", o.Validate(), nil)

	o.Kubeconfig = "/k"
	raw, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	// One profile with no plugins named: kube-scheduler's own defaults.
	want := `apiVersion: kubescheduler.config.k8s.io/v1
clientConnection:
  burst: 300
  kubeconfig: /k
  qps: 200
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
`
	if string(raw) != want {
		t.Errorf("config:\n%s\nwant:\n%s", raw, want)
	}
}

func TestKueueOptions(t *testing.T) {
	exe, _, kubeconfig := files(t)
	valid := KueueOptions{
		Options:    Options{Binary: exe, Kubeconfig: kubeconfig, LogFile: filepath.Join(filepath.Dir(exe), "log")},
		Frameworks: []string{"kubeflow.org/pytorchjob"},
	}
	cases := []struct {
		name  string
		edit  func(*KueueOptions)
		wants []string
	}{
		{name: "valid", edit: func(*KueueOptions) {}},
		{name: "valid, waitForPodsReady", edit: func(o *KueueOptions) { o.WaitForPodsReady = time.Minute }},
		{name: "no frameworks", edit: func(o *KueueOptions) { o.Frameworks = nil },
			wants: []string{"Frameworks: empty; name the job integrations Kueue manages"}},
		{name: "negative waitForPodsReady", edit: func(o *KueueOptions) { o.WaitForPodsReady = -time.Second },
			wants: []string{"WaitForPodsReady: must be 0 (off) or more, got -1s"}},
		{name: "no binary: names the script that builds it", edit: func(o *KueueOptions) { o.Binary = "" },
			wants: []string{"Binary: empty; give the path hack/peer-schedulers.sh kueue prints"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.edit(&o)
			err := o.Validate()
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("valid options refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid options accepted, want %q", tc.wants)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// Kueue's configuration: the integrations asked for, certificates managed
// by Kueue in the given folder, leader election and metrics off, and
// waitForPodsReady only when asked, not blocking admission.
func TestKueueConfig(t *testing.T) {
	o := KueueOptions{Frameworks: []string{"kubeflow.org/pytorchjob", "kubeflow.org/tfjob"}, WaitForPodsReady: time.Minute}
	raw, err := o.config("/certs")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"apiVersion":                               "config.kueue.x-k8s.io/v1beta2",
		"kind":                                     "Configuration",
		"namespace":                                KueueNamespace,
		"webhook.certDir":                          "/certs",
		"webhook.host":                             "127.0.0.1",
		"leaderElection.leaderElect":               false,
		"metrics.bindAddress":                      "0",
		"internalCertManagement.enable":            true,
		"waitForPodsReady.timeout":                 "1m0s",
		"waitForPodsReady.blockAdmission":          false,
		"integrations.frameworks":                  []any{"kubeflow.org/pytorchjob", "kubeflow.org/tfjob"},
		"internalCertManagement.webhookSecretName": kueueWebhookSecret,
	} {
		var v any = got
		for _, k := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if !reflect.DeepEqual(v, want) {
			t.Errorf("%s = %#v, want %#v", path, v, want)
		}
	}
	o.WaitForPodsReady = 0
	raw, err = o.config("/certs")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "waitForPodsReady") {
		t.Errorf("waitForPodsReady set without being asked:\n%s", raw)
	}
}
