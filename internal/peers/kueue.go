package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	configv1alpha1 "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/yaml"
)

// Kueue's installation, as its manifests make it, less the parts an API
// server without a cluster network cannot use (see InstallKueue).
const (
	// KueueNamespace is where Kueue keeps its webhook certificate.
	KueueNamespace     = "kueue-system"
	kueueWebhookSvc    = "kueue-webhook-service"
	kueueWebhookSecret = "kueue-webhook-server-cert"
	// The webhook configurations Kueue's certificate rotator fills in,
	// named after its service ("<base>-<type>-webhook-configuration").
	kueueMutatingWebhooks   = "kueue-mutating-webhook-configuration"
	kueueValidatingWebhooks = "kueue-validating-webhook-configuration"
)

// kueueConvertedCRDs are the CRDs Kueue serves a conversion webhook for,
// and whose CA bundle its certificate rotator fills in.
var kueueConvertedCRDs = []string{"clusterqueues", "cohorts", "localqueues", "multikueueclusters", "resourceflavors", "workloads"}

// KueueCRDDir is the folder of Kueue's CRDs that hack/peer-schedulers.sh
// copies beside the binary it builds.
func KueueCRDDir(binary string) string { return filepath.Join(filepath.Dir(binary), "crds") }

// InstallKueue makes an API server ready for Kueue's manager, as Kueue's
// manifests would: its CRDs (from crdDir), served before it returns, its
// namespace, the Secret its certificate rotator writes to, and the
// webhook configurations and CRD conversion settings the rotator fills
// its CA into.
//
// Its webhooks are not registered with the API server: the API server
// reaches a webhook through a Service's DNS name, which an API server
// without a cluster network (envtest's) cannot resolve. The webhook
// configurations are therefore empty, and the CRD conversion webhooks are
// never called as long as every client uses the stored version
// (kueue.x-k8s.io/v1beta2). Without Kueue's mutating webhook a job is not
// suspended on creation: create jobs with runPolicy.suspend set, as the
// webhook would. It may run again on the same server.
func InstallKueue(ctx context.Context, cfg *rest.Config, crdDir string) error {
	crds, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crdDir}, ErrorIfPathMissing: true})
	if err != nil {
		return fmt.Errorf("install Kueue's CRDs from %s (hack/peer-schedulers.sh kueue copies them): %w", crdDir, err)
	}
	if len(crds) == 0 {
		return fmt.Errorf("no Kueue CRDs in %s (hack/peer-schedulers.sh kueue copies them)", crdDir)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		return err
	}
	for _, name := range kueueConvertedCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name + ".kueue.x-k8s.io"}, crd); err != nil {
			return fmt.Errorf("the CRD %s.kueue.x-k8s.io: %w", name, err)
		}
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
					Namespace: KueueNamespace, Name: kueueWebhookSvc, Path: ptr.To("/convert"),
				}},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		if err := c.Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("the CRD %s.kueue.x-k8s.io: set its conversion webhook: %w", name, err)
		}
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: KueueNamespace, Name: kueueWebhookSecret}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueMutatingWebhooks}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueValidatingWebhooks}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// KueueOptions configure Kueue's manager.
type KueueOptions struct {
	Options
	// Frameworks are the job integrations Kueue manages, as its
	// configuration names them (kubeflow.org/pytorchjob, ...).
	Frameworks []string
	// WaitForPodsReady, when not zero, turns on Kueue's waitForPodsReady
	// with this timeout: a workload whose pods are not all ready within it
	// is evicted and requeued.
	WaitForPodsReady time.Duration
}

// Validate reports every invalid option, naming the field.
func (o KueueOptions) Validate() error {
	errs := o.validateBuiltBy("hack/peer-schedulers.sh kueue")
	if len(o.Frameworks) == 0 {
		errs = append(errs, fieldError("Frameworks", "empty; name the job integrations Kueue manages, e.g. kubeflow.org/pytorchjob"))
	}
	if o.WaitForPodsReady < 0 {
		errs = append(errs, fieldError("WaitForPodsReady", "must be 0 (off) or more, got %v", o.WaitForPodsReady))
	}
	return errors.Join(errs...)
}

