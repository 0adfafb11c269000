// Command kubectl-troupe is the kubectl plugin of Troupe: with it on the
// PATH, `kubectl troupe status` says what became of each job's gang.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/troupe-ml/troupe/internal/kubectltroupe"
)

func main() {
	if err := kubectltroupe.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}).Execute(); err != nil {
		os.Exit(1)
	}
}
