package cmdutil

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// BuiltinContentTypes are the wire formats a client of Kubernetes' own
// kinds asks for: protobuf, then JSON for a server that offers only JSON.
const BuiltinContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// Protobuf returns a copy of cfg that speaks protobuf, for a client-go
// clientset of Kubernetes' own kinds (pods, nodes, events, leases).
// client-go's clientsets default to JSON, which costs the API server
// several times the CPU of protobuf to encode and decode: kube-scheduler
// and kube-controller-manager speak protobuf (their
// --kube-api-content-type), and controller-runtime's clients already do
// for these kinds. Never for a client of custom resources: the API server
// serves those in JSON only.
func Protobuf(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = BuiltinContentTypes
	return out
}
