package check

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Waiting with room: how long a gang waited while the cluster's free room
// could hold it.
//
// A gang waits for the scheduler when its PodGroup exists, its job has
// not finished and is not being deleted, some members wait for a node
// (no node, not finished, not being deleted, no scheduling gates), and
// with those placed the gang would reach its minMember and every
// minTaskMember (counting the members that hold a node or succeeded). It
// waits with room while those pending members can all be placed node by
// node on the free room (fit.go: each node's allocatable less its bound,
// unfinished pods' requests, honouring selectors, taints and cordons).
// The clock runs from the first check that finds it so to the first that
// does not; the time no scheduler led (SchedulerDown to SchedulerUp) is
// left out of the led figure, as in the partial-gang clock. Checked on
// every Tick after an event changed anything (every half second in the
// soak), so a wait is known to that resolution.
//
// Waiting with room is a figure, not an invariant: the room may rightly
// go to another gang first. A gang ahead of it in the scheduler's order
// (a higher priority; its queue's share; one admitted earlier whose need
// the admission budget still counts; a preemptor whose victims are
// leaving) may take or hold it, and two gangs that each fit alone may
// not fit together. Telling those apart needs the scheduler's order and
// budgets replayed, which would no longer check the scheduler
// independently.
//
// What is an invariant (WaitedWithRoom) is the case none of that can
// explain: the gang waits with room while no other gang wants any (every
// other gang that has a PodGroup or pods holds its minimum and has no
// member waiting for a node), its pending members fit however they are
// placed (alwaysPlaces: any scheduler that places pods one at a time on
// feasible nodes, in any order, places them all), and a scheduler leads,
// for longer than WaitLimit. Nothing is ahead of it and no choice of the
// scheduler's can lead it astray, so such a wait is the scheduler
// missing a gang it must place (as the succeeded-member bug of
// 2026-11-24 did, which the stuck-job check caught only at the end).

// WaitStats are the report's figures of waiting with room.
type WaitStats struct {
	// Episodes counts the times a gang began to wait with room.
	Episodes int
	// Longest is the longest such wait, LongestLed the same without the
	// time no scheduler led; Job names its job, Gang its PodGroup.
	Longest, LongestLed time.Duration
	Job, Gang           string
	// LongestAloneLed is the longest wait with room while no other gang
	// wanted any and every placement fitted, with a scheduler leading:
	// the invariant's measure; AloneJob names its job.
	LongestAloneLed time.Duration
	AloneJob        string
}

// waitRecord is a gang's current waits, zero times while it does not.
type waitRecord struct {
	// since: waiting with room; aloneSince: that, while no other gang
	// wanted room and every placement fitted.
	since, aloneSince time.Time
}

// gangNeed is what a gang has and wants: the members that count toward
// its minimums (holding a node or succeeded) by role, and those waiting
// for a node.
type gangNeed struct {
	kept    int32
	byRole  map[string]int32
	pending []Pod
}

func (c *Checker) gangNeed(key string) gangNeed {
	n := gangNeed{byRole: map[string]int32{}}
	for _, uid := range slices.Sorted(maps.Keys(c.gangs[key].pods)) {
		r := c.pods[uid]
		if r == nil {
			continue
		}
		p := r.cur
		switch {
		case p.Phase == corev1.PodSucceeded || (p.Node != "" && !p.Terminal() && !p.Terminating):
			n.kept++
			n.byRole[p.Role]++
		case p.Node == "" && !p.Terminal() && !p.Terminating && !p.Gated:
			n.pending = append(n.pending, p)
		}
	}
	return n
}

// waiting returns the gang's pending members if it waits for the
// scheduler (see above).
func (c *Checker) waiting(key string) ([]Pod, bool) {
	g, ok := c.groups[key]
	if !ok {
		return nil, false
	}
	if j := c.jobs[g.OwnerUID]; j == nil || !j.seen || j.gone || j.cur.Finished() || j.cur.Deleting {
		return nil, false
	}
	n := c.gangNeed(key)
	if len(n.pending) == 0 || n.kept+int32(len(n.pending)) < g.MinMember {
		return nil, false
	}
	for role, min := range g.MinTaskMember {
		have := n.byRole[role]
		for _, p := range n.pending {
			if p.Role == role {
				have++
			}
		}
		if have < min {
			return nil, false
		}
	}
	return n.pending, true
}

