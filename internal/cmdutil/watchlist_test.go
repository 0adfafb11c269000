package cmdutil

import (
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

func TestSetWatchListClient(t *testing.T) {
	t.Cleanup(func() { _ = SetWatchListClient(true) })
	for _, enabled := range []bool{false, true, false} {
		if err := SetWatchListClient(enabled); err != nil {
			t.Fatal(err)
		}
		if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != enabled {
			t.Errorf("after SetWatchListClient(%v), client-go's WatchListClient is %v", enabled, got)
		}
	}
}
