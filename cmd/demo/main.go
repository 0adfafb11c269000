// Command demo is `make demo`: a local cluster with simulated CPU and GPU
// nodes, the operator and troupe-scheduler, and the examples, shown live
// until Ctrl-C. With --until-running it is `make demo-smoke`.
package main

import (
	"os"

	"github.com/troupe-ml/troupe/internal/demo"
)

func main() {
	os.Exit(demo.Main(os.Args[1:], os.Stdout, os.Stderr))
}
