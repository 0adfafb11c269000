//go:build tools

// Package kueue pins the Kueue manager built by hack/peer-schedulers.sh.
package kueue

import _ "sigs.k8s.io/kueue/cmd/kueue"
