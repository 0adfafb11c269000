package queues_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestQueues(t *testing.T) { testutil.RunSuite(t, "gangscheduler/queues suite") }
