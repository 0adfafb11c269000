package scheduler_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The cycle's commit against a real API server: the scheduler assembled
// from its parts (cache, binder, status writer) with actions the specs
// choose, one RunOnce at a time. Nodes are cluster-wide, so the specs run
// one at a time and remove theirs when done.

var suite = testutil.NewSuite()

func TestScheduler(t *testing.T) { testutil.RunSuite(t, "gangscheduler/scheduler suite") }
