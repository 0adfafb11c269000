package measure

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// CountInterruptions wraps w, a watch the harness times binds by, so that
// interrupted is called once if its stream breaks before the watcher stops
// it: the server ends it early (client-go's "very short watch", a closed
// connection) or sends an error event. The reflector then watches again
// from the last version it saw, after a backoff, and the binds made
// meanwhile are seen late; its watch error handler hears of none of
// this, only of failed list and watch calls. A stream stopped by its
// watcher (Stop) is not an interruption.
func CountInterruptions(w watch.Interface, interrupted func()) watch.Interface {
	c := &countingWatch{inner: w, out: make(chan watch.Event), stopped: make(chan struct{})}
	go c.forward(interrupted)
	return c
}

type countingWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (c *countingWatch) forward(interrupted func()) {
	defer close(c.out)
	broke := false
	for ev := range c.inner.ResultChan() {
		if ev.Type == watch.Error && !broke {
			broke = true
			interrupted()
		}
		select {
		case c.out <- ev:
		case <-c.stopped:
			return
		}
	}
	select {
	case <-c.stopped:
	default:
		if !broke {
			interrupted()
		}
	}
}

// Stop stops the watch; its end is then not an interruption.
func (c *countingWatch) Stop() {
	c.stopOnce.Do(func() {
		close(c.stopped)
		c.inner.Stop()
	})
}

// ResultChan is the wrapped watch's events.
func (c *countingWatch) ResultChan() <-chan watch.Event { return c.out }
