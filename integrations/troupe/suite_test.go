package troupe_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestTroupeBackend(t *testing.T) { testutil.RunSuite(t, "troupe gang backend suite") }
