package measure

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Tracker follows the pods of a run through a watch: when each is first
// seen bound, and when each gang has all its pods bound. It is a
// client-go event handler. ReplayAudit fills one from the API server's
// audit log instead.
type Tracker struct {
	mu       sync.Mutex
	now      func() time.Time
	start    time.Time
	gangSize map[string]int
	// bound holds the pods bound, by UID when watched and by
	// namespace/name when replayed from the audit log.
	bound map[string]bool
	// gangOf is each pod's gang, by namespace/name, for ReplayAudit.
	gangOf    map[string]string
	gangBound map[string]int
	binds     []time.Duration
	gangsDone map[string]time.Duration
	// partial are the episodes in which a gang had some but not all of
	// its pods bound, in the order they began; open holds the index of
	// each gang's episode under way.
	partial []PartialEpisode
	open    map[string]int
	// unbound counts the pods that exist and are not bound: the backlog.
	unbound  int
	onGangUp func(gang string)
}

// NewTracker tracks gangs of the given sizes (by name); onGangUp, if not
// nil, is called (outside the lock) when a gang's last pod is bound.
func NewTracker(gangSize map[string]int, onGangUp func(gang string)) *Tracker {
	return &Tracker{
		now: time.Now, gangSize: gangSize, bound: map[string]bool{}, gangOf: map[string]string{},
		gangBound: map[string]int{}, gangsDone: map[string]time.Duration{}, open: map[string]int{}, onGangUp: onGangUp,
	}
}

// Start starts the clock: binds are timed from now.
func (t *Tracker) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = t.now()
}

// StartedAt is when the clock started (Start).
func (t *Tracker) StartedAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.start
}

// Elapsed is the time since the clock's start.
func (t *Tracker) Elapsed() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.now().Sub(t.start)
}

// DoneAt is when each gang bound whole so far had its last pod bound,
// from the clock's start.
func (t *Tracker) DoneAt() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.gangsDone)
}

var _ toolscache.ResourceEventHandler = &Tracker{}

func (t *Tracker) OnAdd(obj any, _ bool) {
	if pod, ok := obj.(*corev1.Pod); ok {
		t.mu.Lock()
		t.unbound++
		t.gangOf[podKey(pod.Namespace, pod.Name)] = scenario.GangOf(pod)
		t.mu.Unlock()
		t.observe(pod)
	}
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// GangsOfPods is each pod seen so far's gang, by namespace/name.
func (t *Tracker) GangsOfPods() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.gangOf)
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
	if !t.unbind(string(pod.UID), scenario.GangOf(pod), t.now().Sub(t.start)) {
		t.unbound--
	}
}

// unbind records that the pod key of gang went at at, and reports whether
// it was bound. A bound member deleted from a gang not yet whole (a
// scheduler reclaiming a partial gang): the gang has fewer bound, and is
// no longer partial once none is. t.mu is held.
func (t *Tracker) unbind(key, gang string, at time.Duration) bool {
	if !t.bound[key] {
		return false
	}
	if _, done := t.gangsDone[gang]; done {
		return true
	}
	t.gangBound[gang]--
	if t.gangBound[gang] <= 0 {
		t.closeEpisode(gang, at)
	}
	return true
}

// closeEpisode ends gang's partial episode under way, if any, at at.
func (t *Tracker) closeEpisode(gang string, at time.Duration) {
	if i, ok := t.open[gang]; ok {
		t.partial[i].To = at
		delete(t.open, gang)
	}
}

func (t *Tracker) observe(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	t.mu.Lock()
	if t.bound[string(pod.UID)] {
		t.mu.Unlock()
		return
	}
	t.unbound--
	gang := scenario.GangOf(pod)
	up := t.bind(string(pod.UID), gang, max(t.now().Sub(t.start), 0))
	t.mu.Unlock()
	if up && t.onGangUp != nil {
		t.onGangUp(gang)
	}
}

// bind records that the pod key of gang, not bound before, was bound at
// at, and reports whether that made the gang whole. t.mu is held.
func (t *Tracker) bind(key, gang string, at time.Duration) bool {
	t.bound[key] = true
	t.binds = append(t.binds, at)
	t.gangBound[gang]++
	up := t.gangBound[gang] == t.gangSize[gang]
	if _, ok := t.open[gang]; !ok && !up {
		t.open[gang] = len(t.partial)
		t.partial = append(t.partial, PartialEpisode{Gang: gang, From: at, To: -1})
	}
	if up {
		t.gangsDone[gang] = at
		t.closeEpisode(gang, at)
	}
	return up
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

// PartialEpisode is a time in which a gang had some but not all of its
// pods bound: from its first bind to its last (or to when its last bound
// member was deleted). To is -1 while the episode is under way.
type PartialEpisode struct {
	Gang     string
	From, To time.Duration
}

// PartialLongerThan lists the partial episodes that lasted longer than
// grace by now, with those still under way counted up to now, longest
// first. The tracker hears every bind, so these are the partial gangs of
// the whole run, not of a sample of moments.
func (t *Tracker) PartialLongerThan(grace time.Duration) []PartialEpisode {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now().Sub(t.start)
	var out []PartialEpisode
	for _, e := range t.partial {
		if e.To < 0 {
			e.To = now
		}
		if e.Duration() > grace {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b PartialEpisode) int { return cmp.Compare(b.Duration(), a.Duration()) })
	return out
}

// Duration is how long the episode lasted.
func (e PartialEpisode) Duration() time.Duration { return e.To - e.From }

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
