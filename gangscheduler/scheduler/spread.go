package scheduler

import (
	"sync"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
)

// bindSpread follows the binds of each gang a cycle dispatched, as their
// answers come back, and once a gang's last answer is in, tells how far
// apart its requests went out and its answers came back. Kubernetes binds
// one pod per request, so between a gang's first answer and its last the
// API server shows it partly bound: this is how long, as the scheduler
// sees it, apart from what it does to make it short (sending a gang's
// binds together).
type bindSpread struct {
	// observe is told of each gang whose binds all succeeded and were at
	// least two (a lone bind has no spread).
	observe func(requests, answers time.Duration)

	mu    sync.Mutex
	gangs map[*api.TaskInfo]*gangBinds
}

// gangBinds is one gang's binds of one dispatch, while answers come back.
type gangBinds struct {
	left                                         int
	failed                                       bool
	firstSent, lastSent, firstAnswer, lastAnswer time.Time
}

func newBindSpread(observe func(requests, answers time.Duration)) *bindSpread {
	return &bindSpread{observe: observe, gangs: map[*api.TaskInfo]*gangBinds{}}
}

// observeSpreadMetrics is the scheduler's observe: the two histograms.
func observeSpreadMetrics(requests, answers time.Duration) {
	metrics.GangBindRequestSpread.Observe(requests.Seconds())
	metrics.GangBindAnswerSpread.Observe(answers.Seconds())
}

// dispatched starts following one gang's binds, dispatched together
// (commit.dispatch), before any of them can be answered.
func (b *bindSpread) dispatched(decisions []framework.Decision) {
	if len(decisions) < 2 {
		return
	}
	g := &gangBinds{left: len(decisions)}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range decisions {
		b.gangs[d.Task] = g
	}
}

// answered is the binder's binder.Answered: the answer came back now.
func (b *bindSpread) answered(d framework.Decision, sent time.Time, err error) {
	b.answer(d, sent, time.Now(), err)
}

// answer records that d's bind, sent at sent, was answered at at.
func (b *bindSpread) answer(d framework.Decision, sent, at time.Time, err error) {
	b.mu.Lock()
	g := b.gangs[d.Task]
	if g == nil {
		b.mu.Unlock()
		return
	}
	delete(b.gangs, d.Task)
	if g.firstSent.IsZero() || sent.Before(g.firstSent) {
		g.firstSent = sent
	}
	if sent.After(g.lastSent) {
		g.lastSent = sent
	}
	if g.firstAnswer.IsZero() || at.Before(g.firstAnswer) {
		g.firstAnswer = at
	}
	if at.After(g.lastAnswer) {
		g.lastAnswer = at
	}
	g.failed = g.failed || err != nil
	g.left--
	done := g.left == 0 && !g.failed
	b.mu.Unlock()
	if done {
		b.observe(g.lastSent.Sub(g.firstSent), g.lastAnswer.Sub(g.firstAnswer))
	}
}
