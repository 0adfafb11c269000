package eventsink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
)

// recordingSink counts the writes that reach it and the most under way at
// once; each write waits for proceed when it is set.
type recordingSink struct {
	proceed  chan struct{}
	writes   atomic.Int32
	inFlight atomic.Int32
	mu       sync.Mutex
	peak     int32
}

func (r *recordingSink) write(ev *eventsv1.Event) (*eventsv1.Event, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	r.mu.Lock()
	r.peak = max(r.peak, n)
	r.mu.Unlock()
	if r.proceed != nil {
		<-r.proceed
	}
	r.writes.Add(1)
	return ev, nil
}

func (r *recordingSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return r.write(ev)
}

func (r *recordingSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return r.write(ev)
}

func (r *recordingSink) Patch(_ context.Context, ev *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return r.write(ev)
}

// settle is how long a test lets a write that should wait get ahead, to
// catch one that does not.
const settle = 50 * time.Millisecond

// Every kind of write waits for the gate and goes out once it opens.
func TestWritesWaitForTheGate(t *testing.T) {
	writes := map[string]func(*Sink) error{
		"create": func(s *Sink) error { _, err := s.Create(context.Background(), &eventsv1.Event{}); return err },
		"update": func(s *Sink) error { _, err := s.Update(context.Background(), &eventsv1.Event{}); return err },
		"patch": func(s *Sink) error {
			_, err := s.Patch(context.Background(), &eventsv1.Event{}, []byte("{}"))
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			rec := &recordingSink{}
			gate := NewGate()
			s := New(rec, gate, Options{})

			if err := write(s); err != nil || rec.writes.Load() != 1 {
				t.Fatalf("open gate: err %v, %d writes, want 1", err, rec.writes.Load())
			}

			release := gate.Hold()
			done := make(chan error)
			go func() { done <- write(s) }()
			time.Sleep(settle)
			if n := rec.writes.Load(); n != 1 {
				t.Fatalf("a write went out while the gate was held: %d writes", n)
			}
			release()
			if err := <-done; err != nil || rec.writes.Load() != 2 {
				t.Fatalf("after release: err %v, %d writes, want 2", err, rec.writes.Load())
			}
		})
	}
}

// The gate opens when the last of nested holds is released, and a second
// release of one hold does not open it early.
func TestNestedHolds(t *testing.T) {
	gate := NewGate()
	first, second := gate.Hold(), gate.Hold()
	first()
	first()
	select {
	case <-gate.opened():
		t.Fatal("open with one hold left")
	default:
	}
	second()
	select {
	case <-gate.opened():
	default:
		t.Fatal("closed after every hold was released")
	}
}

// A gate held for longer than MaxWait does not hold events back for good.
func TestMaxWait(t *testing.T) {
	rec := &recordingSink{}
	gate := NewGate()
	gate.Hold()
	s := New(rec, gate, Options{MaxWait: settle})
	start := time.Now()
	if _, err := s.Create(context.Background(), &eventsv1.Event{}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < settle {
		t.Errorf("wrote after %v, before MaxWait %v", waited, settle)
	}
	if rec.writes.Load() != 1 {
		t.Errorf("%d writes, want 1", rec.writes.Load())
	}
}

// At most InFlight writes are under way at once, and every one completes.
func TestInFlight(t *testing.T) {
	rec := &recordingSink{proceed: make(chan struct{})}
	s := New(rec, NewGate(), Options{InFlight: 2})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := s.Create(context.Background(), &eventsv1.Event{}); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(settle)
	if n := rec.inFlight.Load(); n != 2 {
		t.Errorf("%d writes under way, want 2", n)
	}
	close(rec.proceed)
	wg.Wait()
	if rec.peak != 2 || rec.writes.Load() != 6 {
		t.Errorf("peak %d in flight (want 2), %d writes (want 6)", rec.peak, rec.writes.Load())
	}
}

// A write whose context ends while it waits gives up without writing, and
// frees its slot.
func TestContextEndsWhileWaiting(t *testing.T) {
	rec := &recordingSink{}
	gate := NewGate()
	release := gate.Hold()
	s := New(rec, gate, Options{InFlight: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := s.Create(ctx, &eventsv1.Event{}); done <- err }()
	time.Sleep(settle)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	release()
	if _, err := s.Create(context.Background(), &eventsv1.Event{}); err != nil {
		t.Fatal(err)
	}
	if rec.writes.Load() != 1 {
		t.Errorf("%d writes, want only the second", rec.writes.Load())
	}
}
