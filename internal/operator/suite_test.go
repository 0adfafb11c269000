package operator_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestOperator(t *testing.T) { testutil.RunSuite(t, "Operator wiring suite") }
