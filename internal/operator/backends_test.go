package operator

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	spv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
)

// serving is a RESTMapper of a cluster that serves the given kinds.
func serving(gvks ...schema.GroupVersionKind) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range gvks {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

var (
	troupePG  = schedulingv1alpha1.GroupVersion.WithKind("PodGroup")
	volcanoPG = volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup")
	spPG      = spv1alpha1.SchemeGroupVersion.WithKind("PodGroup")
)

func TestGangBackendsDefault(t *testing.T) {
	all := serving(troupePG, volcanoPG, spPG)
	cases := []struct {
		flag, wantName, wantScheduler string
	}{
		{"troupe", "troupe", "troupe-scheduler"},
		{"volcano", "volcano", "volcano"},
		// scheduler-plugins' own chart names its scheduler so.
		{"scheduler-plugins", "scheduler-plugins", "scheduler-plugins-scheduler"},
		// As upstream, another name is a coscheduling-compatible scheduler,
		// and a job that asks for scheduler-plugins gets that one too.
		{"my-coscheduler", "scheduler-plugins", "my-coscheduler"},
	}
	for _, tc := range cases {
		t.Run(tc.flag, func(t *testing.T) {
			bs, err := gangBackends(tc.flag, all)
			if err != nil {
				t.Fatal(err)
			}
			if bs.Default == nil || bs.Default.Name() != tc.wantName || bs.Default.SchedulerName() != tc.wantScheduler {
				t.Fatalf("default = %v, want %s with scheduler %s", bs.Default, tc.wantName, tc.wantScheduler)
			}
			if got := bs.Available[tc.wantName]; got != bs.Default {
				t.Errorf("a job naming %s gets %v, want the operator's default %v", tc.wantName, got, bs.Default)
			}
		})
	}
	for _, flag := range []string{"", "none"} {
		bs, err := gangBackends(flag, all)
		if err != nil || bs.Default != nil {
			t.Errorf("flag %q: default %v, error %v; want none", flag, bs.Default, err)
		}
		if len(bs.All()) != 3 {
			t.Errorf("flag %q: %d backends to watch, want every installed one (3)", flag, len(bs.All()))
		}
	}
}

func TestGangBackendsNeedTheDefaultsCRD(t *testing.T) {
	for flag, install := range map[string]string{
		"volcano":           "install Volcano v1.14",
		"scheduler-plugins": "install scheduler-plugins v0.34",
		"my-coscheduler":    "install scheduler-plugins v0.34",
		"troupe":            "install config/crd/bases/scheduling.troupe.dev_podgroups.yaml",
		"kube-scheduler":    "the cluster does not serve Workload (scheduling.k8s.io/v1beta1): it needs Kubernetes 1.37 or later with the Workload API on",
	} {
		_, err := gangBackends(flag, serving())
		if err == nil || !strings.Contains(err.Error(), "--gang-scheduler-name="+flag+": ") || !strings.Contains(err.Error(), install) {
			t.Errorf("flag %s: error %v, want it to name the flag and %q", flag, err, install)
		}
	}
}

func TestJobChoosesAnInstalledBackend(t *testing.T) {
	bs, err := gangBackends("troupe", serving(troupePG, spPG))
	if err != nil {
		t.Fatal(err)
	}
	job := func(annotations map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Name: "j", Annotations: annotations}
	}
	choose := func(v string) map[string]string { return map[string]string{integrations.GangSchedulerAnnotation: v} }

	if b, err := bs.For(job(nil)); err != nil || b != bs.Default {
		t.Errorf("no annotation: %v, %v; want the default", b, err)
	}
	if b, err := bs.For(job(choose("none"))); err != nil || b != nil {
		t.Errorf("none: %v, %v; want no backend", b, err)
	}
	if b, err := bs.For(job(choose("scheduler-plugins"))); err != nil || b == nil || b.Name() != "scheduler-plugins" {
		t.Errorf("scheduler-plugins: %v, %v", b, err)
	}
	for value, want := range map[string][]string{
		"volcano": {integrations.ReasonGangSchedulerNotInstalled, "annotation troupe.dev/gang-scheduler-name=volcano: ", "install Volcano"},
		"slurm":   {integrations.ReasonInvalidGangScheduler, `annotation troupe.dev/gang-scheduler-name: "slurm" is not a gang scheduler; allowed: kube-scheduler, none, scheduler-plugins, troupe, volcano`},
		"":        {integrations.ReasonInvalidGangScheduler, `"" is not a gang scheduler`},
	} {
		_, err := bs.For(job(choose(value)))
		var sel *integrations.SelectionError
		if !errors.As(err, &sel) || sel.Reason != want[0] {
			t.Errorf("%q: error %v, want a %s selection error", value, err, want[0])
			continue
		}
		for _, w := range want[1:] {
			if !strings.Contains(sel.Message, w) {
				t.Errorf("%q: message %q does not contain %q", value, sel.Message, w)
			}
		}
	}
}
