package cmdutil

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// lock is a lease lock in memory that fails its writes when told to: the
// fence's bookkeeping is what is tested here; the lock itself is
// client-go's, on a real API server, in the binaries' envtest suites.
type lock struct {
	resourcelock.Interface
	id   string
	fail bool
}

func (l *lock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.write() }
func (l *lock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.write() }
func (l *lock) Identity() string                                                { return l.id }
func (l *lock) write() error {
	if l.fail {
		return errors.New("conflict")
	}
	return nil
}

func TestLeaseFence(t *testing.T) {
	const deadline = 5 * time.Second
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	released := resourcelock.LeaderElectionRecord{HolderIdentity: ""}
	tests := []struct {
		name string
		// steps run in order on the fence, its lock and its clock.
		steps   func(f *LeaseFence, l *lock, c *clocktesting.FakePassiveClock)
		wantErr string
	}{
		{name: "never acquired", steps: func(*LeaseFence, *lock, *clocktesting.FakePassiveClock) {}, wantErr: "has not acquired the lease"},
		{name: "just acquired", steps: func(f *LeaseFence, _ *lock, _ *clocktesting.FakePassiveClock) {
			must(t, f.Create(context.Background(), mine))
		}},
		{name: "renewed within the deadline", steps: func(f *LeaseFence, _ *lock, c *clocktesting.FakePassiveClock) {
			must(t, f.Create(context.Background(), mine))
			c.SetTime(c.Now().Add(4 * time.Second))
			must(t, f.Update(context.Background(), mine))
			c.SetTime(c.Now().Add(4 * time.Second))
		}},
		{name: "paused past the deadline, as a stopped process", steps: func(f *LeaseFence, _ *lock, c *clocktesting.FakePassiveClock) {
			must(t, f.Update(context.Background(), mine))
			c.SetTime(c.Now().Add(12 * time.Second))
		}, wantErr: "last renewed its lease 12s ago, more than the renew deadline 5s"},
		{name: "renewals that fail do not count", steps: func(f *LeaseFence, l *lock, c *clocktesting.FakePassiveClock) {
			must(t, f.Update(context.Background(), mine))
			l.fail = true
			c.SetTime(c.Now().Add(3 * time.Second))
			if f.Update(context.Background(), mine) == nil {
				t.Fatal("a failing lock's Update succeeded")
			}
			c.SetTime(c.Now().Add(3 * time.Second))
		}, wantErr: "6s ago"},
		{name: "a release names no holder and does not count", steps: func(f *LeaseFence, _ *lock, c *clocktesting.FakePassiveClock) {
			must(t, f.Update(context.Background(), mine))
			c.SetTime(c.Now().Add(6 * time.Second))
			must(t, f.Update(context.Background(), released))
		}, wantErr: "6s ago"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
			l := &lock{id: "me"}
			f := NewLeaseFence(l, deadline, c)
			tc.steps(f, l, c)
			err := f.Check()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Check() = %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestNilFenceHasNoChecker(t *testing.T) {
	var f *LeaseFence
	if f.Checker() != nil {
		t.Error("a nil fence's Checker is not nil: a binary without leader election would be fenced")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
