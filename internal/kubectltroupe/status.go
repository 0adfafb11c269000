package kubectltroupe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/controllers/mpi"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/controllers/tfjob"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/kubenative"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/integrations/volcano"
)

// frameworks are the job kinds the plugin reads, in the order it lists
// them.
var frameworks = []engine.Framework{tfjob.Framework{}, pytorch.Framework{}, mpi.Framework{}}

// backends are the gang backends whose PodGroup the plugin looks for.
var backends = []integrations.Backend{troupe.Backend{}, volcano.Backend{}, schedulerplugins.Backend{Scheduler: schedulerplugins.DefaultSchedulerName}, kubenative.Backend{}}

type statusOptions struct {
	flags         *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	allNamespaces bool
}

func newStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &statusOptions{flags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "status [KIND/]JOB",
		Short: "Jobs with their gang: state, backend, queue, members running per role, restarts, and why it waits",
		Long: `Without a job, one line per TFJob, PyTorchJob and MPIJob of the namespace (every
namespace with -A). With one (NAME, or tfjob/NAME, pytorchjob/NAME, mpijob/NAME),
that job in detail: its gang and a line per role, with why its members do not
run (scheduling gates, the scheduler's verdict, or no pods before the gang is
admitted).`,
		Example: `  kubectl troupe status
  kubectl troupe status -A
  kubectl troupe status pytorchjob/llama-ft -n team-a`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args)
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List the jobs of every namespace.")
	return cmd
}

func (o *statusOptions) run(ctx context.Context, args []string) error {
	c, namespace, err := newClient(o.flags)
	if err != nil {
		return err
	}
	if o.allNamespaces {
		if len(args) > 0 {
			return errors.New("--all-namespaces lists jobs; to show one, name it with -n NAMESPACE instead")
		}
		namespace = ""
	}
	r := reader{client: c, now: time.Now()}
	if len(args) == 0 {
		reports, err := r.all(ctx, namespace)
		if err != nil {
			return err
		}
		if len(reports) == 0 {
			_, err := fmt.Fprintln(o.streams.ErrOut, "No TFJobs, PyTorchJobs or MPIJobs found"+inNamespace(namespace)+".")
			return err
		}
		return renderList(o.streams.Out, reports, o.allNamespaces)
	}
	report, err := r.one(ctx, namespace, args[0])
	if err != nil {
		return err
	}
	return renderJob(o.streams.Out, report)
}

// newClient connects as kubectl's flags say, and returns the namespace
// they select.
func newClient(flags *genericclioptions.ConfigFlags) (client.Client, string, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(scheme))
	utilruntime.Must(volcanov1beta1.AddToScheme(scheme))
	utilruntime.Must(spv1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, namespace, err
}

// reader reads jobs, their pods and PodGroups from the API server.
type reader struct {
	client client.Client
	now    time.Time
}

// all reports every job of the namespace ("" for all), kind by kind, by
// name.
func (r reader) all(ctx context.Context, namespace string) ([]jobReport, error) {
	var reports []jobReport
	for _, fw := range frameworks {
		jobs, err := r.jobs(ctx, fw, namespace)
		if err != nil {
			return nil, err
		}
		for _, job := range jobs {
			report, err := r.report(ctx, fw, job)
			if err != nil {
				return nil, err
			}
			reports = append(reports, report)
		}
	}
	// Namespace by namespace; within one, kind by kind and by name.
	slices.SortStableFunc(reports, func(a, b jobReport) int { return strings.Compare(a.Namespace, b.Namespace) })
	return reports, nil
}

