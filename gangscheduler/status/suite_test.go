package status_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The status writer against a real API server: what it remembers of its
// writes depends on the resourceVersions the API server gives them.

var suite = testutil.NewSuite()

func TestWriter(t *testing.T) { testutil.RunSuite(t, "gangscheduler/status suite") }
