package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// ---------------------------------------------------------------------------
// Builders: small unstructured jobs, so that a test can send exactly the
// JSON a user would (negative numbers, unknown enum values, missing fields)
// without the Go types getting in the way.

// obj is a JSON object as unstructured holds it.
type obj = map[string]interface{}

// mod changes a job's JSON object.
type mod func(obj)

// set sets the value at a dotted path ("spec.runPolicy.backoffLimit"),
// creating the objects on the way.
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
		m[keys[len(keys)-1]] = int64s(v)
	}
}

// int64s turns the ints of a value written in a test into the int64s that
// unstructured objects hold (it cannot deep-copy an int).
func int64s(v interface{}) interface{} {
	switch t := v.(type) {
	case int:
		return int64(t)
	case obj:
		for k, e := range t {
			t[k] = int64s(e)
		}
	case []interface{}:
		for i, e := range t {
			t[i] = int64s(e)
		}
	}
	return v
}

// del removes the value at a dotted path.
func del(path string) mod {
	return func(o obj) {
		keys := strings.Split(path, ".")
		unstructured.RemoveNestedField(o, keys...)
	}
}

// replica is a replica spec of n pods whose template has one container per
// name given.
func replica(n int, containers ...string) obj {
	return obj{"replicas": int64(n), "template": template(containers...)}
}

// template is a pod template with one container per name given.
func template(containers ...string) obj {
	cs := []interface{}{}
	for _, c := range containers {
		cs = append(cs, obj{"name": c, "image": "registry.example/train:1"})
	}
	return obj{"spec": obj{"containers": cs}}
}

func newJob(kind string, spec obj, mods ...mod) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{
		"apiVersion": "kubeflow.org/v1",
		"kind":       kind,
		"metadata":   obj{"generateName": strings.ToLower(kind) + "-"},
		"spec":       spec,
	}}
	for _, m := range mods {
		m(u.Object)
	}
	return u
}

// tfJob is a valid TFJob (two workers) changed by mods.
func tfJob(mods ...mod) *unstructured.Unstructured {
	return newJob("TFJob", obj{"tfReplicaSpecs": obj{
		"Worker": replica(2, "tensorflow"),
	}}, mods...)
}

// pytorchJob is a valid PyTorchJob (a master and a worker) changed by mods.
func pytorchJob(mods ...mod) *unstructured.Unstructured {
	return newJob("PyTorchJob", obj{"pytorchReplicaSpecs": obj{
		"Master": replica(1, "pytorch"),
		"Worker": replica(1, "pytorch"),
	}}, mods...)
}

// mpiJob is a valid MPIJob (a launcher and two workers) changed by mods.
func mpiJob(mods ...mod) *unstructured.Unstructured {
	return newJob("MPIJob", obj{"mpiReplicaSpecs": obj{
		"Launcher": replica(1, "mpi"),
		"Worker":   replica(2, "mpi"),
	}}, mods...)
}

// ---------------------------------------------------------------------------
// Helpers that talk to the API server.

// create sends a copy of job to the API server in the suite's namespace and
// returns the copy (now carrying the server's answer) and the error.
func create(ctx context.Context, job *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := job.DeepCopy()
	u.SetNamespace(ns)
	return u, suite.Client.Create(ctx, u)
}

// get reads a job back from the API server.
func get(ctx context.Context, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubeflow.org/v1")
	u.SetKind(kind)
	Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
	return u
}

// normalize round-trips v through JSON so that values from YAML, from the
// builders and from the API server compare alike (all numbers float64).
func normalize(v interface{}) interface{} {
	raw, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out interface{}
	Expect(json.Unmarshal(raw, &out)).To(Succeed())
	return out
}

// lost lists the paths at which got lacks a value that want has, or holds a
// different one. got may carry more (schema defaults such as a port's
// protocol); it must not carry less: a pruned or rewritten field is lost.
func lost(want, got interface{}, path string) []string {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %#v", path, got)}
		}
		var out []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing (want %v)", path, k, wv))
				continue
			}
			out = append(out, lost(wv, gv, path+"."+k)...)
		}
		sort.Strings(out)
		return out
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, w, got)}
		}
		var out []string
		for i := range w {
			out = append(out, lost(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %#v, got %#v", path, want, got)}
		}
		return nil
	}
}

// expectStoredIntact reads the job back and checks that every field of sent
// survived the API server unchanged.
func expectStoredIntact(ctx context.Context, sent *unstructured.Unstructured, name string) {
	stored := get(ctx, sent.GetKind(), name)
	Expect(lost(normalize(sent.Object["spec"]), normalize(stored.Object["spec"]), "spec")).To(BeEmpty(),
		"the API server dropped or changed fields of the %s", sent.GetKind())
	Expect(stored.GetLabels()).To(Equal(sent.GetLabels()))
}

