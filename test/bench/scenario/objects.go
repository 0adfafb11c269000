package scenario

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/integrations"
)

// NodeObjects returns the scenario's nodes as a kubelet would register
// them: capacity and allocatable in the status, the pool and GPU model as
// labels, and the GPU nodes tainted. The caller makes them Ready.
func (s Scenario) NodeObjects() []*corev1.Node {
	var nodes []*corev1.Node
	for _, p := range s.Pools {
		for i := range p.Count {
			n := p.node(fmt.Sprintf("%s-%d", p.Name, i))
			if p.Zones > 0 {
				n.Labels[corev1.LabelTopologyZone] = fmt.Sprintf("zone-%d", i%p.Zones)
			}
			if p.RackSize > 0 {
				rack := i / p.RackSize
				n.Labels[RackLabel] = fmt.Sprintf("rack-%d", rack)
				n.Labels[BlockLabel] = fmt.Sprintf("block-%d", rack/max(p.RacksPerBlock, 1))
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// BackgroundNamespace holds the background pods: not the run's, so that
// the harness never counts them as gangs.
const BackgroundNamespace = "bench-background"

// BackgroundPods are the pods of the scenario's background load
// (BusyPerRack): one per busy node, bound to it, asking for all its GPUs,
// for no scheduler the harness runs.
func (s Scenario) BackgroundPods() []*corev1.Pod {
	if len(s.BusyPerRack) == 0 {
		return nil
	}
	var pods []*corev1.Pod
	for _, p := range s.Pools {
		if p.RackSize == 0 {
			continue
		}
		for i := range p.Count {
			rack, pos := i/p.RackSize, i%p.RackSize
			if pos >= s.BusyPerRack[rack%len(s.BusyPerRack)] {
				continue
			}
			node := fmt.Sprintf("%s-%d", p.Name, i)
			gpus := resource.MustParse(strconv.Itoa(p.GPUs))
			pods = append(pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "busy-" + node, Namespace: BackgroundNamespace},
				Spec: corev1.PodSpec{
					NodeName:      node,
					SchedulerName: "bench-background",
					Tolerations:   []corev1.Toleration{{Key: GPUTaint.Key, Operator: corev1.TolerationOpExists, Effect: GPUTaint.Effect}},
					Containers: []corev1.Container{{Name: "main", Image: "registry.example/busy:1", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
						Limits:   corev1.ResourceList{GPU: gpus},
					}}},
				},
			})
		}
	}
	return pods
}

func (p NodePool) node(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(p.CPU),
		corev1.ResourceMemory: resource.MustParse(p.Memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", PoolLabel: PoolCPU,
		}},
	}
	if p.GPUs > 0 {
		res[GPU] = *resource.NewQuantity(int64(p.GPUs), resource.DecimalSI)
		n.Labels[PoolLabel] = PoolGPU
		n.Labels[ModelLabel] = p.Model
		n.Spec.Taints = []corev1.Taint{GPUTaint}
	}
	n.Status = corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()}
	return n
}

// Gang is one gang's objects in a backend's dialect.
type Gang struct {
	// Name is the job's name: the PodGroup's and the pods' prefix.
	Name string
	// Owner stands for the job the operator would own the PodGroup and
	// pods from; Ref is its controller reference. No such object exists:
	// the benchmark measures schedulers, and no garbage collector runs.
	Owner *metav1.ObjectMeta
	Ref   metav1.OwnerReference
	// Spec is the PodGroup's content, as integrations.ComputeGangSpec
	// derives it for the operator.
	Spec integrations.GangSpec
	// Pods are decorated by the dialect, as the operator's engine does.
	Pods []*corev1.Pod
}

// GangName is the name of gang i.
func (s Scenario) GangName(i int) string {
	return fmt.Sprintf("%s-%04d", strings.ToLower(s.Name), i)
}

// Decorator marks a pod for a scheduler: integrations.Backend's
// DecoratePod.
type Decorator interface {
	DecoratePod(pod *corev1.Pod, group, role string)
}

