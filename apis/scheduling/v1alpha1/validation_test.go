package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// ---------------------------------------------------------------------------
// Builders: small unstructured objects, so that a test can send exactly the
// JSON a user would (negative numbers, unknown enum values, missing fields)
// without the Go types getting in the way.

// obj is a JSON object as unstructured holds it.
type obj = map[string]interface{}

// mod changes an object's JSON.
type mod func(obj)

// set sets the value at a dotted path ("spec.minMember"), creating the
// objects on the way.
func set(path string, v interface{}) mod {
	return func(o obj) {
		keys := strings.Split(path, ".")
		m := o
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(obj)
			if !ok {
				next = obj{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = jsonValue(v)
	}
}

// del removes the value at a dotted path.
func del(path string) mod {
	return func(o obj) {
		unstructured.RemoveNestedField(o, strings.Split(path, ".")...)
	}
}

// jsonValue turns Go ints into the int64 that unstructured holds, also
// inside maps, so that DeepCopy accepts the object.
func jsonValue(v interface{}) interface{} {
	switch x := v.(type) {
	case int:
		return int64(x)
	case obj:
		out := obj{}
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	default:
		return v
	}
}

func newObject(kind string, spec obj, mods ...mod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{
		"apiVersion": "scheduling.troupe.dev/v1alpha1",
		"kind":       kind,
		"metadata":   obj{"generateName": strings.ToLower(kind) + "-"},
	}}
	if spec != nil {
		u.Object["spec"] = jsonValue(spec)
	}
	for _, m := range mods {
		m(u.Object)
	}
	return u
}

// podGroup is a valid PodGroup (a gang of two) changed by mods.
func podGroup(mods ...mod) *unstructured.Unstructured {
	return newObject("PodGroup", obj{"minMember": 2}, mods...)
}

// topology is a valid Topology of blocks, racks and hosts, changed by mods.
func topology(mods ...mod) *unstructured.Unstructured {
	return newObject("Topology", obj{"levels": []interface{}{
		obj{"name": "block", "nodeLabel": "example.com/block"},
		obj{"name": "rack", "nodeLabel": "example.com/rack"},
		obj{"name": "host", "nodeLabel": "kubernetes.io/hostname"},
	}}, mods...)
}

// level is a topology policy's rule for one level.
func level(name string, fields obj) obj {
	out := obj{"level": name}
	for k, v := range fields {
		out[k] = jsonValue(v)
	}
	return out
}

// withTopology gives a PodGroup a topology policy of these rules.
func withTopology(levels ...obj) mod {
	list := make([]interface{}, len(levels))
	for i, l := range levels {
		list[i] = l
	}
	return set("spec.topology", obj{"levels": list, "roles": []interface{}{"worker"}})
}

// queue is a valid Queue, with every field the defaults would fill in
// left out, changed by mods.
func queue(mods ...mod) *unstructured.Unstructured {
	return newObject("Queue", obj{}, mods...)
}

// ---------------------------------------------------------------------------
// Helpers that talk to the API server.

// create sends a copy of u to the API server (PodGroups into the suite's
// namespace) and returns the copy, now carrying the server's answer.
func create(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c := u.DeepCopy()
	if c.GetKind() == "PodGroup" {
		c.SetNamespace(ns)
	}
	return c, suite.Client.Create(ctx, c)
}

// get reads an object back from the API server.
func get(ctx context.Context, like *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(like.GroupVersionKind())
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(like), u)).To(Succeed())
	return u
}

// expectInvalid checks that err is the API server's Invalid answer and that
// its message carries every wanted text.
func expectInvalid(err error, kind string, want ...string) {
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid %s", kind)
	GinkgoWriter.Printf("API server: %v\n", err)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid (422) error, got %T: %v", err, err)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
	// A CEL rule that fails to evaluate (say, quantity() on a string the
	// pattern already rejects) would add a confusing second error.
	Expect(err.Error()).NotTo(ContainSubstring("evaluation error"))
	Expect(err.Error()).NotTo(ContainSubstring("compilation failed"))
}

