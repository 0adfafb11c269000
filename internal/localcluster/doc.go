// Package localcluster is a Kubernetes cluster on one machine from the
// binaries the project builds from Go modules: etcd and kube-apiserver
// (through envtest), kube-controller-manager and kwok as subprocesses,
// and simulated CPU and GPU nodes. The demo (internal/demo) and the chaos
// soak (test/soak) both run on it; each keeps its own story, this package
// keeps the parts they share: the processes, their arguments, the node
// shapes and kwok's chaos stage.
package localcluster
