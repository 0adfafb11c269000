package operatorbench

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/troupe-ml/troupe/internal/peers"
)

// The operators under test.
const (
	OperatorTroupe   = "troupe"
	OperatorTraining = "training-operator"
)

// The gang backends, each with its scheduler.
const (
	BackendTroupe       = "troupe-scheduler"
	BackendVolcano      = "volcano"
	BackendCoscheduling = "coscheduling"
)

// Combination is an operator with one of its gang backends and that
// backend's scheduler, on a cluster of its own.
type Combination struct {
	Name     string
	Operator string
	Backend  string
}

// Combinations are what the benchmark can run, in the order they run:
// Troupe's operator with each backend it shares with training-operator
// and with its own scheduler, and training-operator with both of its
// backends. Troupe's operator with Coscheduling is not among them: the
// issue's comparisons do not need it, and it would cost a fifth cluster
// per repeat.
var Combinations = []Combination{
	{Name: "troupe+troupe-scheduler", Operator: OperatorTroupe, Backend: BackendTroupe},
	{Name: "troupe+volcano", Operator: OperatorTroupe, Backend: BackendVolcano},
	{Name: "training-operator+volcano", Operator: OperatorTraining, Backend: BackendVolcano},
	{Name: "training-operator+coscheduling", Operator: OperatorTraining, Backend: BackendCoscheduling},
}

// CombinationNames are the names of Combinations.
func CombinationNames() []string {
	out := make([]string, len(Combinations))
	for i, c := range Combinations {
		out[i] = c.Name
	}
	return out
}

func combinationByName(name string) (Combination, bool) {
	for _, c := range Combinations {
		if c.Name == name {
			return c, true
		}
	}
	return Combination{}, false
}

// operatorBinary is the combination's operator binary and the flag that
// names it.
func (c Combination) operatorBinary(o *Options) (flag, path string) {
	if c.Operator == OperatorTroupe {
		return "--troupe-operator", o.TroupeOperator
	}
	return "--training-operator", o.TrainingOperator
}

// binaries are the files the combination runs, by the flag that names
// them.
func (c Combination) binaries(o *Options) map[string]string {
	flag, path := c.operatorBinary(o)
	out := map[string]string{flag: path}
	switch c.Backend {
	case BackendTroupe:
		out["--troupe-scheduler"] = o.TroupeScheduler
	case BackendVolcano:
		out["--volcano-scheduler"] = o.VolcanoScheduler
	case BackendCoscheduling:
		out["--coscheduling-scheduler"] = o.CoschedulingScheduler
	}
	return out
}

// gangSchedulerName is the operator's --gang-scheduler-name for the
// backend. For Coscheduling it is the name of the scheduler's profile:
// training-operator takes any name but "volcano" as scheduler-plugins and
// gives it to the pods as their schedulerName.
func (c Combination) gangSchedulerName() string {
	switch c.Backend {
	case BackendTroupe:
		return "troupe"
	case BackendVolcano:
		return "volcano"
	default:
		return peers.CoschedulingSchedulerName
	}
}

// podGroups is the resource of the backend's PodGroups.
func (c Combination) podGroups() schema.GroupVersionResource {
	switch c.Backend {
	case BackendTroupe:
		return schema.GroupVersionResource{Group: "scheduling.troupe.dev", Version: "v1alpha1", Resource: "podgroups"}
	case BackendVolcano:
		return schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	default:
		return schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	}
}
