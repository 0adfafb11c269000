// Package eventsink gives the scheduler's events a lower priority than its
// binds. An event is an API write as costly as a bind, and a burst of binds
// records one event per pod: written at once, the events take half of what
// the API server can do just when the gangs wait for their binds. So the
// events wait while a cycle commits (Gate.Hold) and go out, a few at a
// time, between commits. None is dropped: waiting events are only late,
// by at most MaxWait.
package eventsink

import (
	"context"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/tools/events"
)

// Defaults of Options.
const (
	// DefaultInFlight bounds the event writes under way, so that a commit
	// that starts while events are being written finds few ahead of it.
	DefaultInFlight = 4
	// DefaultMaxWait bounds how long an event waits for the gate, so that
	// a scheduler that commits without pause still records its events.
	DefaultMaxWait = 10 * time.Second
)

// Gate is held while writes that must not wait (binds, status) are under
// way; the Sink's writes wait for it to open. Holds nest: the gate opens
// when the last holder releases it.
type Gate struct {
	mu    sync.Mutex
	holds int
	// open is closed while the gate is open; a new channel is made each
	// time it closes.
	open chan struct{}
}

// NewGate returns an open gate.
func NewGate() *Gate {
	g := &Gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// Hold closes the gate until the returned release is called (once).
func (g *Gate) Hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holds == 0 {
		g.open = make(chan struct{})
	}
	g.holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.holds--
			if g.holds == 0 {
				close(g.open)
			}
		})
	}
}

// opened returns a channel that is closed when the gate is open.
func (g *Gate) opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// Options tune a Sink.
type Options struct {
	// InFlight is the most writes under way at once (DefaultInFlight if 0).
	InFlight int
	// MaxWait is the longest a write waits for the gate (DefaultMaxWait
	// if 0).
	MaxWait time.Duration
}

// Sink is an events.EventSink whose writes wait for the gate to open and
// run at most InFlight at once. client-go's broadcaster writes each event
// from its own goroutine, so a waiting write holds up only its own event.
type Sink struct {
	sink    events.EventSink
	gate    *Gate
	slots   chan struct{}
	maxWait time.Duration
}

var _ events.EventSink = &Sink{}

// New returns a sink that writes through sink when gate lets it.
func New(sink events.EventSink, gate *Gate, opts Options) *Sink {
	if opts.InFlight <= 0 {
		opts.InFlight = DefaultInFlight
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	return &Sink{sink: sink, gate: gate, slots: make(chan struct{}, opts.InFlight), maxWait: opts.MaxWait}
}

// Create creates the event when the gate lets it.
func (s *Sink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	done, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.sink.Create(ctx, ev)
}

// Update updates the event when the gate lets it.
func (s *Sink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	done, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.sink.Update(ctx, ev)
}

// Patch patches the event when the gate lets it.
func (s *Sink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	done, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.sink.Patch(ctx, ev, data)
}

// acquire takes a slot, then waits until the gate is open (at most
// maxWait), and returns the function that frees the slot. The slot comes
// first: a write that passed the gate must not then queue for a slot into
// the next commit.
func (s *Sink) acquire(ctx context.Context) (func(), error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-s.slots }
	timeout := time.NewTimer(s.maxWait)
	defer timeout.Stop()
	select {
	case <-s.gate.opened():
	case <-timeout.C:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	return release, nil
}
