package kubectltroupe_test

import (
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

var suite = testutil.NewSuite()

func TestKubectlTroupe(t *testing.T) { testutil.RunSuite(t, "kubectl-troupe suite") }
