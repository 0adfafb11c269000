package cmdutil

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// LeaseFence is the leader-election lock of a replica, noting when it
// last wrote its lease (acquired or renewed it), so that the replica acts
// only while that is recent.
//
// Why: a leader paused past its lease (a stopped process, a stalled VM, a
// long GC) and then continued believes it leads until its next renewal
// fails, up to the renew deadline later, and meanwhile acts beside the
// replica that took over. The chaos soak saw two schedulers commit binds
// to the same gangs that way (docs/reliability.md). With the fence, a
// continued replica finds its last write older than the renew deadline at
// once and does nothing; a healthy leader renews every retry period, far
// within it. What remains is the gap between a check and the act it
// guards; kube-scheduler has no fence at all.
type LeaseFence struct {
	resourcelock.Interface
	clock clock.PassiveClock
	// maxAge is the renew deadline: the elector gives up leading a retry
	// period after its writes have failed that long anyway.
	maxAge time.Duration

	mu      sync.Mutex
	written time.Time
}

// NewLeaseFence wraps lock; Check passes while its last write by this
// replica is younger than maxAge.
func NewLeaseFence(lock resourcelock.Interface, maxAge time.Duration, clk clock.PassiveClock) *LeaseFence {
	return &LeaseFence{Interface: lock, maxAge: maxAge, clock: clk}
}

// Create is the lock's Create, noting the time of a write that holds the
// lease.
func (f *LeaseFence) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return f.noting(r, func() error { return f.Interface.Create(ctx, r) })
}

// Update is the lock's Update, noting the time of a write that holds the
// lease.
func (f *LeaseFence) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return f.noting(r, func() error { return f.Interface.Update(ctx, r) })
}

// noting runs write and, if it stored a record naming this replica the
// holder, notes when it began: a standby measures the lease from the
// record it sees change, which is no earlier.
func (f *LeaseFence) noting(r resourcelock.LeaderElectionRecord, write func() error) error {
	start := f.clock.Now()
	if err := write(); err != nil {
		return err
	}
	if r.HolderIdentity == f.Identity() {
		f.mu.Lock()
		f.written = start
		f.mu.Unlock()
	}
	return nil
}

// Check returns an error unless this replica wrote its lease within the
// renew deadline: the caller must not act on the cluster.
func (f *LeaseFence) Check() error {
	f.mu.Lock()
	written := f.written
	f.mu.Unlock()
	if written.IsZero() {
		return fmt.Errorf("leader election: this replica has not acquired the lease")
	}
	if age := f.clock.Since(written); age > f.maxAge {
		return fmt.Errorf("leader election: this replica last renewed its lease %v ago, more than the renew deadline %v: another may lead now", age.Round(time.Millisecond), f.maxAge)
	}
	return nil
}

// Checker is f's Check, or nil for a nil fence (no leader election): what
// a component's fence option takes.
func (f *LeaseFence) Checker() func() error {
	if f == nil {
		return nil
	}
	return f.Check
}

// FenceLeaderElection gives a manager that elects a leader a LeaseFence as
// its lock: controller-runtime's own lease lock, wrapped. It returns nil
// when o does not elect a leader (a single replica needs no fence). Call
// it once o's leader-election settings are final.
func FenceLeaderElection(cfg *rest.Config, o *ctrl.Options) (*LeaseFence, error) {
	if !o.LeaderElection {
		return nil, nil
	}
	// The lock and its events are Kubernetes' own kinds (a Lease, events).
	cfg = Protobuf(cfg)
	events, err := newLockEvents(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := leaderelection.NewResourceLock(cfg, events, leaderelection.Options{
		LeaderElection:             true,
		LeaderElectionResourceLock: o.LeaderElectionResourceLock,
		LeaderElectionID:           o.LeaderElectionID,
		LeaderElectionNamespace:    o.LeaderElectionNamespace,
		RenewDeadline:              *o.RenewDeadline,
		LeaderLabels:               o.LeaderElectionLabels,
	})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	fence := NewLeaseFence(lock, *o.RenewDeadline, clock.RealClock{})
	o.LeaderElectionResourceLockInterface = fence
	return fence, nil
}

// lockEvents records the lock's events ("became leader") on the Lease, as
// the manager's own lock does.
type lockEvents struct{ broadcaster record.EventBroadcaster }

func newLockEvents(cfg *rest.Config) (lockEvents, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return lockEvents{}, fmt.Errorf("leader election events client: %w", err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return lockEvents{broadcaster: b}, nil
}

func (e lockEvents) GetEventRecorderFor(name string) record.EventRecorder {
	return e.broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: name})
}

// GetEventRecorder is not used by the lock, which records with the old
// events API.
func (e lockEvents) GetEventRecorder(string) recorder.EventRecorder { return nil }
