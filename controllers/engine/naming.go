package engine

import (
	"fmt"
	"strings"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// ReplicaName is the name of the pod and the service of one replica,
// "<job>-<replica type>-<index>", as upstream names them. Other members
// reach it by this name, so it is part of the wire contract.
func ReplicaName(jobName string, rtype kubeflowv1.ReplicaType, index int) string {
	return fmt.Sprintf("%s-%s-%d", jobName, strings.ToLower(string(rtype)), index)
}

// ReplicaTypeLabelValue is the value of the replica-type label: upstream
// writes the replica type in lower case.
func ReplicaTypeLabelValue(rtype kubeflowv1.ReplicaType) string {
	return strings.ToLower(string(rtype))
}

// ServiceDNSName is the cluster DNS name of a replica's headless service.
func ServiceDNSName(jobName, namespace string, rtype kubeflowv1.ReplicaType, index int) string {
	return fmt.Sprintf("%s.%s.svc", ReplicaName(jobName, rtype, index), namespace)
}
