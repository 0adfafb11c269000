// Command bench is `make bench`: it measures Troupe's scheduler, the peer
// gang schedulers and a logic-free binder on the same fresh API server,
// scenario by scenario (see test/bench and docs/benchmarks.md).
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/troupe-ml/troupe/test/bench"
)

func main() {
	os.Exit(bench.Main(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}
