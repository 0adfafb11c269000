package testutil

import (
	"context"
	"errors"
	"io"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/troupe-ml/troupe/gangscheduler/app"
)

// Scheduler is troupe-scheduler running in the test's own process, as
// cmd/scheduler runs it.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan error
}

// StartScheduler runs troupe-scheduler in this process exactly as
// cmd/scheduler does (app.ParseFlags, app.Run), with flags and its
// metrics and health endpoints off, until Stop.
func StartScheduler(cfg *rest.Config, flags ...string) (*Scheduler, error) {
	args := append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}, flags...)
	opts, err := app.ParseFlags(args, io.Discard)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{cancel: cancel, done: make(chan error, 1)}
	// Several managers run one after another in one process.
	skip := func(o *ctrl.Options) { o.Controller = config.Controller{SkipNameValidation: ptrTo(true)} }
	go func() { s.done <- app.Run(ctx, cfg, opts, skip) }()
	return s, nil
}

// Stop stops the scheduler and waits for it to return.
func (s *Scheduler) Stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("the scheduler did not stop within 30s")
	}
}
