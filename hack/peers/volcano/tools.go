//go:build tools

// Package volcano pins the Volcano scheduler command built by
// hack/peer-schedulers.sh.
package volcano

import _ "volcano.sh/volcano/cmd/scheduler"