// crdVersions returns the versions a CRD serves, read from the API server.
func crdVersions(ctx context.Context, name string) []interface{} {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	Expect(err).NotTo(HaveOccurred())
	return versions
}

// roles returns n distinct minTaskMember entries of value 0.
func roles(n int) obj {
	out := obj{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("role-%d", i)] = int64(0)
	}
	return out
}

// ---------------------------------------------------------------------------

var _ = Describe("CRDs", func() {
	DescribeTable("serve exactly Troupe's one version, with status subresource, short name and columns",
		func(ctx context.Context, crdName, scope, shortName string, columns []string) {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			Expect(suite.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())

			gotScope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
			Expect(gotScope).To(Equal(scope))
			shortNames, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
			Expect(shortNames).To(Equal([]string{shortName}))

			versions := crdVersions(ctx, crdName)
			Expect(versions).To(HaveLen(1), "controller-gen emitted more than one version of %s", crdName)
			v := versions[0].(obj)
			Expect(v["name"]).To(Equal("v1alpha1"))
			Expect(v["served"]).To(BeTrue())
			Expect(v["storage"]).To(BeTrue())
			_, hasStatus, _ := unstructured.NestedMap(v, "subresources", "status")
			Expect(hasStatus).To(BeTrue(), "%s has no status subresource", crdName)

			var names []string
			cols, _, _ := unstructured.NestedSlice(v, "additionalPrinterColumns")
			for _, c := range cols {
				names = append(names, c.(obj)["name"].(string))
			}
			Expect(names).To(Equal(columns))
		},
		Entry("PodGroup", "podgroups.scheduling.troupe.dev", "Namespaced", "tpg",
			[]string{"Phase", "MinMember", "Running", "Queue", "Age"}),
		Entry("Queue", "queues.scheduling.troupe.dev", "Cluster", "tq",
			[]string{"Weight", "State", "Age"}),
	)
})