// Gang returns gang i in namespace ns, in dialect's words: the same gang
// for every scheduler, marked for each as the operator would mark it.
func (s Scenario) Gang(i int, ns string, dialect Decorator) Gang {
	name := s.GangName(i)
	owner := &metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("bench-" + ns + "-" + name)}
	g := Gang{
		Name:  name,
		Owner: owner,
		Ref: metav1.OwnerReference{
			APIVersion: kubeflowv1.GroupVersion.String(), Kind: s.Kind, Name: name, UID: owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		},
	}
	var replicas []integrations.Replica
	for ri, r := range s.Roles {
		tmpl := r.template()
		r.placementRules(tmpl, name)
		r.Replicas = s.ReplicasOf(ri, i)
		replicas = append(replicas, integrations.Replica{Role: integrations.RoleOf(string(r.Type)), Replicas: int32(r.Replicas), Template: tmpl})
		for idx := range r.Replicas {
			g.Pods = append(g.Pods, s.pod(g, r, tmpl, idx, ri == 0, dialect))
		}
	}
	policy := integrations.SchedulingPolicy{Topology: s.Topology, TopologyRoles: s.TopologyRoles}
	g.Spec = integrations.ComputeGangSpec(replicas, policy)
	return g
}

// pod builds one replica's pod as the engine does (controllers/engine
// newPod): upstream's name (<job>-<replica type>-<index>) and labels, the
// controller reference, and the backend's marks. The harness does not
// import the engine, so that it builds while the controllers change.
func (s Scenario) pod(g Gang, r Role, tmpl *corev1.PodTemplateSpec, idx int, master bool, dialect Decorator) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s-%d", g.Name, integrations.RoleOf(string(r.Type)), idx),
			Namespace: g.Owner.Namespace,
			Labels: map[string]string{
				kubeflowv1.OperatorNameLabel: strings.ToLower(s.Kind) + "-controller",
				kubeflowv1.JobNameLabel:      g.Name,
				kubeflowv1.ReplicaTypeLabel:  integrations.RoleOf(string(r.Type)),
				kubeflowv1.ReplicaIndexLabel: strconv.Itoa(idx),
			},
			OwnerReferences: []metav1.OwnerReference{g.Ref},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if master {
		pod.Labels[kubeflowv1.JobRoleLabel] = "master"
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	dialect.DecoratePod(pod, g.Name, integrations.RoleOf(string(r.Type)))
	return pod
}

func (r Role) template() *corev1.PodTemplateSpec {
	c := corev1.Container{
		Name:  "main",
		Image: "registry.example/train:1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(r.CPU),
			corev1.ResourceMemory: resource.MustParse(r.Memory),
		}},
	}
	if r.GPUs > 0 {
		c.Resources.Limits = corev1.ResourceList{GPU: *resource.NewQuantity(int64(r.GPUs), resource.DecimalSI)}
	}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	if len(r.NodeSelector) > 0 {
		tmpl.Spec.NodeSelector = maps.Clone(r.NodeSelector)
	}
	if r.TolerateGPU {
		tmpl.Spec.Tolerations = []corev1.Toleration{{Key: GPUTaint.Key, Operator: corev1.TolerationOpExists, Effect: GPUTaint.Effect}}
	}
	return tmpl
}

// placementRules adds the role's rules toward its gang's other pods of
// the role to tmpl: the selector names the gang (job-name) and the role
// (replica-type), as a user's manifest would.
func (r Role) placementRules(tmpl *corev1.PodTemplateSpec, gang string) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{
		kubeflowv1.JobNameLabel: gang, kubeflowv1.ReplicaTypeLabel: integrations.RoleOf(string(r.Type)),
	}}
	if r.OnePerNode {
		tmpl.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: sel}},
		}}
	}
	if r.SpreadZones {
		tmpl.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
		}}
	}
}

// IsMaster reports whether a pod is the first role's (master or
// launcher), by the label the engine puts on it.
func IsMaster(pod *corev1.Pod) bool { return pod.Labels[kubeflowv1.JobRoleLabel] == "master" }

// GangOf is the name of the gang a pod belongs to, by upstream's job-name
// label (every dialect keeps it).
func GangOf(pod *corev1.Pod) string { return pod.Labels[kubeflowv1.JobNameLabel] }

// GPURequest is what a pod asks of GPUs (a limit; the API server copies
// it to the request).
func GPURequest(pod *corev1.Pod) int64 {
	var n int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[GPU]; ok {
			n += q.Value()
		} else if q, ok := c.Resources.Requests[GPU]; ok {
			n += q.Value()
		}
	}
	return n
}