// expectInvalid checks that err is the API server's Invalid answer and that
// its message carries every wanted text.
func expectInvalid(err error, job *unstructured.Unstructured, want ...string) {
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid %s", job.GetKind())
	GinkgoWriter.Printf("API server: %v\n", err)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid (422) error, got %T: %v", err, err)
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

// ---------------------------------------------------------------------------

var _ = Describe("Job validation", func() {

	It("serves Troupe's own schema for every kind", func(ctx context.Context) {
		// controller-gen also sees upstream's root types for the same
		// group, version and kind; should the generated CRD carry their
		// schema instead of Troupe's, every CEL rule below is missing and
		// status.recreatedPods is pruned. Fail here, plainly, first.
		for plural, replicaSpecs := range map[string]string{
			"tfjobs": "tfReplicaSpecs", "pytorchjobs": "pytorchReplicaSpecs", "mpijobs": "mpiReplicaSpecs",
		} {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			Expect(suite.Client.Get(ctx, client.ObjectKey{Name: plural + ".kubeflow.org"}, crd)).To(Succeed())
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			Expect(versions).To(HaveLen(1), "%s: served versions", plural)
			schema := versions[0].(obj)["schema"].(obj)["openAPIV3Schema"].(obj)
			_, found, _ := unstructured.NestedMap(schema, "properties", "status", "properties", "recreatedPods")
			Expect(found).To(BeTrue(), "%s: the CRD carries upstream's schema, not Troupe's (no status.recreatedPods): re-run make generate", plural)
			rules, _, _ := unstructured.NestedSlice(schema, "properties", "spec", "properties", replicaSpecs, "x-kubernetes-validations")
			Expect(rules).NotTo(BeEmpty(), "%s: no CEL rules on spec.%s", plural, replicaSpecs)
		}
	})

	It("accepts the base jobs the rejection cases are built from", func(ctx context.Context) {
		// Each rejection case changes one thing in one of these; were a
		// base invalid, a case could pass for the wrong reason.
		for _, job := range []*unstructured.Unstructured{tfJob(), pytorchJob(), mpiJob()} {
			u, err := create(ctx, job)
			Expect(err).NotTo(HaveOccurred(), "base %s", job.GetKind())
			expectStoredIntact(ctx, job, u.GetName())
		}
	})

	const (
		nonNegative   = "must be greater than or equal to 0"
		restartPolicy = "must be one of Always, OnFailure, Never, ExitCode"
		noContainers  = "must have at least one container"
		caseTwice     = "a replica type appears twice with different letter case"
		tooFew        = "runPolicy.schedulingPolicy.minAvailable: must not be larger than the total number of replicas"
		cleanPolicy   = "runPolicy.cleanPodPolicy: must be one of All, Running, None"
		backoff       = "runPolicy.backoffLimit: must be greater than or equal to 0"
		deadline      = "runPolicy.activeDeadlineSeconds: must be greater than 0"
		ttl           = "runPolicy.ttlSecondsAfterFinished: must be greater than or equal to 0"
		managedBy     = "runPolicy.managedBy: must be one of kubeflow.org/training-operator, kueue.x-k8s.io/multikueue"
	)

	DescribeTable("rejects an invalid job with a message that names the field",
		func(ctx context.Context, job *unstructured.Unstructured, want ...string) {
			_, err := create(ctx, job)
			expectInvalid(err, job, want...)
		},

		// Negative replicas.
		Entry("TFJob: negative replicas",
			tfJob(set("spec.tfReplicaSpecs.Worker.replicas", -1)),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Worker].replicas: "+nonNegative),
		Entry("PyTorchJob: negative replicas",
			pytorchJob(set("spec.pytorchReplicaSpecs.Worker.replicas", -1)),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Worker].replicas: "+nonNegative),
		Entry("MPIJob: negative replicas",
			mpiJob(set("spec.mpiReplicaSpecs.Worker.replicas", -1)),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Worker].replicas: "+nonNegative),

		// A replica type the kind does not know.
		Entry("TFJob: unknown replica type Launcher",
			tfJob(set("spec.tfReplicaSpecs.Launcher", replica(1, "tensorflow"))),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Launcher]: unsupported replica type", "Chief, Master, PS, Worker, Evaluator"),
		Entry("PyTorchJob: unknown replica type Chief",
			pytorchJob(set("spec.pytorchReplicaSpecs.Chief", replica(1, "pytorch"))),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Chief]: unsupported replica type", "Master, Worker"),
		Entry("MPIJob: unknown replica type PS",
			mpiJob(set("spec.mpiReplicaSpecs.PS", replica(1, "mpi"))),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[PS]: unsupported replica type", "Launcher, Worker"),

		// More than one Chief/Master/Launcher, or none where one is needed.
		Entry("TFJob: Chief with 2 replicas",
			tfJob(set("spec.tfReplicaSpecs.Chief", replica(2, "tensorflow"))),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Chief].replicas: must not be greater than 1"),
		Entry("TFJob: a Chief and a Master",
			tfJob(set("spec.tfReplicaSpecs.Chief", replica(1, "tensorflow")),
				set("spec.tfReplicaSpecs.Master", replica(1, "tensorflow"))),
			"spec.tfReplicaSpecs", "tfReplicaSpecs: at most one Chief or Master replica is allowed"),
		Entry("PyTorchJob: Master with 2 replicas",
			pytorchJob(set("spec.pytorchReplicaSpecs.Master.replicas", 2)),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Master].replicas: must be 1"),
		Entry("MPIJob: Launcher with 2 replicas",
			mpiJob(set("spec.mpiReplicaSpecs.Launcher.replicas", 2)),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Launcher].replicas: must be 1"),
		Entry("MPIJob: no Launcher",
			mpiJob(del("spec.mpiReplicaSpecs.Launcher")),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Launcher]: required"),

		// A template without containers, a replica without a template.
		Entry("TFJob: containers: []",
			tfJob(set("spec.tfReplicaSpecs.Worker.template.spec.containers", []interface{}{})),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Worker].template.spec.containers: "+noContainers),
		Entry("PyTorchJob: containers: []",
			pytorchJob(set("spec.pytorchReplicaSpecs.Worker.template.spec.containers", []interface{}{})),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Worker].template.spec.containers: "+noContainers),
		Entry("MPIJob: containers: []",
			mpiJob(set("spec.mpiReplicaSpecs.Worker.template.spec.containers", []interface{}{})),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Worker].template.spec.containers: "+noContainers),
		Entry("TFJob: replica without a template",
			tfJob(del("spec.tfReplicaSpecs.Worker.template")),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Worker].template", noContainers),
		Entry("PyTorchJob: replica without a template",
			pytorchJob(del("spec.pytorchReplicaSpecs.Master.template")),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Master].template", noContainers),
		Entry("MPIJob: replica without a template",
			mpiJob(del("spec.mpiReplicaSpecs.Launcher.template")),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Launcher].template", noContainers),

		// The framework's container.
		Entry(`TFJob: no container named "tensorflow"`,
			tfJob(set("spec.tfReplicaSpecs.PS", replica(1, "main", "sidecar"))),
			"spec.tfReplicaSpecs", `tfReplicaSpecs[PS].template.spec.containers: must have a container named "tensorflow"`),
		Entry(`PyTorchJob: no container named "pytorch"`,
			pytorchJob(set("spec.pytorchReplicaSpecs.Worker", replica(1, "main"))),
			"spec.pytorchReplicaSpecs", `pytorchReplicaSpecs[Worker].template.spec.containers: must have a container named "pytorch"`),

		// Gang size larger than the job.
		Entry("TFJob: minAvailable larger than the total replicas",
			tfJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 3)), "spec.runPolicy.schedulingPolicy.minAvailable", tooFew),
		Entry("TFJob: minAvailable larger than the total replicas, counting unset replicas as 1",
			tfJob(del("spec.tfReplicaSpecs.Worker.replicas"),
				set("spec.tfReplicaSpecs.PS", replica(1, "tensorflow")),
				set("spec.runPolicy.schedulingPolicy.minAvailable", 3)), "spec.runPolicy.schedulingPolicy.minAvailable", tooFew),
		Entry("PyTorchJob: minAvailable larger than the total replicas",
			pytorchJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 3)), "spec.runPolicy.schedulingPolicy.minAvailable", tooFew),
		Entry("MPIJob: minAvailable larger than the total replicas",
			mpiJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 4)), "spec.runPolicy.schedulingPolicy.minAvailable", tooFew),

		// Replica restart policy.
		Entry("TFJob: restartPolicy Sometimes",
			tfJob(set("spec.tfReplicaSpecs.Worker.restartPolicy", "Sometimes")),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Worker].restartPolicy: "+restartPolicy),
		Entry("PyTorchJob: restartPolicy Sometimes",
			pytorchJob(set("spec.pytorchReplicaSpecs.Master.restartPolicy", "Sometimes")),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Master].restartPolicy: "+restartPolicy),
		Entry("MPIJob: restartPolicy Sometimes",
			mpiJob(set("spec.mpiReplicaSpecs.Launcher.restartPolicy", "Sometimes")),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Launcher].restartPolicy: "+restartPolicy),

		// Run policy.
		Entry("TFJob: unknown cleanPodPolicy",
			tfJob(set("spec.runPolicy.cleanPodPolicy", "Sometimes")), "spec.runPolicy.cleanPodPolicy", cleanPolicy),
		Entry("PyTorchJob: unknown cleanPodPolicy",
			pytorchJob(set("spec.runPolicy.cleanPodPolicy", "Sometimes")), "spec.runPolicy.cleanPodPolicy", cleanPolicy),
		Entry("MPIJob: unknown cleanPodPolicy",
			mpiJob(set("spec.runPolicy.cleanPodPolicy", "Sometimes")), "spec.runPolicy.cleanPodPolicy", cleanPolicy),
		Entry("MPIJob: unknown deprecated spec.cleanPodPolicy",
			mpiJob(set("spec.cleanPodPolicy", "Sometimes")),
			"spec.cleanPodPolicy", `Unsupported value: "Sometimes"`, `"All", "Running", "None"`),
		Entry("TFJob: negative backoffLimit",
			tfJob(set("spec.runPolicy.backoffLimit", -1)), "spec.runPolicy.backoffLimit", backoff),
		Entry("PyTorchJob: negative backoffLimit",
			pytorchJob(set("spec.runPolicy.backoffLimit", -1)), "spec.runPolicy.backoffLimit", backoff),
		Entry("MPIJob: negative backoffLimit",
			mpiJob(set("spec.runPolicy.backoffLimit", -1)), "spec.runPolicy.backoffLimit", backoff),
		Entry("TFJob: activeDeadlineSeconds 0",
			tfJob(set("spec.runPolicy.activeDeadlineSeconds", 0)), "spec.runPolicy.activeDeadlineSeconds", deadline),
		Entry("PyTorchJob: activeDeadlineSeconds 0",
			pytorchJob(set("spec.runPolicy.activeDeadlineSeconds", 0)), "spec.runPolicy.activeDeadlineSeconds", deadline),
		Entry("MPIJob: activeDeadlineSeconds 0",
			mpiJob(set("spec.runPolicy.activeDeadlineSeconds", 0)), "spec.runPolicy.activeDeadlineSeconds", deadline),
		Entry("TFJob: negative ttlSecondsAfterFinished",
			tfJob(set("spec.runPolicy.ttlSecondsAfterFinished", -1)), "spec.runPolicy.ttlSecondsAfterFinished", ttl),
		Entry("PyTorchJob: negative ttlSecondsAfterFinished",
			pytorchJob(set("spec.runPolicy.ttlSecondsAfterFinished", -1)), "spec.runPolicy.ttlSecondsAfterFinished", ttl),
		Entry("MPIJob: negative ttlSecondsAfterFinished",
			mpiJob(set("spec.runPolicy.ttlSecondsAfterFinished", -1)), "spec.runPolicy.ttlSecondsAfterFinished", ttl),
		Entry("TFJob: unknown managedBy",
			tfJob(set("spec.runPolicy.managedBy", "example.com/other")), "spec.runPolicy.managedBy", managedBy),
		Entry("PyTorchJob: unknown managedBy",
			pytorchJob(set("spec.runPolicy.managedBy", "example.com/other")), "spec.runPolicy.managedBy", managedBy),
		Entry("MPIJob: unknown managedBy",
			mpiJob(set("spec.runPolicy.managedBy", "example.com/other")), "spec.runPolicy.managedBy", managedBy),

		// Replica keys that differ only by case.
		Entry("TFJob: Worker and worker",
			tfJob(set("spec.tfReplicaSpecs.worker", replica(1, "tensorflow"))),
			"spec.tfReplicaSpecs", "tfReplicaSpecs: "+caseTwice),
		Entry("PyTorchJob: Worker and worker",
			pytorchJob(set("spec.pytorchReplicaSpecs.worker", replica(1, "pytorch"))),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs: "+caseTwice),
		Entry("MPIJob: Worker and worker",
			mpiJob(set("spec.mpiReplicaSpecs.worker", replica(1, "mpi"))),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs: "+caseTwice),

		// PyTorch elastic policy.
		Entry("PyTorchJob: elasticPolicy minReplicas > maxReplicas",
			pytorchJob(set("spec.elasticPolicy.minReplicas", 3), set("spec.elasticPolicy.maxReplicas", 2)),
			"spec.elasticPolicy.maxReplicas", "elasticPolicy.maxReplicas: must not be smaller than elasticPolicy.minReplicas"),
		Entry("PyTorchJob: elasticPolicy.nProcPerNode together with nprocPerNode",
			pytorchJob(set("spec.elasticPolicy.nProcPerNode", 2), set("spec.nprocPerNode", "2")),
			"spec.elasticPolicy.nProcPerNode", "elasticPolicy.nProcPerNode: must not be set together with nprocPerNode"),

		// MPI slots.
		Entry("MPIJob: slotsPerWorker 0",
			mpiJob(set("spec.slotsPerWorker", 0)),
			"spec.slotsPerWorker", "should be greater than or equal to 1"),

		// TF success policy.
		Entry("TFJob: unknown successPolicy",
			tfJob(set("spec.successPolicy", "AnyWorker")),
			"spec.successPolicy", `Unsupported value: "AnyWorker"`, `"AllWorkers"`),

		// Other run-policy and elastic-policy rules.
		Entry("TFJob: minAvailable 0",
			tfJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 0)),
			"spec.runPolicy.schedulingPolicy.minAvailable", "runPolicy.schedulingPolicy.minAvailable: must be at least 1"),
		Entry("MPIJob: negative scheduleTimeoutSeconds",
			mpiJob(set("spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", -1)),
			"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "runPolicy.schedulingPolicy.scheduleTimeoutSeconds: "+nonNegative),
		Entry("PyTorchJob: elasticPolicy minReplicas 0",
			pytorchJob(set("spec.elasticPolicy.minReplicas", 0)),
			"spec.elasticPolicy.minReplicas", "elasticPolicy.minReplicas: must be at least 1"),
		Entry("PyTorchJob: unknown elasticPolicy rdzvBackend",
			pytorchJob(set("spec.elasticPolicy.rdzvBackend", "zookeeper")),
			"spec.elasticPolicy.rdzvBackend", "elasticPolicy.rdzvBackend: must be one of c10d, etcd, etcd-v2"),
		Entry("PyTorchJob: elasticPolicy rdzvPort 0",
			pytorchJob(set("spec.elasticPolicy.rdzvPort", 0)),
			"spec.elasticPolicy.rdzvPort", "elasticPolicy.rdzvPort: must be between 1 and 65535"),
		Entry("PyTorchJob: elasticPolicy without a Worker",
			pytorchJob(del("spec.pytorchReplicaSpecs.Worker"), set("spec.elasticPolicy.minReplicas", 1)),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Worker]: required when elasticPolicy is set"),

		// No replicas at all.
		Entry("TFJob: empty tfReplicaSpecs",
			tfJob(set("spec.tfReplicaSpecs", obj{})),
			"spec.tfReplicaSpecs", "should have at least 1 properties"),
		Entry("PyTorchJob: empty pytorchReplicaSpecs",
			pytorchJob(set("spec.pytorchReplicaSpecs", obj{})),
			"spec.pytorchReplicaSpecs", "should have at least 1 properties"),
		Entry("MPIJob: empty mpiReplicaSpecs",
			mpiJob(set("spec.mpiReplicaSpecs", obj{})),
			"spec.mpiReplicaSpecs", "should have at least 1 properties"),

		// Gang policy.
		Entry("TFJob: gang restart with a replica restartPolicy Always",
			tfJob(set("spec.runPolicy.gangPolicy.restartPolicy", "Gang"), set("spec.tfReplicaSpecs.Worker.restartPolicy", "Always")),
			"spec.tfReplicaSpecs", "tfReplicaSpecs[Worker].restartPolicy: Always is not allowed with runPolicy.gangPolicy.restartPolicy Gang"),
		Entry("PyTorchJob: gang restart with a replica restartPolicy Always",
			pytorchJob(set("spec.runPolicy.gangPolicy.restartPolicy", "Gang"), set("spec.pytorchReplicaSpecs.Master.restartPolicy", "Always")),
			"spec.pytorchReplicaSpecs", "pytorchReplicaSpecs[Master].restartPolicy: Always is not allowed"),
		Entry("MPIJob: gang restart with a replica restartPolicy Always",
			mpiJob(set("spec.runPolicy.gangPolicy.restartPolicy", "Gang"), set("spec.mpiReplicaSpecs.Worker.restartPolicy", "Always")),
			"spec.mpiReplicaSpecs", "mpiReplicaSpecs[Worker].restartPolicy: Always is not allowed"),
		Entry("TFJob: unknown gangPolicy.restartPolicy",
			tfJob(set("spec.runPolicy.gangPolicy.restartPolicy", "Job")),
			"spec.runPolicy.gangPolicy.restartPolicy", `Unsupported value: "Job"`, `"Pod", "Gang"`),
		Entry("PyTorchJob: unknown restartOn event",
			pytorchJob(set("spec.runPolicy.gangPolicy.restartOn", []interface{}{"MemberFailed", "PodOOM"})),
			"spec.runPolicy.gangPolicy.restartOn[1]", `Unsupported value: "PodOOM"`, `"MemberFailed", "MemberEvicted", "NodeLost", "GangBroken"`),
		Entry("MPIJob: restartOn event twice",
			mpiJob(set("spec.runPolicy.gangPolicy.restartOn", []interface{}{"NodeLost", "NodeLost"})),
			"spec.runPolicy.gangPolicy.restartOn[1]", "Duplicate value"),
		Entry("TFJob: negative maxRestarts",
			tfJob(set("spec.runPolicy.gangPolicy.maxRestarts", -1)),
			"spec.runPolicy.gangPolicy.maxRestarts", "should be greater than or equal to 0"),
		Entry("PyTorchJob: negative maxDisruptions",
			pytorchJob(set("spec.runPolicy.gangPolicy.maxDisruptions", -2)),
			"spec.runPolicy.gangPolicy.maxDisruptions", "should be greater than or equal to 0"),
		Entry("MPIJob: negative backoff.initialSeconds",
			mpiJob(set("spec.runPolicy.gangPolicy.backoff.initialSeconds", -1)),
			"spec.runPolicy.gangPolicy.backoff.initialSeconds", "should be greater than or equal to 0"),
		Entry("TFJob: backoff.maxSeconds below initialSeconds",
			tfJob(set("spec.runPolicy.gangPolicy.backoff.initialSeconds", 60), set("spec.runPolicy.gangPolicy.backoff.maxSeconds", 30)),
			"spec.runPolicy.gangPolicy.backoff.maxSeconds", "gangPolicy.backoff.maxSeconds: must not be smaller than gangPolicy.backoff.initialSeconds"),
		Entry("PyTorchJob: partialGangTimeoutSeconds 0",
			pytorchJob(set("spec.runPolicy.gangPolicy.partialGangTimeoutSeconds", 0)),
			"spec.runPolicy.gangPolicy.partialGangTimeoutSeconds", "should be greater than or equal to 1"),
		Entry("MPIJob: negative nodeLostTimeoutSeconds",
			mpiJob(set("spec.runPolicy.gangPolicy.nodeLostTimeoutSeconds", -5)),
			"spec.runPolicy.gangPolicy.nodeLostTimeoutSeconds", "should be greater than or equal to 0"),
		Entry("TFJob: minMembers for a replica type the job does not have",
			tfJob(set("spec.runPolicy.gangPolicy.minMembers", obj{"PS": 1})),
			"spec.runPolicy.gangPolicy.minMembers", "runPolicy.gangPolicy.minMembers[PS]: not a replica type of this job"),
		Entry("PyTorchJob: minMembers above the replicas",
			pytorchJob(set("spec.runPolicy.gangPolicy.minMembers", obj{"worker": 2})),
			"spec.runPolicy.gangPolicy.minMembers", "runPolicy.gangPolicy.minMembers[worker]: must not be greater than the replicas of that replica type"),
		Entry("MPIJob: negative minMembers",
			mpiJob(set("spec.runPolicy.gangPolicy.minMembers", obj{"Worker": -1})),
			"spec.runPolicy.gangPolicy.minMembers", "gangPolicy.minMembers[Worker]: must be greater than or equal to 0"),
		Entry("PyTorchJob: a topology policy for a replica type the job does not have",
			pytorchJob(set("spec.runPolicy.gangPolicy.topology", obj{
				"levels": []interface{}{obj{"level": "rack", "required": true}}, "replicaTypes": []interface{}{"Worker", "PS"},
			})),
			"spec.runPolicy.gangPolicy.topology.replicaTypes", "runPolicy.gangPolicy.topology.replicaTypes: PS is not a replica type of this job"),
		Entry("TFJob: a topology rule with partitions and policy Pack",
			tfJob(set("spec.runPolicy.gangPolicy.topology", obj{"levels": []interface{}{obj{"level": "rack", "partitions": 2}}})),
			"spec.runPolicy.gangPolicy.topology.levels[0].partitions", "required with policy Partition, and only with it"),
	)

	DescribeTable("accepts boundary values that are valid, and stores them unchanged",
		func(ctx context.Context, job *unstructured.Unstructured) {
			u, err := create(ctx, job)
			Expect(err).NotTo(HaveOccurred())
			expectStoredIntact(ctx, job, u.GetName())
		},
		Entry("TFJob: Worker replicas 0", tfJob(
			set("spec.tfReplicaSpecs.Worker.replicas", 0),
			set("spec.tfReplicaSpecs.Chief", replica(1, "tensorflow")))),
		Entry("PyTorchJob: Worker replicas 0", pytorchJob(set("spec.pytorchReplicaSpecs.Worker.replicas", 0))),
		Entry("MPIJob: Worker replicas 0", mpiJob(set("spec.mpiReplicaSpecs.Worker.replicas", 0))),
		Entry("TFJob: minAvailable equal to the total replicas", tfJob(
			set("spec.tfReplicaSpecs.Chief", replica(1, "tensorflow")),
			set("spec.runPolicy.schedulingPolicy.minAvailable", 3))),
		Entry("TFJob: minAvailable equal to the total replicas, counting unset replicas as 1", tfJob(
			del("spec.tfReplicaSpecs.Worker.replicas"),
			set("spec.tfReplicaSpecs.PS", replica(1, "tensorflow")),
			set("spec.runPolicy.schedulingPolicy.minAvailable", 2))),
		Entry("PyTorchJob: minAvailable equal to the total replicas",
			pytorchJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 2))),
		Entry("MPIJob: minAvailable equal to the total replicas",
			mpiJob(set("spec.runPolicy.schedulingPolicy.minAvailable", 3))),
		Entry("TFJob: activeDeadlineSeconds 1, backoffLimit 0, ttlSecondsAfterFinished 0", tfJob(
			set("spec.runPolicy.activeDeadlineSeconds", 1),
			set("spec.runPolicy.backoffLimit", 0),
			set("spec.runPolicy.ttlSecondsAfterFinished", 0))),
		Entry("PyTorchJob: activeDeadlineSeconds 1, backoffLimit 0", pytorchJob(
			set("spec.runPolicy.activeDeadlineSeconds", 1),
			set("spec.runPolicy.backoffLimit", 0))),
		Entry("MPIJob: activeDeadlineSeconds 1, backoffLimit 0, slotsPerWorker 1", mpiJob(
			set("spec.runPolicy.activeDeadlineSeconds", 1),
			set("spec.runPolicy.backoffLimit", 0),
			set("spec.slotsPerWorker", 1))),
		Entry("TFJob: Chief 1 with PS, Worker and Evaluator, successPolicy AllWorkers", tfJob(
			set("spec.tfReplicaSpecs.Chief", replica(1, "tensorflow")),
			set("spec.tfReplicaSpecs.PS", replica(1, "tensorflow")),
			set("spec.tfReplicaSpecs.Evaluator", replica(1, "tensorflow")),
			set("spec.successPolicy", "AllWorkers"))),
		Entry("PyTorchJob: elasticPolicy minReplicas equal to maxReplicas", pytorchJob(
			set("spec.elasticPolicy.minReplicas", 2),
			set("spec.elasticPolicy.maxReplicas", 2))),
		Entry("PyTorchJob: only nprocPerNode", pytorchJob(
			set("spec.elasticPolicy.minReplicas", 1),
			set("spec.nprocPerNode", "auto"))),
		Entry("MPIJob: no replicas on the Launcher (defaults to 1)",
			mpiJob(del("spec.mpiReplicaSpecs.Launcher.replicas"))),
		Entry("TFJob: gang restart on every event, zero budgets and backoff, minMembers in other letter case", tfJob(
			set("spec.tfReplicaSpecs.Worker.restartPolicy", "ExitCode"),
			set("spec.tfReplicaSpecs.Chief", replica(1, "tensorflow")),
			set("spec.runPolicy.gangPolicy", obj{
				"restartPolicy":             "Gang",
				"restartOn":                 []interface{}{"MemberFailed", "MemberEvicted", "NodeLost", "GangBroken"},
				"maxRestarts":               0,
				"maxDisruptions":            0,
				"backoff":                   obj{"initialSeconds": 0, "maxSeconds": 0},
				"partialGangTimeoutSeconds": 1,
				"nodeLostTimeoutSeconds":    0,
				"minMembers":                obj{"worker": 2, "Chief": 0},
			}))),
		Entry("PyTorchJob: gang restart under OnFailure, minMembers equal to replicas (unset replicas count as 1)", pytorchJob(
			del("spec.pytorchReplicaSpecs.Master.replicas"),
			set("spec.pytorchReplicaSpecs.Worker.restartPolicy", "OnFailure"),
			set("spec.runPolicy.gangPolicy.restartPolicy", "Gang"),
			set("spec.runPolicy.gangPolicy.minMembers", obj{"Master": 1, "Worker": 1}))),
		Entry("MPIJob: a topology policy of the workers, partitioned over racks and packed on hosts in pairs", mpiJob(
			set("spec.runPolicy.gangPolicy.topology", obj{
				"topologyName": "gpu-fabric",
				"replicaTypes": []interface{}{"worker"},
				"levels": []interface{}{
					obj{"level": "rack", "policy": "Partition", "partitions": 2, "required": true},
					obj{"level": "host", "factor": 2, "range": obj{"min": 2, "max": 4}},
				},
			}))),
		Entry("MPIJob: restartPolicy Always with the default (Pod) gang policy", mpiJob(
			set("spec.mpiReplicaSpecs.Worker.restartPolicy", "Always"),
			set("spec.runPolicy.gangPolicy.maxRestarts", 5))),
	)

	It("defaults the gang policy's fields in the schema, and nothing when gangPolicy is absent", func(ctx context.Context) {
		u, err := create(ctx, pytorchJob(set("spec.runPolicy.gangPolicy.restartPolicy", "Gang")))
		Expect(err).NotTo(HaveOccurred())
		stored := get(ctx, "PyTorchJob", u.GetName())
		gp, _, _ := unstructured.NestedMap(stored.Object, "spec", "runPolicy", "gangPolicy")
		Expect(normalize(gp)).To(Equal(normalize(obj{
			"restartPolicy":             "Gang",
			"maxRestarts":               3,
			"partialGangTimeoutSeconds": 300,
			"nodeLostTimeoutSeconds":    60,
		})))

		u, err = create(ctx, pytorchJob())
		Expect(err).NotTo(HaveOccurred())
		stored = get(ctx, "PyTorchJob", u.GetName())
		_, found, _ := unstructured.NestedFieldNoCopy(stored.Object, "spec", "runPolicy", "gangPolicy")
		Expect(found).To(BeFalse(), "an upstream manifest gained a gangPolicy")
	})

	It("keeps the pod template's labels and annotations", func(ctx context.Context) {
		// Kueue, Istio and Prometheus read these; the operator copies them
		// onto the pods. The CRD must declare template.metadata's fields,
		// or the API server prunes them silently.
		job := tfJob(
			set("spec.tfReplicaSpecs.Worker.template.metadata.labels", obj{"app": "mnist"}),
			set("spec.tfReplicaSpecs.Worker.template.metadata.annotations", obj{"sidecar.istio.io/inject": "false"}))
		u, err := create(ctx, job)
		Expect(err).NotTo(HaveOccurred())
		stored := get(ctx, job.GetKind(), u.GetName())
		labels, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "tfReplicaSpecs", "Worker", "template", "metadata", "labels")
		annotations, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "tfReplicaSpecs", "Worker", "template", "metadata", "annotations")
		Expect(labels).To(Equal(map[string]string{"app": "mnist"}), "template.metadata.labels were pruned")
		Expect(annotations).To(Equal(map[string]string{"sidecar.istio.io/inject": "false"}), "template.metadata.annotations were pruned")
	})

	DescribeTable("applies upstream manifests unchanged",
		func(ctx context.Context, manifest string) {
			sent := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(manifest), &sent.Object)).To(Succeed())
			_, err := testutil.ApplyManifest(ctx, suite.Client, ns, manifest)
			Expect(err).NotTo(HaveOccurred())
			expectStoredIntact(ctx, sent, sent.GetName())
		},
		Entry("TFJob dist-mnist: PS + Worker", tfDistMnist),
		Entry("TFJob: Chief, Worker, Evaluator", tfChiefWorkerEvaluator),
		Entry("TFJob: lower-case replica keys", tfLowerCaseKeys),
		Entry("TFJob: gang scheduling, MultiKueue, suspend", tfRunPolicy),
		Entry("PyTorchJob mnist: Master + Worker", pytorchMnist),
		Entry("PyTorchJob elastic imagenet", pytorchElasticImagenet),
		Entry("PyTorchJob: lower-case replica keys, runPolicy", pytorchLowerCaseKeys),
		Entry("MPIJob tensorflow-benchmarks", mpiTensorflowBenchmarks),
		Entry("MPIJob: lower-case replica keys, gang scheduling, MultiKueue", mpiLowerCaseKeys),
	)

	DescribeTable("keeps runPolicy.schedulingPolicy.queue immutable",
		func(ctx context.Context, job *unstructured.Unstructured) {
			u, err := create(ctx, job)
			Expect(err).NotTo(HaveOccurred())
			name := u.GetName()

			// Changing something else, queue untouched: accepted. This
			// shows the rejection below is the queue's.
			u = get(ctx, job.GetKind(), name)
			Expect(unstructured.SetNestedField(u.Object, true, "spec", "runPolicy", "suspend")).To(Succeed())
			Expect(suite.Client.Update(ctx, u)).To(Succeed())

			u = get(ctx, job.GetKind(), name)
			Expect(unstructured.SetNestedField(u.Object, "team-b", "spec", "runPolicy", "schedulingPolicy", "queue")).To(Succeed())
			err = suite.Client.Update(ctx, u)
			expectInvalid(err, job, "spec.runPolicy.schedulingPolicy.queue", "immutable")

			queue, _, _ := unstructured.NestedString(get(ctx, job.GetKind(), name).Object, "spec", "runPolicy", "schedulingPolicy", "queue")
			Expect(queue).To(Equal("team-a"))
		},
		Entry("TFJob", tfJob(set("spec.runPolicy.schedulingPolicy.queue", "team-a"))),
		Entry("PyTorchJob", pytorchJob(set("spec.runPolicy.schedulingPolicy.queue", "team-a"))),
		Entry("MPIJob", mpiJob(set("spec.runPolicy.schedulingPolicy.queue", "team-a"))),
	)
})

