//go:build tools

// Package coscheduling pins the scheduler command built by
// hack/peer-schedulers.sh: kube-scheduler with scheduler-plugins' plugins.
package coscheduling

import _ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
