//go:build tools

// Package trainingoperator pins the training-operator manager built by
// hack/peer-schedulers.sh.
package trainingoperator

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
