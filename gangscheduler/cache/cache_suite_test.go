package cache_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestCache(t *testing.T) { testutil.RunSuite(t, "gangscheduler/cache suite") }
