package cmdutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func TestLimitClients(t *testing.T) {
	base := &rest.Config{Host: "https://example.invalid"}
	for _, tc := range []struct {
		name         string
		qps          float64
		burst        int
		sharedBucket bool
	}{
		{name: "a limit: one bucket for every client", qps: 50, burst: 100, sharedBucket: true},
		{name: "no limit", qps: -1, burst: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := LimitClients(base, tc.qps, tc.burst)
			if c.API == base || c.LeaderElection == base {
				t.Fatal("the caller's config was not copied")
			}
			if c.API.QPS != float32(tc.qps) || c.API.Burst != tc.burst || c.LeaderElection.QPS != float32(tc.qps) || c.LeaderElection.Burst != tc.burst {
				t.Errorf("QPS/burst: API %v/%d, leader election %v/%d", c.API.QPS, c.API.Burst, c.LeaderElection.QPS, c.LeaderElection.Burst)
			}
			if c.LeaderElection.RateLimiter != nil {
				t.Error("the leader election config shares a bucket")
			}
			if (c.API.RateLimiter != nil) != tc.sharedBucket {
				t.Fatalf("shared bucket %v, want %v", c.API.RateLimiter != nil, tc.sharedBucket)
			}
			if !tc.sharedBucket {
				return
			}
			// Two REST clients made from API take from the one bucket.
			one, err := rest.RESTClientFor(withCodec(c.API))
			if err != nil {
				t.Fatal(err)
			}
			two, err := rest.RESTClientFor(withCodec(c.API))
			if err != nil {
				t.Fatal(err)
			}
			if one.GetRateLimiter() != two.GetRateLimiter() || one.GetRateLimiter() != c.API.RateLimiter {
				t.Error("two clients of the API config have buckets of their own")
			}
			own, err := rest.RESTClientFor(withCodec(c.LeaderElection))
			if err != nil {
				t.Fatal(err)
			}
			if own.GetRateLimiter() == c.API.RateLimiter {
				t.Error("the leader election client takes from the shared bucket")
			}
		})
	}
}

// withCodec gives a copy of cfg what RESTClientFor needs besides the host.
func withCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}
