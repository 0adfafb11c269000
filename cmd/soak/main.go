// Command soak is `make soak`: the chaos soak of test/soak. It runs the
// operator and troupe-scheduler as two replicas each against a local
// cluster, kills their leaders again and again under a seeded random
// churn of jobs and faults, checks Troupe's invariants the whole time,
// and exits 1 on any violation, printing the seed.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/troupe-ml/troupe/test/soak"
)

func main() {
	os.Exit(soak.Main(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}
