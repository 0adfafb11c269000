package conformance_test

import (
	"context"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// podGroup is the part of any backend's PodGroup the scenarios check.
type podGroup struct {
	MinMember              int32
	MinTaskMember          map[string]int32
	MinResources           corev1.ResourceList
	Queue                  string
	PriorityClassName      string
	ScheduleTimeoutSeconds *int32
}

// fields are the optional PodGroup fields a backend's API has.
type fields struct{ minTaskMember, minResources, queue, priority, timeout bool }

// backend is one gang backend as the scenarios drive it.
type backend struct {
	// name is the --gang-scheduler-name (and annotation) value.
	name string
	// schedulerName is the spec.schedulerName its pods get.
	schedulerName string
	has           fields
	newPodGroup   func() client.Object
	read          func(client.Object) podGroup
	// groupOf returns the group a pod is marked as a member of.
	groupOf func(*corev1.Pod) string
	// admit, for backends that admit a gang before its pods exist, does
	// to the PodGroup what the scheduler does on admission.
	admit func(pg client.Object)
	// unadmit does what the scheduler does to an admitted PodGroup that
	// lost a member.
	unadmit func(pg client.Object)
	// unschedulable writes, where the backend's scheduler writes it, that
	// the gang's workers fit no node because of msg, and returns what the
	// job should show.
	unschedulable func(ctx context.Context, g Gomega, pg client.Object, workers []corev1.Pod, msg string) string
	// topology says how the backend keeps a topology policy; nil: it
	// keeps none.
	topology *topologyKeeper
}

// topologyKeeper is how a backend keeps a topology policy.
type topologyKeeper struct {
	// flags make the operator keep rules with the backend.
	flags []string
	// unkeptWithoutFlags is what the backend says it cannot keep of a
	// rack Pack without flags.
	unkeptWithoutFlags string
	// setup makes what the backend needs of the cluster (a Topology).
	setup func(ctx context.Context)
	// placed checks that the PodGroup keeps a rack Pack, required or not,
	// over role alone.
	placed func(g Gomega, pg client.Object, role string, required bool)
	// unkept is a policy the backend cannot keep even so; "" none.
	unkept schedulingv1alpha1.TopologyPolicyType
}

// rackTopology is the default Topology: racks of hosts.
func rackTopology(ctx context.Context) {
	t := testutil.MakeTopology(schedulingv1alpha1.DefaultTopologyName).Level("rack", "example.com/rack").Level("host", corev1.LabelHostname).Obj()
	ExpectWithOffset(1, client.IgnoreAlreadyExists(suite.Client.Create(ctx, t))).To(Succeed())
}

// writeCondition sets c among a PodGroup's status conditions, as its
// scheduler does, and returns c's message: what the job should show.
func writeCondition(ctx context.Context, g Gomega, pg client.Object, conditions *[]metav1.Condition, c metav1.Condition) string {
	meta.SetStatusCondition(conditions, c)
	g.ExpectWithOffset(1, suite.Client.Status().Update(ctx, pg)).To(Succeed())
	return c.Message
}

func groupAnnotation(p *corev1.Pod) string { return p.Annotations[integrations.GroupNameAnnotation] }

var backends = []backend{
	{
		name:          "troupe",
		schedulerName: "troupe-scheduler",
		has:           fields{true, true, true, true, true},
		newPodGroup:   func() client.Object { return &schedulingv1alpha1.PodGroup{} },
		read: func(o client.Object) podGroup {
			s := o.(*schedulingv1alpha1.PodGroup).Spec
			return podGroup{s.MinMember, s.MinTaskMember, s.MinResources, s.Queue, s.PriorityClassName, s.ScheduleTimeoutSeconds}
		},
		groupOf: groupAnnotation,
		// troupe-scheduler keeps an Unschedulable condition on the PodGroup.
		unschedulable: func(ctx context.Context, g Gomega, o client.Object, _ []corev1.Pod, msg string) string {
			pg := o.(*schedulingv1alpha1.PodGroup)
			return writeCondition(ctx, g, pg, &pg.Status.Conditions, metav1.Condition{
				Type: schedulingv1alpha1.PodGroupUnschedulable, Status: metav1.ConditionTrue,
				Reason: schedulingv1alpha1.PodGroupReasonNotEnoughResources, Message: msg,
			})
		},
		topology: &topologyKeeper{
			placed: func(g Gomega, o client.Object, role string, required bool) {
				got := o.(*schedulingv1alpha1.PodGroup).Spec.Topology
				g.Expect(got).NotTo(BeNil())
				g.Expect(got.Roles).To(Equal([]string{role}), "the CPU-only chief is not forced into the rack")
				g.Expect(got.Levels).To(ConsistOf(And(HaveField("Level", "rack"), HaveField("Required", required))))
			},
		},
	},
	{
		name:          "volcano",
		schedulerName: "volcano",
		has:           fields{true, true, true, true, false},
		newPodGroup:   func() client.Object { return &volcanov1beta1.PodGroup{} },
		read: func(o client.Object) podGroup {
			s := o.(*volcanov1beta1.PodGroup).Spec
			pg := podGroup{MinMember: s.MinMember, MinTaskMember: s.MinTaskMember, Queue: s.Queue, PriorityClassName: s.PriorityClassName}
			if s.MinResources != nil {
				pg.MinResources = *s.MinResources
			}
			return pg
		},
		groupOf: groupAnnotation,
		// Volcano's enqueue action moves an admitted PodGroup to Inqueue.
		// Its PodGroup has no status subresource: the scheduler updates
		// the whole object.
		admit: func(o client.Object) { o.(*volcanov1beta1.PodGroup).Status.Phase = volcanov1beta1.PodGroupInqueue },
		// Fewer than minMember scheduled members send it back to Pending.
		unadmit: func(o client.Object) { o.(*volcanov1beta1.PodGroup).Status.Phase = volcanov1beta1.PodGroupPending },
		// Volcano's gang plugin adds an Unschedulable condition at the end
		// of a session that could not place the gang.
		unschedulable: func(ctx context.Context, g Gomega, o client.Object, _ []corev1.Pod, msg string) string {
			pg := o.(*volcanov1beta1.PodGroup)
			pg.Status.Conditions = append(pg.Status.Conditions, volcanov1beta1.PodGroupCondition{
				Type: volcanov1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue,
				TransitionID: "session-1", LastTransitionTime: metav1.Now(),
				Reason: volcanov1beta1.NotEnoughResourcesReason, Message: msg,
			})
			g.Expect(suite.Client.Update(ctx, pg)).To(Succeed())
			return msg
		},
		// Volcano keeps Pack rules of the Topology the operator generates
		// HyperNodes from (rack is tier 1), and no Spread.
		topology: &topologyKeeper{
			flags:              []string{"--volcano-hypernode-topology=" + schedulingv1alpha1.DefaultTopologyName},
			unkeptWithoutFlags: "rule (the operator generates no Volcano HyperNodes: --volcano-hypernode-topology is not set)",
			setup:              rackTopology,
			placed: func(g Gomega, o client.Object, role string, required bool) {
				spec := o.(*volcanov1beta1.PodGroup).Spec
				g.Expect(spec.NetworkTopology).To(BeNil(), "the job's networkTopology would pull the CPU-only chief into the rack")
				want := volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode}
				if required {
					want = volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.HardNetworkTopologyMode, HighestTierAllowed: ptr.To(1)}
				}
				g.Expect(spec.SubGroupPolicy).To(ConsistOf(And(
					HaveField("NetworkTopology", HaveValue(Equal(want))),
					HaveField("SubGroupSize", HaveValue(Equal(int32(2)))),
					HaveField("LabelSelector", HaveValue(Equal(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: kubeflowv1.ReplicaTypeLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{role},
					}}}))),
					HaveField("MatchLabelKeys", Equal([]string{kubeflowv1.JobNameLabel})),
				)))
			},
			unkept: schedulingv1alpha1.TopologySpread,
		},
	},
	{
		name:          "scheduler-plugins",
		schedulerName: "scheduler-plugins-scheduler",
		has:           fields{false, true, false, false, true},
		newPodGroup:   func() client.Object { return &spv1alpha1.PodGroup{} },
		read: func(o client.Object) podGroup {
			s := o.(*spv1alpha1.PodGroup).Spec
			return podGroup{MinMember: s.MinMember, MinResources: s.MinResources, ScheduleTimeoutSeconds: s.ScheduleTimeoutSeconds}
		},
		groupOf: func(p *corev1.Pod) string { return p.Labels[spv1alpha1.PodGroupLabel] },
		// kube-scheduler (Coscheduling is one of its plugins) writes its
		// verdict on each pod; the job shows it per role.
		unschedulable: func(ctx context.Context, g Gomega, _ client.Object, workers []corev1.Pod, msg string) string {
			for i := range workers {
				g.Expect(testutil.MarkUnschedulable(ctx, suite.Client, &workers[i], msg)).To(Succeed())
			}
			return "worker: " + msg
		},
	},
	{
		name:          kubenative.Name,
		schedulerName: corev1.DefaultSchedulerName,
		// One minCount for the gang; a priority class, set at creation.
		has:         fields{priority: true},
		newPodGroup: func() client.Object { return &schedulingv1beta1.PodGroup{} },
		read: func(o client.Object) podGroup {
			s := o.(*schedulingv1beta1.PodGroup).Spec
			ExpectWithOffset(1, s.SchedulingPolicy.Gang).NotTo(BeNil(), "a gang policy")
			ExpectWithOffset(1, s.WorkloadRef).To(HaveValue(Equal(schedulingv1beta1.WorkloadReference{
				WorkloadName: o.GetName(), TemplateName: kubenative.TemplateName,
			})))
			return podGroup{MinMember: s.SchedulingPolicy.Gang.MinCount, PriorityClassName: s.PriorityClassName}
		},
		groupOf: func(p *corev1.Pod) string {
			return ptr.Deref(ptr.Deref(p.Spec.SchedulingGroup, corev1.PodSchedulingGroup{}).PodGroupName, "")
		},
		// kube-scheduler's GangScheduling writes its verdict on the
		// PodGroup's PodGroupInitiallyScheduled condition.
		unschedulable: func(ctx context.Context, g Gomega, o client.Object, _ []corev1.Pod, msg string) string {
			pg := o.(*schedulingv1beta1.PodGroup)
			return writeCondition(ctx, g, pg, &pg.Status.Conditions, metav1.Condition{
				Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
				Reason: schedulingv1beta1.PodGroupReasonUnschedulable, Message: msg,
			})
		},
	},
}
