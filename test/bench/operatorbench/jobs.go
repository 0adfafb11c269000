package operatorbench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	kfv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// jobName names the i-th job.
func jobName(i int) string { return fmt.Sprintf("job-%04d", i) }

// pyTorchJob is the benchmark's job: an unchanged upstream PyTorchJob of
// one master and workers workers, small CPU pods, replicas restarted on
// retryable exit codes (ExitCode: 128 and up), plus Troupe's gangPolicy
// restartPolicy Gang without backoff when gang is set. training-operator
// gets the same job without gangPolicy, which its CRD does not know.
func pyTorchJob(name, ns string, workers int, gang bool) *kubeflowv1.PyTorchJob {
	replica := func(n int32) *kubeflowv1.ReplicaSpec {
		return testutil.MakeReplica(n, kubeflowv1.PyTorchJobDefaultContainerName).
			RestartPolicy(kfv1.RestartPolicyExitCode).
			Request(corev1.ResourceCPU, "100m").Request(corev1.ResourceMemory, "128Mi").Obj()
	}
	job := testutil.MakePyTorchJob(name, ns).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeMaster, replica(1)).
		ReplicaSpec(kubeflowv1.PyTorchJobReplicaTypeWorker, replica(int32(workers))).Obj()
	if !gang {
		return job
	}
	job.Spec.RunPolicy.GangPolicy = &kubeflowv1.GangPolicy{
		RestartPolicy: kubeflowv1.GangRestartPolicyGang,
		RestartOn:     []kubeflowv1.GangRestartTrigger{kubeflowv1.GangRestartOnMemberFailed},
		Backoff:       &kubeflowv1.GangBackoff{InitialSeconds: ptr.To[int32](0)},
	}
	return job
}

// createJobs creates the jobs from parallel goroutines, as fast as the
// harness's client allows.
func createJobs(ctx context.Context, c client.Client, ns string, jobs, workers int, gang bool) error {
	const parallel = 16
	next := make(chan int)
	errs := make(chan error, parallel)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range next {
				if err := c.Create(ctx, pyTorchJob(jobName(i), ns, workers, gang)); err != nil {
					errs <- fmt.Errorf("create %s: %w", jobName(i), err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range jobs {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// writeServingCert writes a self-signed certificate and key for
// localhost as tls.crt and tls.key in dir: training-operator's webhook
// server will not start without them, and nothing calls it here (no
// webhook configuration points at it).
func writeServingCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "training-operator"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// freeAddr is a localhost address with a free port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
