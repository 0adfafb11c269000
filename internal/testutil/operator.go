package testutil

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/troupe-ml/troupe/internal/operator"
)

// Operator is a running operator manager, as cmd/operator wires it.
type Operator struct {
	cancel context.CancelFunc
	done   chan error
}

// OperatorOption adjusts how a test operator is started.
type OperatorOption func(*ctrl.Options)

// WithClientWrapper wraps the manager's client, for tests that stop the
// operator at a chosen write.
func WithClientWrapper(wrap func(client.WithWatch) client.Client) OperatorOption {
	return func(o *ctrl.Options) {
		o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return wrap(c), nil
		}
	}
}

// StartOperator runs the operator exactly as cmd/operator does
// (operator.Run), with the controllers of the given job kinds, until Stop.
func StartOperator(cfg *rest.Config, schemes []string, options ...OperatorOption) (*Operator, error) {
	var args []string
	for _, s := range schemes {
		args = append(args, "--enable-scheme="+s)
	}
	return StartOperatorWithFlags(cfg, args, options...)
}

// StartOperatorWithFlags runs the operator with command-line flags, as
// cmd/operator would parse them (metrics and probes off).
func StartOperatorWithFlags(cfg *rest.Config, flags []string, options ...OperatorOption) (*Operator, error) {
	args := append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, flags...)
	opts, err := operator.ParseFlags(args, io.Discard)
	if err != nil {
		return nil, err
	}
	tuning := []func(*ctrl.Options){func(o *ctrl.Options) {
		// Several managers run one after another in one process.
		o.Controller = config.Controller{SkipNameValidation: ptrTo(true)}
	}}
	for _, o := range options {
		tuning = append(tuning, o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &Operator{cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- operator.Run(ctx, cfg, opts, tuning...) }()
	return op, nil
}

// Stop stops the manager and waits for it to return.
func (o *Operator) Stop() error {
	o.cancel()
	select {
	case err := <-o.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("operator did not stop within 30s")
	}
}

func ptrTo[T any](v T) *T { return &v }

// CreateNamespace creates a namespace with a generated name.
func CreateNamespace(ctx context.Context, c client.Client, prefix string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	return ns, c.Create(ctx, ns)
}
