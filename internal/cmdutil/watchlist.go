package cmdutil

import (
	"fmt"

	clientfeatures "k8s.io/client-go/features"
)

// SetWatchListClient turns client-go's WatchListClient feature on or off
// for the whole process, as KUBE_FEATURE_WatchListClient would, and takes
// precedence over that variable. It must run before the first informer
// starts.
//
// With the feature on (client-go's default since 1.35), an informer starts
// with a streamed watch whose initial events end only once the API
// server's watch cache is provably as fresh as etcd; on a resource nobody
// wrote lately that wait took up to a second in the benchmarks
// (docs/benchmarks.md), and a scheduler's first cycle waits for its
// slowest informer. Off, the informer lists in pages first, as before.
func SetWatchListClient(enabled bool) error {
	gates, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	if !ok {
		return fmt.Errorf("client-go's feature gates were replaced by %T, which cannot set %s", clientfeatures.FeatureGates(), clientfeatures.WatchListClient)
	}
	return gates.Set(clientfeatures.WatchListClient, enabled)
}
