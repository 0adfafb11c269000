package operator

import (
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/troupe-ml/troupe/controllers/engine"
	"github.com/troupe-ml/troupe/controllers/mpi"
	"github.com/troupe-ml/troupe/controllers/pytorch"
	"github.com/troupe-ml/troupe/controllers/tfjob"
)

// frameworks maps an --enable-scheme value to its adapter. Registered here,
// explicitly, rather than from init functions.
var frameworks = map[string]func(*Options) engine.Framework{
	"mpijob": func(o *Options) engine.Framework {
		return mpi.Framework{KubectlDeliveryImage: o.MPIKubectlDeliveryImage}
	},
	"pytorchjob": func(*Options) engine.Framework { return pytorch.Framework{} },
	"tfjob":      func(*Options) engine.Framework { return tfjob.Framework{} },
}

// FrameworkNames lists the job kinds the operator can run, sorted.
func FrameworkNames() []string {
	names := make([]string, 0, len(frameworks))
	for n := range frameworks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SetupControllers registers one controller per enabled job kind, and the
// health checks, with the manager; extra options go to every controller.
func SetupControllers(mgr ctrl.Manager, opts *Options, extra ...engine.Option) error {
	gangs, err := gangBackends(opts.GangSchedulerName, mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if gangs, err = setupHyperNodes(mgr, gangs, opts.VolcanoHyperNodeTopology); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("gang backends", describeGangBackends(gangs)...)
	engineOpts := append([]engine.Option{engine.WithGangBackends(gangs), engine.WithAdmissionWait(opts.WaitForPodGroupAdmission)}, extra...)
	for _, name := range opts.Schemes() {
		newFramework, ok := frameworks[name]
		if !ok {
			return fmt.Errorf("--enable-scheme: unknown job kind %q", name)
		}
		fw := newFramework(opts)
		recorder := mgr.GetEventRecorder(fw.ControllerName())
		if err := engine.NewReconciler(mgr.GetClient(), recorder, fw, engineOpts...).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up %s: %w", fw.ControllerName(), err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", healthz.Ping)
}
