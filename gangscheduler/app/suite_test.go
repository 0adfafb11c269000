package app_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The scheduler binary's suite: app.Run against a real API server, under
// the ServiceAccount and ClusterRole that config/rbac/scheduler holds.
// Nodes are cluster-wide, so the specs run one at a time, each with its
// own nodes, namespace and scheduler, and remove them when done.

var suite = testutil.NewSuite()

func TestApp(t *testing.T) { testutil.RunSuite(t, "gangscheduler/app suite") }