// othersContent reports whether no gang but key wants room: every other
// gang (with a PodGroup or pods) holds its minMember and has no member
// waiting for a node.
func (c *Checker) othersContent(key string) bool {
	for other := range c.gangs {
		if other == key {
			continue
		}
		n := c.gangNeed(other)
		if len(n.pending) > 0 {
			return false
		}
		if g, ok := c.groups[other]; ok && n.kept < g.MinMember {
			return false
		}
	}
	return true
}

// rooms is the free room of every node there is, by name.
func (c *Checker) rooms() []room {
	nodes := make([]Node, 0, len(c.nodes))
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		nodes = append(nodes, c.nodes[name])
	}
	return freeRoom(nodes, func(node string) corev1.ResourceList { return c.nodeUsage(node).Requests })
}

// touch notes an event at t: the waits may have changed.
func (c *Checker) touch(t time.Time) {
	if c.touched.IsZero() {
		c.touched = t
	}
}

// checkWaits starts and ends every gang's waits. What changed came
// between the last check and t: a wait found now is taken to start at t,
// one found over to have ended at the first event since the last check,
// so that neither end is stretched.
func (c *Checker) checkWaits(t time.Time) {
	end := c.touched
	rooms := c.rooms()
	for _, key := range slices.Sorted(maps.Keys(c.gangs)) {
		g := c.gangs[key]
		pending, ok := c.waiting(key)
		fits := ok && canPlace(pending, rooms)
		alone := fits && c.othersContent(key) && alwaysPlaces(pending, rooms)
		w := &g.wait
		switch {
		case fits && w.since.IsZero():
			w.since = t
			c.stats.Waits.Episodes++
		case !fits && !w.since.IsZero():
			c.noteWait(key, w.since, end)
			w.since = time.Time{}
		}
		switch {
		case alone && w.aloneSince.IsZero():
			w.aloneSince = t
		case !alone && !w.aloneSince.IsZero():
			c.noteAloneWait(end, key, w.aloneSince, pending)
			w.aloneSince = time.Time{}
			c.resolve("wait/" + key)
		}
	}
	c.touched = time.Time{}
}

// waitClocks runs the clocks of the waits going on, between checks.
func (c *Checker) waitClocks(t time.Time) {
	for _, key := range slices.Sorted(maps.Keys(c.gangs)) {
		w := c.gangs[key].wait
		if !w.since.IsZero() {
			c.noteWait(key, w.since, t)
		}
		if !w.aloneSince.IsZero() {
			pending, _ := c.waiting(key)
			c.noteAloneWait(t, key, w.aloneSince, pending)
		}
	}
}

// endWait ends the gang's waits as it goes away.
func (c *Checker) endWait(t time.Time, key string, g *gangRecord) {
	if !g.wait.since.IsZero() {
		c.noteWait(key, g.wait.since, t)
	}
	g.wait = waitRecord{}
	c.resolve("wait/" + key)
}

func (c *Checker) groupJob(key string) string {
	if g, ok := c.groups[key]; ok {
		return c.jobName(g.OwnerUID)
	}
	return "gang " + key
}

func (c *Checker) noteWait(key string, since, now time.Time) {
	raw, led := now.Sub(since), c.ledTime(since, now)
	s := &c.stats.Waits
	if led > s.LongestLed || (led == s.LongestLed && raw > s.Longest) {
		s.LongestLed, s.Longest, s.Gang, s.Job = led, raw, key, c.groupJob(key)
	}
}

// noteAloneWait measures a wait with room and nothing ahead, and flags
// it past the limit.
func (c *Checker) noteAloneWait(t time.Time, key string, since time.Time, pending []Pod) {
	led := c.ledTime(since, t)
	s := &c.stats.Waits
	if led > s.LongestAloneLed {
		s.LongestAloneLed, s.AloneJob = led, c.groupJob(key)
	}
	if led <= c.cfg.WaitLimit {
		return
	}
	var names []string
	for _, p := range pending {
		names = append(names, p.Name)
	}
	c.violate(t, "wait/"+key, WaitedWithRoom, c.groupJob(key), fmt.Sprintf(
		"gang %s waited since %s (%s with a scheduler leading; limit %s) with room for its pending members %v, however placed, while no other gang wanted room",
		key, since.UTC().Format("15:04:05.000"), led.Round(100*time.Millisecond), c.cfg.WaitLimit, names))
}