// one reports the job named "NAME" or "KIND/NAME".
func (r reader) one(ctx context.Context, namespace, arg string) (jobReport, error) {
	kind, name, hasKind := strings.Cut(arg, "/")
	if !hasKind {
		name, kind = kind, ""
	}
	var found []jobReport
	var kinds []string
	for _, fw := range frameworks {
		fwKind := fw.GroupVersionKind().Kind
		kinds = append(kinds, strings.ToLower(fwKind))
		if hasKind && !strings.EqualFold(kind, fwKind) {
			continue
		}
		job := fw.NewJob()
		err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return jobReport{}, err
		}
		report, err := r.report(ctx, fw, job)
		if err != nil {
			return jobReport{}, err
		}
		found = append(found, report)
	}
	switch {
	case hasKind && !slices.Contains(kinds, strings.ToLower(kind)):
		return jobReport{}, fmt.Errorf("%q: unknown job kind %q; known: %s", arg, kind, strings.Join(kinds, ", "))
	case len(found) == 0:
		return jobReport{}, fmt.Errorf("no TFJob, PyTorchJob or MPIJob %q%s", name, inNamespace(namespace))
	case len(found) > 1:
		var names []string
		for _, f := range found {
			names = append(names, strings.ToLower(f.Kind)+"/"+name)
		}
		return jobReport{}, fmt.Errorf("%q names %s: say which", name, strings.Join(names, " and "))
	}
	return found[0], nil
}

// jobs lists one kind's jobs; none when the cluster does not serve it.
func (r reader) jobs(ctx context.Context, fw engine.Framework, namespace string) ([]engine.Job, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(fw.GroupVersionKind().GroupVersion().WithKind(fw.GroupVersionKind().Kind + "List"))
	if err := r.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	jobs := make([]engine.Job, 0, len(list.Items))
	for _, item := range list.Items {
		job := fw.NewJob()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, job); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", fw.GroupVersionKind().Kind, item.GetNamespace(), item.GetName(), err)
		}
		jobs = append(jobs, job)
	}
	slices.SortFunc(jobs, func(a, b engine.Job) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return jobs, nil
}

func (r reader) report(ctx context.Context, fw engine.Framework, job engine.Job) (jobReport, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(job.GetNamespace()),
		client.MatchingLabels{kubeflowv1.JobNameLabel: job.GetName(), kubeflowv1.OperatorNameLabel: fw.ControllerName()}); err != nil {
		return jobReport{}, err
	}
	backend, phase, err := r.gang(ctx, job)
	if err != nil {
		return jobReport{}, err
	}
	return describe(fw, job, pods.Items, backend, phase, r.now), nil
}

// gang finds the job's gang backend and its PodGroup's phase: the backend
// the job's annotation names, else the one whose PodGroup it has; "none"
// without either.
func (r reader) gang(ctx context.Context, job engine.Job) (backend, phase string, err error) {
	chosen := job.GetAnnotations()[integrations.GangSchedulerAnnotation]
	for _, b := range backends {
		if chosen != "" && chosen != b.Name() {
			continue
		}
		pg := b.PodGroupType()
		err := r.client.Get(ctx, client.ObjectKey{Namespace: job.GetNamespace(), Name: job.GetName()}, pg)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return "", "", err
		}
		phase, err := podGroupPhase(pg)
		if err != nil {
			return "", "", err
		}
		if phase == "" {
			// Its scheduler has not looked at it yet.
			phase = "no status yet"
		}
		return b.Name(), phase, nil
	}
	if chosen != "" {
		return chosen, "", nil
	}
	return integrations.None, "", nil
}

// podGroupPhase is a PodGroup's status.phase, or for kube-scheduler's
// PodGroup, which has none, what its PodGroupInitiallyScheduled condition
// says.
func podGroupPhase(pg client.Object) (string, error) {
	if native, ok := pg.(*schedulingv1beta1.PodGroup); ok {
		if len(native.Status.Conditions) == 0 {
			return "", nil
		}
		return kubenative.State(native).Phase, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		return "", err
	}
	phase, _, _ := unstructured.NestedString(content, "status", "phase")
	return phase, nil
}

func inNamespace(namespace string) string {
	if namespace == "" {
		return ""
	}
	return " in namespace " + namespace
}
