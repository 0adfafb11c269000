package peers

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// suite is an API server with the kubeflow.org CRDs only, as bare as far
// as the peers are concerned.
var suite = testutil.NewSuite()

func TestInstall(t *testing.T) { testutil.RunSuite(t, "peers: installing on a bare API server") }
