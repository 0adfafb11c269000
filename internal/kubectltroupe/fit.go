package kubectltroupe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/config"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/internal/fit"
)

// schedulerConfigKey is the key of the scheduler's configuration in the
// Helm chart's ConfigMap.
const schedulerConfigKey = "scheduler-config.yaml"

type fitOptions struct {
	flags              *genericclioptions.ConfigFlags
	streams            genericiooptions.IOStreams
	filename           string
	schedulerConfig    string
	schedulerConfigMap string
	schedulerName      string
}

func newFitCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &fitOptions{flags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "fit -f JOB.yaml",
		Short: "Would troupe-scheduler place this job now, on which nodes, and if not, why, and whom preemption would take",
		Long: `A dry run against the live cluster: the job's pods and PodGroup, as the operator would
make them (the API server validates the job and admits each pod in a server-side dry
run), are added to a snapshot of the cluster read now, and troupe-scheduler's own
decision code runs over it with the scheduler's configuration. Nothing is created.

The answer is the scheduler's on the cluster as it was read: another job created in the
meantime can take the room first. With the preempt action configured (or, when it is
not, as it would be with it), it names the lower-priority gangs, or the members above
a gang's minimum, that preemption would delete; the job is then placed once they are
gone. It answers for the troupe backend only.`,
		Example: `  kubectl troupe fit -f examples/pytorchjob-mixed.yaml -n team-a
  kubectl troupe fit -f job.yaml --scheduler-config-map troupe-system/troupe-scheduler`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.filename, "filename", "f", "", "The job's manifest (a TFJob, PyTorchJob or MPIJob; - for standard input).")
	cmd.Flags().StringVar(&o.schedulerConfig, "scheduler-config", "", "troupe-scheduler's configuration file (its --config). Default: the scheduler's defaults.")
	cmd.Flags().StringVar(&o.schedulerConfigMap, "scheduler-config-map", "", "NAMESPACE/NAME of the ConfigMap the Helm chart gives troupe-scheduler its configuration in (key "+schedulerConfigKey+").")
	cmd.Flags().StringVar(&o.schedulerName, "scheduler-name", troupe.SchedulerName, "troupe-scheduler's name on this cluster (its --scheduler-name).")
	return cmd
}

func (o *fitOptions) run(ctx context.Context) error {
	if o.filename == "" {
		return errors.New("-f: the job's manifest is required")
	}
	if o.schedulerConfig != "" && o.schedulerConfigMap != "" {
		return errors.New("--scheduler-config and --scheduler-config-map: give one, not both")
	}
	c, namespace, err := newClient(o.flags)
	if err != nil {
		return err
	}
	fw, job, err := o.readJob(namespace)
	if err != nil {
		return err
	}
	if b := job.GetAnnotations()[integrations.GangSchedulerAnnotation]; b != "" && b != troupe.Name {
		return fmt.Errorf("%s %s: annotation %s is %q: fit answers for the %s backend only", fw.GroupVersionKind().Kind, job.GetName(), integrations.GangSchedulerAnnotation, b, troupe.Name)
	}
	if job, err = validate(ctx, c, job); err != nil {
		return err
	}
	cfg, err := o.config(ctx, c)
	if err != nil {
		return err
	}
	acts, plugs, err := cfg.Build()
	if err != nil {
		return fmt.Errorf("the scheduler's configuration: %w", err)
	}
	cluster, err := readCluster(ctx, c, fw, job)
	if err != nil {
		return err
	}
	v, err := fit.Evaluate(fit.Request{
		Framework: fw, Job: job, Cluster: cluster, Actions: acts, Plugins: plugs,
		SchedulerName: o.schedulerName, Now: time.Now(),
		Admit: func(p *corev1.Pod) (*corev1.Pod, error) { return admit(ctx, c, p) },
	})
	if err != nil {
		return err
	}
	return renderFit(o.streams.Out, fw.GroupVersionKind().Kind, job, v)
}

// readJob reads the one training job of the manifest, in the manifest's
// namespace or else namespace.
func (o *fitOptions) readJob(namespace string) (engine.Framework, engine.Job, error) {
	var data []byte
	var err error
	if o.filename == "-" {
		data, err = io.ReadAll(o.streams.In)
	} else {
		data, err = os.ReadFile(o.filename)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-f: %w", err)
	}
	var kinds []string
	for _, fw := range frameworks {
		kinds = append(kinds, fw.GroupVersionKind().Kind)
	}
	var found []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("-f %s: %w", o.filename, err)
		}
		if obj.Object != nil && obj.GroupVersionKind().Group == kubeflowv1.GroupVersion.Group && slices.Contains(kinds, obj.GetKind()) {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		return nil, nil, fmt.Errorf("-f %s: %d training jobs found; want exactly one %s of %s", o.filename, len(found), strings.Join(kinds, ", "), kubeflowv1.GroupVersion)
	}
	obj := found[0]
	for _, fw := range frameworks {
		if fw.GroupVersionKind().Kind != obj.GetKind() {
			continue
		}
		job := fw.NewJob()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, job); err != nil {
			return nil, nil, fmt.Errorf("-f %s: %s %s: %w", o.filename, obj.GetKind(), obj.GetName(), err)
		}
		if job.GetNamespace() == "" {
			job.SetNamespace(namespace)
		}
		return fw, job, nil
	}
	return nil, nil, fmt.Errorf("-f %s: unknown kind %s", o.filename, obj.GetKind())
}