var _ = Describe("PodGroup and Queue validation", func() {

	It("accepts the base objects the rejection cases are built from", func(ctx context.Context) {
		// Each rejection case changes one thing in one of these; were a
		// base invalid, a case could pass for the wrong reason.
		for _, u := range []*unstructured.Unstructured{podGroup(), queue(), topology(),
			podGroup(withTopology(level("rack", obj{"policy": "Partition", "partitions": 2, "required": true}),
				level("host", obj{"range": obj{"min": 2, "max": 4}, "factor": 2})))} {
			_, err := create(ctx, u)
			Expect(err).NotTo(HaveOccurred(), "base %s", u.GetKind())
		}
	})

	const (
		minMember     = "spec.minMember in body should be greater than or equal to 1"
		taskNegative  = "minTaskMember: every entry must be greater than or equal to 0"
		taskSum       = "minTaskMember: the entries must not add up to more than minMember"
		minResources  = "minResources: every quantity must be greater than or equal to 0"
		capability    = "capability: every quantity must be greater than or equal to 0"
		timeout       = "spec.scheduleTimeoutSeconds in body should be greater than or equal to 0"
		weight        = "spec.weight in body should be greater than or equal to 1"
		dnsSubdomain  = "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?"
		quantityShape = "should match '^(\\+|-)?(([0-9]+"
	)

	DescribeTable("rejects an invalid object with a message that names the field",
		func(ctx context.Context, u *unstructured.Unstructured, want ...string) {
			_, err := create(ctx, u)
			expectInvalid(err, u.GetKind(), want...)
		},

		// PodGroup: the gang's size.
		Entry("PodGroup: minMember 0", podGroup(set("spec.minMember", 0)), "spec.minMember", minMember),
		Entry("PodGroup: negative minMember", podGroup(set("spec.minMember", -3)), "spec.minMember", minMember),
		Entry("PodGroup: no minMember", podGroup(del("spec.minMember")), "spec.minMember", "Required value"),
		Entry("PodGroup: no spec", podGroup(del("spec")), "spec", "Required value"),

		// PodGroup: per-role minimums.
		Entry("PodGroup: negative minTaskMember entry",
			podGroup(set("spec.minTaskMember", obj{"launcher": 1, "worker": -1})),
			"spec.minTaskMember", taskNegative),
		Entry("PodGroup: minTaskMember adding up to more than minMember",
			podGroup(set("spec.minMember", 3), set("spec.minTaskMember", obj{"launcher": 1, "worker": 3})),
			"spec.minTaskMember", taskSum),
		Entry("PodGroup: one minTaskMember entry larger than minMember",
			podGroup(set("spec.minTaskMember", obj{"worker": 3})),
			"spec.minTaskMember", taskSum),
		Entry("PodGroup: 17 roles in minTaskMember",
			podGroup(set("spec.minTaskMember", roles(17))),
			"spec.minTaskMember", "must have at most 16 items"),

		// PodGroup: resources.
		Entry("PodGroup: negative minResources quantity (string)",
			podGroup(set("spec.minResources", obj{"cpu": "2", "memory": "-1Gi"})),
			"spec.minResources", minResources),
		Entry("PodGroup: negative minResources quantity (milli)",
			podGroup(set("spec.minResources", obj{"cpu": "-500m"})),
			"spec.minResources", minResources),
		Entry("PodGroup: negative minResources quantity (JSON integer)",
			podGroup(set("spec.minResources", obj{"nvidia.com/gpu": -1})),
			"spec.minResources", minResources),
		Entry(`PodGroup: zero written with a minus sign ("-0"), as the package documentation says`,
			podGroup(set("spec.minResources", obj{"cpu": "-0"})),
			"spec.minResources", minResources),
		Entry("PodGroup: minResources value that is not a quantity",
			podGroup(set("spec.minResources", obj{"cpu": "lots"})),
			"spec.minResources.cpu", quantityShape),

		// PodGroup: queue, priority, timeout.
		Entry("PodGroup: negative scheduleTimeoutSeconds",
			podGroup(set("spec.scheduleTimeoutSeconds", -1)), "spec.scheduleTimeoutSeconds", timeout),
		Entry("PodGroup: queue that is not a Queue name",
			podGroup(set("spec.queue", "Team_A")), "spec.queue", dnsSubdomain),
		Entry("PodGroup: priorityClassName that is not a PriorityClass name",
			podGroup(set("spec.priorityClassName", "High Priority")), "spec.priorityClassName", dnsSubdomain),

		// PodGroup: topology policy.
		Entry("PodGroup: a topology policy without levels",
			podGroup(set("spec.topology", obj{"levels": []interface{}{}})), "spec.topology.levels", "should have at least 1 items"),
		Entry("PodGroup: partitions without policy Partition",
			podGroup(withTopology(level("rack", obj{"partitions": 2}))), "spec.topology.levels[0].partitions", "required with policy Partition, and only with it"),
		Entry("PodGroup: policy Partition without partitions",
			podGroup(withTopology(level("rack", obj{"policy": "Partition"}))), "spec.topology.levels[0].partitions", "required with policy Partition"),
		Entry("PodGroup: one partition",
			podGroup(withTopology(level("rack", obj{"policy": "Partition", "partitions": 1}))), "spec.topology.levels[0].partitions", "greater than or equal to 2"),
		Entry("PodGroup: a range whose max is below its min",
			podGroup(withTopology(level("host", obj{"range": obj{"min": 4, "max": 2}}))), "spec.topology.levels[0].range.max", "must not be smaller than range.min"),
		Entry("PodGroup: factor 0",
			podGroup(withTopology(level("host", obj{"factor": 0}))), "spec.topology.levels[0].factor", "greater than or equal to 1"),
		Entry("PodGroup: unknown policy",
			podGroup(withTopology(level("rack", obj{"policy": "Scatter"}))), "spec.topology.levels[0].policy", `Unsupported value: "Scatter"`, `"Pack", "Spread", "Partition"`),
		Entry("PodGroup: a level twice",
			podGroup(withTopology(level("rack", obj{}), level("rack", obj{"policy": "Spread"}))), "spec.topology.levels[1]", "Duplicate value"),

		// Topology.
		Entry("Topology: no levels", topology(set("spec.levels", []interface{}{})), "spec.levels", "should have at least 1 items"),
		Entry("Topology: no spec", topology(del("spec")), "spec", "Required value"),
		Entry("Topology: two levels of one name",
			topology(set("spec.levels", []interface{}{obj{"name": "rack", "nodeLabel": "a.example/rack"}, obj{"name": "rack", "nodeLabel": "b.example/rack"}})),
			"spec.levels[1]", "Duplicate value"),
		Entry("Topology: two levels on one node label",
			topology(set("spec.levels", []interface{}{obj{"name": "rack", "nodeLabel": "example.com/rack"}, obj{"name": "row", "nodeLabel": "example.com/rack"}})),
			"spec.levels", "each nodeLabel may name one level only"),
		Entry("Topology: a level name that is no DNS label",
			topology(set("spec.levels", []interface{}{obj{"name": "Rack_1", "nodeLabel": "example.com/rack"}})),
			"spec.levels[0].name", "should match"),
		Entry("Topology: a node label that is no label key",
			topology(set("spec.levels", []interface{}{obj{"name": "rack", "nodeLabel": "example.com/rack/x"}})),
			"spec.levels[0].nodeLabel", "should match"),

		// Queue.
		Entry("Queue: weight 0", queue(set("spec.weight", 0)), "spec.weight", weight),
		Entry("Queue: negative weight", queue(set("spec.weight", -1)), "spec.weight", weight),
		Entry("Queue: negative capability quantity",
			queue(set("spec.capability", obj{"cpu": "64", "nvidia.com/gpu": "-8"})),
			"spec.capability", capability),
		Entry("Queue: negative capability quantity (JSON integer)",
			queue(set("spec.capability", obj{"pods": -1})),
			"spec.capability", capability),
		Entry("Queue: unknown state",
			queue(set("spec.state", "Draining")),
			"spec.state", `Unsupported value: "Draining"`, `"Open", "Closed"`),
	)

	DescribeTable("rejects an invalid status written through the status subresource",
		func(ctx context.Context, base *unstructured.Unstructured, status obj, want ...string) {
			u, err := create(ctx, base)
			Expect(err).NotTo(HaveOccurred())

			// A valid status first: shows that the rejection below is
			// the bad field's and not, say, a missing subresource.
			valid := obj{"phase": "Pending", "running": int64(0)}
			if base.GetKind() == "Queue" {
				valid = obj{"state": "Open", "pending": int64(1)}
			}
			u = get(ctx, u)
			u.Object["status"] = valid
			Expect(suite.Client.Status().Update(ctx, u)).To(Succeed())
			Expect(get(ctx, u).Object["status"]).To(Equal(valid))

			u = get(ctx, u)
			u.Object["status"] = jsonValue(status)
			err = suite.Client.Status().Update(ctx, u)
			expectInvalid(err, base.GetKind(), want...)

			Expect(get(ctx, u).Object["status"]).To(Equal(valid), "the invalid status was stored")
		},
		Entry("PodGroup: unknown phase", podGroup(), obj{"phase": "Scheduling"},
			"status.phase", `Unsupported value: "Scheduling"`,
			`"Pending", "Inqueue", "Running", "Unknown", "Failed", "Finished"`),
		Entry("PodGroup: negative running", podGroup(), obj{"running": -1},
			"status.running", "should be greater than or equal to 0"),
		Entry("PodGroup: negative admitted", podGroup(), obj{"admitted": -1},
			"status.admitted", "should be greater than or equal to 0"),
		Entry("PodGroup: negative succeeded", podGroup(), obj{"succeeded": -1},
			"status.succeeded", "should be greater than or equal to 0"),
		Entry("PodGroup: negative failed", podGroup(), obj{"failed": -1},
			"status.failed", "should be greater than or equal to 0"),
		Entry("PodGroup: two conditions of the same type", podGroup(), obj{"conditions": []interface{}{
			obj{"type": "Scheduled", "status": "True", "reason": "GangBound", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			obj{"type": "Scheduled", "status": "False", "reason": "Waiting", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}}, "status.conditions[1]", "Duplicate value"),
		Entry("PodGroup: scheduleStartTime that is not a time", podGroup(), obj{"scheduleStartTime": "yesterday"},
			"status.scheduleStartTime"),
		Entry("Queue: unknown state", queue(), obj{"state": "Closing"},
			"status.state", `Unsupported value: "Closing"`, `"Open", "Closed"`),
		Entry("Queue: negative pending", queue(), obj{"pending": -1},
			"status.pending", "should be greater than or equal to 0"),
		Entry("Queue: negative inqueue", queue(), obj{"inqueue": -1},
			"status.inqueue", "should be greater than or equal to 0"),
		Entry("Queue: negative running", queue(), obj{"running": -1},
			"status.running", "should be greater than or equal to 0"),
		Entry("Queue: negative allocated quantity", queue(), obj{"allocated": obj{"cpu": "-1"}},
			"status.allocated", "allocated: every quantity must be greater than or equal to 0"),
	)

	DescribeTable("accepts boundary values that are valid, and stores them unchanged",
		func(ctx context.Context, u *unstructured.Unstructured) {
			created, err := create(ctx, u)
			Expect(err).NotTo(HaveOccurred())
			stored := get(ctx, created)
			for k, v := range u.Object["spec"].(obj) {
				Expect(stored.Object["spec"]).To(HaveKeyWithValue(k, v), "spec.%s", k)
			}
		},
		Entry("PodGroup: minMember 1", podGroup(set("spec.minMember", 1))),
		Entry("PodGroup: minTaskMember adding up to exactly minMember, with a 0 entry",
			podGroup(set("spec.minMember", 9), set("spec.minTaskMember", obj{"launcher": 1, "worker": 8, "ps": 0}))),
		Entry("PodGroup: 16 roles in minTaskMember", podGroup(set("spec.minTaskMember", roles(16)))),
		Entry("PodGroup: zero and positive minResources, string and integer",
			podGroup(set("spec.minResources", obj{"cpu": "0", "memory": "64Gi", "nvidia.com/gpu": 8, "ephemeral-storage": "500m"}))),
		Entry("PodGroup: scheduleTimeoutSeconds 0", podGroup(set("spec.scheduleTimeoutSeconds", 0))),
		Entry("PodGroup: queue and priorityClassName",
			podGroup(set("spec.queue", "team-a.research"), set("spec.priorityClassName", "system-cluster-critical"))),
		Entry("Queue: weight 1, Closed", queue(set("spec.weight", 1), set("spec.state", "Closed"))),
		Entry("Queue: zero and positive capability",
			queue(set("spec.capability", obj{"cpu": "0", "memory": "1Ti", "nvidia.com/gpu": 64}))),
	)

	It("defaults a PodGroup's queue to the default Queue", func(ctx context.Context) {
		u, err := create(ctx, podGroup())
		Expect(err).NotTo(HaveOccurred())
		q, found, _ := unstructured.NestedString(get(ctx, u).Object, "spec", "queue")
		Expect(found).To(BeTrue(), "spec.queue was not defaulted")
		Expect(q).To(Equal(schedulingv1alpha1.DefaultQueueName))
	})

	DescribeTable("defaults a Queue's weight to 1 and state to Open",
		func(ctx context.Context, u *unstructured.Unstructured) {
			created, err := create(ctx, u)
			Expect(err).NotTo(HaveOccurred())
			spec, _, _ := unstructured.NestedMap(get(ctx, created).Object, "spec")
			Expect(spec).To(HaveKeyWithValue("weight", int64(1)))
			Expect(spec).To(HaveKeyWithValue("state", "Open"))
		},
		Entry("empty spec", queue()),
		Entry("no spec at all", queue(del("spec"))),
		Entry("only a capability", queue(set("spec.capability", obj{"cpu": "8"}))),
	)

	It("keeps the explicit values the defaults would otherwise fill in", func(ctx context.Context) {
		// Shows the defaults above are defaults, not constants.
		u, err := create(ctx, queue(set("spec.weight", 3), set("spec.state", "Closed")))
		Expect(err).NotTo(HaveOccurred())
		spec, _, _ := unstructured.NestedMap(get(ctx, u).Object, "spec")
		Expect(spec).To(HaveKeyWithValue("weight", int64(3)))
		Expect(spec).To(HaveKeyWithValue("state", "Closed"))

		u, err = create(ctx, podGroup(set("spec.queue", "team-a")))
		Expect(err).NotTo(HaveOccurred())
		q, _, _ := unstructured.NestedString(get(ctx, u).Object, "spec", "queue")
		Expect(q).To(Equal("team-a"))
	})

	It("ignores status sent with the object: only the status subresource writes it", func(ctx context.Context) {
		u, err := create(ctx, podGroup(set("status.phase", "Running"), set("status.running", 2)))
		Expect(err).NotTo(HaveOccurred())
		Expect(get(ctx, u).Object["status"]).To(BeNil())
	})

	DescribeTable("accepts every PodGroup phase through the status subresource",
		func(ctx context.Context, phase schedulingv1alpha1.PodGroupPhase) {
			u, err := create(ctx, podGroup())
			Expect(err).NotTo(HaveOccurred())
			u = get(ctx, u)
			u.Object["status"] = obj{"phase": string(phase)}
			Expect(suite.Client.Status().Update(ctx, u)).To(Succeed())
			got, _, _ := unstructured.NestedString(get(ctx, u).Object, "status", "phase")
			Expect(got).To(Equal(string(phase)))
		},
		Entry("Pending", schedulingv1alpha1.PodGroupPending),
		Entry("Inqueue", schedulingv1alpha1.PodGroupInqueue),
		Entry("Running", schedulingv1alpha1.PodGroupRunning),
		Entry("Unknown", schedulingv1alpha1.PodGroupUnknown),
		Entry("Failed", schedulingv1alpha1.PodGroupFailed),
		Entry("Finished", schedulingv1alpha1.PodGroupFinished),
	)
})

var _ = Describe("Go types", func() {
	// The scheduler reads and writes these objects through the Go types;
	// a JSON tag that disagrees with the schema would make the API server
	// prune the field silently.

	It("round-trip a PodGroup's spec and status through the API server", func(ctx context.Context) {
		start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		end := metav1.NewTime(start.Add(90 * time.Second))
		pg := &schedulingv1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "typed-", Namespace: ns},
			Spec: schedulingv1alpha1.PodGroupSpec{
				MinMember:     3,
				MinTaskMember: map[string]int32{"launcher": 1, "worker": 2},
				MinResources: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("6"),
					corev1.ResourceMemory: resource.MustParse("12Gi"),
				},
				Queue:                  "team-a",
				PriorityClassName:      "high",
				ScheduleTimeoutSeconds: ptr.To[int32](300),
			},
		}
		Expect(suite.Client.Create(ctx, pg)).To(Succeed())
		wantSpec := pg.Spec.DeepCopy()

		pg.Status = schedulingv1alpha1.PodGroupStatus{
			Phase:     schedulingv1alpha1.PodGroupRunning,
			Admitted:  3,
			Running:   3,
			Succeeded: 1,
			Failed:    1,
			Conditions: []metav1.Condition{{
				Type:               schedulingv1alpha1.PodGroupScheduled,
				Status:             metav1.ConditionTrue,
				Reason:             schedulingv1alpha1.PodGroupReasonGangBound,
				Message:            "3 of 3 members bound",
				LastTransitionTime: end,
			}, {
				Type:               schedulingv1alpha1.PodGroupUnschedulable,
				Status:             metav1.ConditionFalse,
				Reason:             schedulingv1alpha1.PodGroupReasonNotEnoughResources,
				Message:            "",
				LastTransitionTime: end,
			}},
			ScheduleStartTime: &start,
			ScheduleEndTime:   &end,
		}
		wantStatus := pg.Status.DeepCopy()
		Expect(suite.Client.Status().Update(ctx, pg)).To(Succeed())

		got := &schedulingv1alpha1.PodGroup{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(pg), got)).To(Succeed())
		Expect(got.Spec.MinMember).To(Equal(wantSpec.MinMember))
		Expect(got.Spec.MinTaskMember).To(Equal(wantSpec.MinTaskMember))
		Expect(got.Spec.MinResources).To(HaveLen(2))
		Expect(got.Spec.MinResources.Cpu().Cmp(resource.MustParse("6"))).To(Equal(0))
		Expect(got.Spec.MinResources.Memory().Cmp(resource.MustParse("12Gi"))).To(Equal(0))
		Expect(got.Spec.Queue).To(Equal(wantSpec.Queue))
		Expect(got.Spec.PriorityClassName).To(Equal(wantSpec.PriorityClassName))
		Expect(got.Spec.ScheduleTimeoutSeconds).To(Equal(wantSpec.ScheduleTimeoutSeconds))

		Expect(got.Status.Phase).To(Equal(wantStatus.Phase))
		Expect([]int32{got.Status.Admitted, got.Status.Running, got.Status.Succeeded, got.Status.Failed}).
			To(Equal([]int32{3, 3, 1, 1}))
		Expect(got.Status.Conditions).To(HaveLen(2))
		for i, c := range got.Status.Conditions {
			w := wantStatus.Conditions[i]
			Expect([]string{c.Type, string(c.Status), c.Reason, c.Message}).
				To(Equal([]string{w.Type, string(w.Status), w.Reason, w.Message}))
			Expect(c.LastTransitionTime.Equal(&w.LastTransitionTime)).To(BeTrue())
		}
		Expect(got.Status.ScheduleStartTime).NotTo(BeNil())
		Expect(got.Status.ScheduleStartTime.Equal(&start)).To(BeTrue())
		Expect(got.Status.ScheduleEndTime).NotTo(BeNil())
		Expect(got.Status.ScheduleEndTime.Equal(&end)).To(BeTrue())
	})

	It("round-trip a Queue's spec and status, and a zero-value spec gets the defaults", func(ctx context.Context) {
		q := &schedulingv1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "typed-"},
		}
		Expect(suite.Client.Create(ctx, q)).To(Succeed())
		// Create decodes the server's answer into q: the defaults are
		// visible without another read.
		Expect(q.Spec.Weight).To(Equal(int32(1)))
		Expect(q.Spec.State).To(Equal(schedulingv1alpha1.QueueStateOpen))

		q.Spec.Capability = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")}
		Expect(suite.Client.Update(ctx, q)).To(Succeed())
		q.Status = schedulingv1alpha1.QueueStatus{
			State:     schedulingv1alpha1.QueueStateOpen,
			Pending:   4,
			Inqueue:   2,
			Running:   1,
			Allocated: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
		}
		Expect(suite.Client.Status().Update(ctx, q)).To(Succeed())

		got := &schedulingv1alpha1.Queue{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		gpu := corev1.ResourceName("nvidia.com/gpu")
		Expect(got.Spec.Capability).To(HaveKey(gpu))
		Expect(got.Spec.Capability.Name(gpu, resource.DecimalSI).Value()).To(Equal(int64(16)))
		Expect(got.Status.State).To(Equal(schedulingv1alpha1.QueueStateOpen))
		Expect([]int32{got.Status.Pending, got.Status.Inqueue, got.Status.Running}).To(Equal([]int32{4, 2, 1}))
		Expect(got.Status.Allocated).To(HaveKey(gpu))
		Expect(got.Status.Allocated.Name(gpu, resource.DecimalSI).Value()).To(Equal(int64(8)))
	})
})