// ---------------------------------------------------------------------------
// Upstream-style manifests, as users apply them from Kubeflow's examples.

const tfDistMnist = `
apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata:
  name: "dist-mnist-for-e2e-test"
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 4
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
`

const tfChiefWorkerEvaluator = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: multi-worker-estimator
  labels:
    app: estimator
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sidecar.istio.io/inject: "false"
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-estimator-mnist:latest
              command: ["python", "/opt/model.py", "--tf-model-dir=/mnt/model"]
              ports:
                - name: tfjob-port
                  containerPort: 2222
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-estimator-mnist:latest
              command: ["python", "/opt/model.py", "--tf-model-dir=/mnt/model"]
              resources:
                limits:
                  cpu: "1"
                  memory: 2Gi
    Evaluator:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-estimator-mnist:latest
              command: ["python", "/opt/model.py", "--tf-model-dir=/mnt/model"]
`

const tfLowerCaseKeys = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: lower-case-keys
spec:
  successPolicy: AllWorkers
  tfReplicaSpecs:
    ps:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
`

const tfRunPolicy = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: gang-multikueue
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  runPolicy:
    suspend: true
    managedBy: kueue.x-k8s.io/multikueue
    cleanPodPolicy: Running
    backoffLimit: 3
    activeDeadlineSeconds: 3600
    ttlSecondsAfterFinished: 600
    schedulingPolicy:
      minAvailable: 3
      queue: research
      priorityClass: high-priority
      minResources:
        cpu: "3"
        memory: 6Gi
      scheduleTimeoutSeconds: 120
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
`

const pytorchMnist = `
apiVersion: "kubeflow.org/v1"
kind: "PyTorchJob"
metadata:
  name: "pytorch-dist-mnist-gloo"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: kubeflow/pytorch-dist-mnist:latest
              args: ["--backend", "gloo"]
              resources:
                limits:
                  nvidia.com/gpu: 1
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: kubeflow/pytorch-dist-mnist:latest
              args: ["--backend", "gloo"]
              resources:
                limits:
                  nvidia.com/gpu: 1