const kueueConfigFile = "kueue-config.yaml"

// config is Kueue's configuration file: leader election and metrics off,
// the webhook server and health probes on free loopback ports, the
// certificates managed by Kueue itself in certDir.
func (o KueueOptions) config(certDir string) ([]byte, error) {
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := kueueconfig.Configuration{
		TypeMeta:  metav1.TypeMeta{APIVersion: kueueconfig.SchemeGroupVersion.String(), Kind: "Configuration"},
		Namespace: ptr.To(KueueNamespace),
		ControllerManager: kueueconfig.ControllerManager{
			Webhook:        kueueconfig.ControllerWebhook{Host: "127.0.0.1", Port: ptr.To(webhookPort), CertDir: certDir},
			LeaderElection: &configv1alpha1.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
			Metrics:        kueueconfig.ControllerMetrics{BindAddress: "0"},
			Health:         kueueconfig.ControllerHealth{HealthProbeBindAddress: fmt.Sprintf("127.0.0.1:%d", healthPort)},
		},
		InternalCertManagement: &kueueconfig.InternalCertManagement{
			Enable: ptr.To(true), WebhookServiceName: ptr.To(kueueWebhookSvc), WebhookSecretName: ptr.To(kueueWebhookSecret),
		},
		Integrations: &kueueconfig.Integrations{Frameworks: o.Frameworks},
	}
	if o.WaitForPodsReady > 0 {
		// Not blocking: other workloads are admitted while one waits.
		cfg.WaitForPodsReady = &kueueconfig.WaitForPodsReady{Timeout: metav1.Duration{Duration: o.WaitForPodsReady}, BlockAdmission: ptr.To(false)}
	}
	return yaml.Marshal(cfg)
}

// freePort is a TCP port free on the loopback interface now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// StartKueue starts Kueue's manager on an API server InstallKueue made
// ready. Kueue writes its webhook certificate to a Secret and then waits
// for it in its certificate folder, where a kubelet would mount the
// Secret; StartKueue plays that part, copying the Secret's files into the
// folder until the manager stops. Its visibility server (an aggregated
// API, which needs an in-cluster configuration) is off. Cancelling ctx
// stops it as Stop does.
func StartKueue(ctx context.Context, o KueueOptions) (*Process, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid KueueOptions:\n%w", err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fieldError("Kubeconfig", "%w", err)
	}
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "troupe-kueue-certs-")
	if err != nil {
		return nil, err
	}
	conf, err := o.config(certDir)
	if err != nil {
		return nil, err
	}
	args := func(dir string) []string {
		return []string{
			"--config=" + filepath.Join(dir, kueueConfigFile),
			"--kubeconfig=" + o.Kubeconfig,
			"--feature-gates=VisibilityOnDemand=false",
		}
	}
	p, err := startWithConfig(ctx, "kueue", kueueConfigFile, conf, o.Options, args)
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	go func() {
		mountSecret(p.done, c, client.ObjectKey{Namespace: KueueNamespace, Name: kueueWebhookSecret}, certDir)
		_ = os.RemoveAll(certDir)
	}()
	return p, nil
}

// mountSecret copies the Secret's keys into files of dir, every 200ms,
// as the kubelet keeps a Secret volume up to date, until done.
func mountSecret(done <-chan struct{}, c client.Client, key client.ObjectKey, dir string) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		s := &corev1.Secret{}
		if err := c.Get(context.Background(), key, s); err != nil {
			continue
		}
		for name, data := range s.Data {
			path := filepath.Join(dir, name)
			if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
				continue
			}
			// Renamed into place, so that Kueue never reads half a file.
			tmp := path + ".tmp"
			if os.WriteFile(tmp, data, 0o600) == nil {
				_ = os.Rename(tmp, path)
			}
		}
	}
}
