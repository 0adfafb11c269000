// Command operator runs the TFJob, PyTorchJob and MPIJob controllers.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/troupe-ml/troupe/internal/operator"
)

func main() {
	os.Exit(operator.Main(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}