// validate has the API server validate and default the job in a dry run
// (under a generated name when one of its name exists) and returns it
// defaulted as the operator sees it.
func validate(ctx context.Context, c client.Client, job engine.Job) (engine.Job, error) {
	name := job.GetName()
	try := job.DeepCopyObject().(engine.Job)
	err := c.Create(ctx, try, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		try = job.DeepCopyObject().(engine.Job)
		try.SetName("")
		try.SetGenerateName(name + "-")
		err = c.Create(ctx, try, client.DryRunAll)
	}
	if err != nil {
		return nil, fmt.Errorf("the API server refuses the job: %w", err)
	}
	try.SetName(name)
	try.SetGenerateName("")
	try.Default()
	return try, nil
}

// admit returns the pod as the API server would store it: created in a
// dry run under a generated name, then given its own name back.
func admit(ctx context.Context, c client.Client, pod *corev1.Pod) (*corev1.Pod, error) {
	try := pod.DeepCopy()
	try.GenerateName, try.Name = pod.Name+"-", ""
	if err := c.Create(ctx, try, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("the API server refuses it: %w", err)
	}
	try.Name, try.GenerateName = pod.Name, ""
	return try, nil
}

// config is the scheduler's configuration as the flags say.
func (o *fitOptions) config(ctx context.Context, c client.Client) (*config.Config, error) {
	if o.schedulerConfigMap == "" {
		cfg, err := config.Load(o.schedulerConfig)
		if err != nil {
			return nil, fmt.Errorf("--scheduler-config: %w", err)
		}
		return cfg, nil
	}
	ns, name, ok := strings.Cut(o.schedulerConfigMap, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--scheduler-config-map %q: want NAMESPACE/NAME", o.schedulerConfigMap)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, fmt.Errorf("--scheduler-config-map: %w", err)
	}
	data, ok := cm.Data[schedulerConfigKey]
	if !ok {
		return nil, fmt.Errorf("--scheduler-config-map: ConfigMap %s has no key %s", o.schedulerConfigMap, schedulerConfigKey)
	}
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config-map %s: %w", o.schedulerConfigMap, err)
	}
	return cfg, nil
}

// readCluster lists what troupe-scheduler's cache watches, less the
// job's own pods and PodGroup: the job is placed as new.
func readCluster(ctx context.Context, c client.Client, fw engine.Framework, job engine.Job) (cache.Objects, error) {
	var (
		nodes   corev1.NodeList
		pods    corev1.PodList
		groups  schedulingv1alpha1.PodGroupList
		queues  schedulingv1alpha1.QueueList
		classes schedulingv1.PriorityClassList
		spaces  corev1.NamespaceList
		topos   schedulingv1alpha1.TopologyList
		claims  corev1.PersistentVolumeClaimList
		volumes corev1.PersistentVolumeList
		storage storagev1.StorageClassList
		csi     storagev1.CSINodeList
	)
	for _, l := range []client.ObjectList{&nodes, &pods, &groups, &queues, &classes, &spaces, &topos, &claims, &volumes, &storage, &csi} {
		// A cluster without the CSINode or Topology kinds has none.
		if err := c.List(ctx, l); err != nil && !meta.IsNoMatchError(err) {
			return cache.Objects{}, fmt.Errorf("read the cluster: %w", err)
		}
	}
	own := func(o metav1.Object) bool {
		if o.GetNamespace() != job.GetNamespace() {
			return false
		}
		ref := metav1.GetControllerOf(o)
		return ref != nil && ref.Kind == fw.GroupVersionKind().Kind && ref.Name == job.GetName()
	}
	objs := cache.Objects{Storage: api.StorageObjects{
		PersistentVolumeClaims: ptrs(claims.Items), PersistentVolumes: ptrs(volumes.Items),
		StorageClasses: ptrs(storage.Items), CSINodes: ptrs(csi.Items),
	}.Index()}
	objs.Nodes = ptrs(nodes.Items)
	for _, p := range ptrs(pods.Items) {
		if !own(p) {
			objs.Pods = append(objs.Pods, p)
		}
	}
	for _, g := range ptrs(groups.Items) {
		if !own(g) {
			objs.PodGroups = append(objs.PodGroups, g)
		}
	}
	objs.Queues = ptrs(queues.Items)
	objs.PriorityClasses = ptrs(classes.Items)
	objs.Namespaces = ptrs(spaces.Items)
	objs.Topologies = ptrs(topos.Items)
	return objs, nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