`

const pytorchElasticImagenet = `
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: elastic-example-imagenet
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: 1
    maxReplicas: 2
    maxRestarts: 100
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: kubeflow/pytorch-elastic-example-imagenet:latest
              imagePullPolicy: IfNotPresent
              env:
                - name: LOGLEVEL
                  value: DEBUG
              command:
                - python
                - -m
                - torch.distributed.run
                - /workspace/examples/imagenet.py
                - "--arch=resnet18"
                - "--epochs=20"
                - "--batch-size=32"
                - "--workers=0"
                - "/workspace/data/tiny-imagenet-200"
`

const pytorchLowerCaseKeys = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: lower-case-keys
spec:
  nprocPerNode: "2"
  runPolicy:
    backoffLimit: 0
    schedulingPolicy:
      minAvailable: 2
      queue: research
      priorityClass: high-priority
  pytorchReplicaSpecs:
    master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: kubeflow/pytorch-dist-mnist:latest
    worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: kubeflow/pytorch-dist-mnist:latest
`

const mpiTensorflowBenchmarks = `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: tensorflow-benchmarks
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - image: mpioperator/tensorflow-benchmarks:latest
              name: tensorflow-benchmarks
              command:
                - mpirun
                - --allow-run-as-root
                - -np
                - "2"
                - -bind-to
                - none
                - -map-by
                - slot
                - -x
                - NCCL_DEBUG=INFO
                - -x
                - LD_LIBRARY_PATH
                - -x
                - PATH
                - -mca
                - pml
                - ob1
                - -mca
                - btl
                - ^openib
                - python
                - scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
                - --model=resnet101
                - --batch_size=64
                - --variable_update=horovod
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - image: mpioperator/tensorflow-benchmarks:latest
              name: tensorflow-benchmarks
              resources:
                limits:
                  nvidia.com/gpu: 1
`

const mpiLowerCaseKeys = `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: lower-case-keys
spec:
  slotsPerWorker: 4
  cleanPodPolicy: None
  runPolicy:
    suspend: true
    managedBy: kueue.x-k8s.io/multikueue
    schedulingPolicy:
      minAvailable: 3
      queue: research
      priorityClass: high-priority
  mpiReplicaSpecs:
    launcher:
      template:
        spec:
          containers:
            - name: mpi
              image: mpioperator/mpi-pi:openmpi
              command: ["mpirun", "-n", "8", "/home/mpiuser/pi"]
    worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: mpi
              image: mpioperator/mpi-pi:openmpi
`
