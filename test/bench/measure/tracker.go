package measure

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Tracker follows the pods of a run through a watch: when each is first
// seen bound, and when each gang has all its pods bound. It is a
// client-go event handler.
type Tracker struct {
	mu        sync.Mutex
	now       func() time.Time
	start     time.Time
	gangSize  map[string]int
	bound     map[types.UID]bool
	gangBound map[string]int
	binds     []time.Duration
	gangsDone map[string]time.Duration
	// unbound counts the pods that exist and are not bound: the backlog.
	unbound  int
	onGangUp func(gang string)
}

// NewTracker tracks gangs of the given sizes (by name); onGangUp, if not
// nil, is called (outside the lock) when a gang's last pod is bound.
func NewTracker(gangSize map[string]int, onGangUp func(gang string)) *Tracker {
	return &Tracker{
		now: time.Now, gangSize: gangSize, bound: map[types.UID]bool{},
		gangBound: map[string]int{}, gangsDone: map[string]time.Duration{}, onGangUp: onGangUp,
	}
}

// Start starts the clock: binds are timed from now.
func (t *Tracker) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = t.now()
}

var _ toolscache.ResourceEventHandler = &Tracker{}

func (t *Tracker) OnAdd(obj any, _ bool) {
	if pod, ok := obj.(*corev1.Pod); ok {
		t.mu.Lock()
		t.unbound++
		t.mu.Unlock()
		t.observe(pod)
	}
}

func (t *Tracker) OnUpdate(_, obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		t.observe(pod)
	}
}

func (t *Tracker) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.bound[pod.UID] {
		t.unbound--
	}
}

func (t *Tracker) observe(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	t.mu.Lock()
	if t.bound[pod.UID] {
		t.mu.Unlock()
		return
	}
	at := max(t.now().Sub(t.start), 0)
	t.bound[pod.UID] = true
	t.unbound--
	t.binds = append(t.binds, at)
	gang := scenario.GangOf(pod)
	t.gangBound[gang]++
	up := t.gangBound[gang] == t.gangSize[gang]
	if up {
		t.gangsDone[gang] = at
	}
	t.mu.Unlock()
	if up && t.onGangUp != nil {
		t.onGangUp(gang)
	}
}

// Progress is a tracker's counts at one moment.
type Progress struct {
	Bound, GangsDone, Unbound int
	// SinceLastBind is how long ago the last pod was bound (the time
	// since the start before the first).
	SinceLastBind time.Duration
}

// Progress returns the counts now.
func (t *Tracker) Progress() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := Progress{Bound: len(t.binds), GangsDone: len(t.gangsDone), Unbound: t.unbound}
	last := time.Duration(0)
	if n := len(t.binds); n > 0 {
		last = t.binds[n-1]
	}
	p.SinceLastBind = t.now().Sub(t.start) - last
	return p
}

// Throughput summarizes the binds so far.
func (t *Tracker) Throughput() Throughput {
	t.mu.Lock()
	defer t.mu.Unlock()
	done := make([]time.Duration, 0, len(t.gangsDone))
	for _, d := range t.gangsDone {
		done = append(done, d)
	}
	return Summarize(t.binds, done)
}

// GangsNeverUp lists the gangs that never had all their pods bound.
func (t *Tracker) GangsNeverUp() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for g := range t.gangSize {
		if _, ok := t.gangsDone[g]; !ok {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// BoundWhole says, by gang, whether all its pods in pods are bound.
func BoundWhole(pods []*corev1.Pod, gangSize map[string]int) map[string]bool {
	bound := boundByGang(pods)
	out := map[string]bool{}
	for g, n := range gangSize {
		out[g] = bound[g] >= n
	}
	return out
}

func boundByGang(pods []*corev1.Pod) map[string]int {
	bound := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			bound[scenario.GangOf(p)]++
		}
	}
	return bound
}

// PartialGangs lists the gangs of which pods some, but not all, are
// bound in pods (the state at the end of a run).
func PartialGangs(pods []*corev1.Pod, gangSize map[string]int) []string {
	var out []string
	for g, n := range boundByGang(pods) {
		if n < gangSize[g] {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}
