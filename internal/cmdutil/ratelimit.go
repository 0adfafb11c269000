package cmdutil

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// ClientConfigs are a binary's client settings: API is the config every
// client of its manager shares, and LeaderElection the one its lease lock
// uses.
type ClientConfigs struct {
	API, LeaderElection *rest.Config
}

// LimitClients sets the --kube-api-qps and --kube-api-burst of a binary on
// copies of cfg. API carries one token bucket that all the clients made
// from it share: controller-runtime makes a REST client per kind, and
// each would otherwise get a bucket of its own, so the flag would limit
// each kind rather than the binary (a Troupe operator at QPS 50 wrote
// about 150 requests a second). A negative qps sets no client-side limit,
// as client-go reads it. LeaderElection has a bucket of its own, so that
// a burst of work never holds up the lease's renewal; so should any
// client that must not wait behind the binary's work, such as its events
// (copy API and reset RateLimiter).
func LimitClients(cfg *rest.Config, qps float64, burst int) ClientConfigs {
	api := rest.CopyConfig(cfg)
	api.QPS, api.Burst, api.RateLimiter = float32(qps), burst, nil
	le := rest.CopyConfig(api)
	if qps > 0 {
		api.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(api.QPS, burst)
	}
	return ClientConfigs{API: api, LeaderElection: le}
}
