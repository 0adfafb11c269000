// Command scheduler runs Troupe's gang scheduler.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/troupe-ml/troupe/gangscheduler/app"
)

func main() {
	os.Exit(app.Main(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}
