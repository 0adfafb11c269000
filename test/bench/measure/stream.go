package measure

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// Stream is what a run measured of gangs that arrive during it (TS): how
// many arrived and were bound whole, how long each waited, and the GPUs
// stranded while gangs waited.
type Stream struct {
	// Arrived counts the gangs created during the run; Bound those of
	// them bound whole.
	Arrived, Bound int
	// Waits are, per arrived gang, the time from its arrival to its last
	// pod bound; for a gang never bound whole, to the end of the run: a
	// lower bound, so that a gang left waiting does not shorten the
	// figure. In order, shortest first.
	Waits []time.Duration
	// WaitsBy are the same waits by the gang's workers (its GPU pods).
	WaitsBy map[int][]time.Duration
	// Stranded are the GPUs stranded (Stranding.StrandedGPUs), one sample
	// per tick at which some gang waited; Free the GPUs free at the same
	// ticks, stranded or not.
	Stranded, Free []int64
}

// StreamOf reads a stream's waits from when each gang arrived and when
// each gang was bound whole (both from the clock's start), at the end of
// the run, end; workers are each gang's GPU pods. The samples of GPUs
// stranded are the caller's to add.
func StreamOf(arrived, done map[string]time.Duration, end time.Duration, workers map[string]int) Stream {
	s := Stream{Arrived: len(arrived), WaitsBy: map[int][]time.Duration{}}
	for gang, at := range arrived {
		up, ok := done[gang]
		if ok {
			s.Bound++
		} else {
			up = end
		}
		w := max(up-at, 0)
		s.Waits = append(s.Waits, w)
		s.WaitsBy[workers[gang]] = append(s.WaitsBy[workers[gang]], w)
	}
	slices.Sort(s.Waits)
	for _, ws := range s.WaitsBy {
		slices.Sort(ws)
	}
	return s
}

// Wait is the q-quantile of the waits, nearest rank (0 with none).
func (s Stream) Wait(q float64) time.Duration { return quantileOf(s.Waits, q) }

// WaitOf is the q-quantile of the waits of gangs of that many workers.
func (s Stream) WaitOf(workers int, q float64) time.Duration {
	return quantileOf(s.WaitsBy[workers], q)
}

// StrandedMedian is the median of the samples of GPUs stranded, nearest
// rank (0 with none: no gang ever waited at a tick).
func (s Stream) StrandedMedian() int64 { return quantileOf(s.Stranded, 0.5) }

// FreeMedian is the median of the samples of GPUs free.
func (s Stream) FreeMedian() int64 { return quantileOf(s.Free, 0.5) }

// StrandedMax is the largest sample of GPUs stranded.
func (s Stream) StrandedMax() int64 { return quantileOf(s.Stranded, 1) }

// quantileOf is Quantile over durations or counts.
func quantileOf[T time.Duration | int64](xs []T, q float64) T {
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	return T(Quantile(fs, q))
}

// StrandingTick is how often a run of a stream samples the GPUs
// stranded.
const StrandingTick = 250 * time.Millisecond

// StrandingSampler samples, during a run, the GPUs that no waiting gang
// can use, as StrandingOf reads them at a run's end (TM): the nodes and
// the background pods are fixed for the run; the gangs' pods and which
// gangs are whole are read at each sample.
type StrandingSampler struct {
	nodes      []*corev1.Node
	background []*corev1.Pod
	label      string
	stranded   []int64
	free       []int64
}

// NewStrandingSampler samples over nodes, with the background pods bound
// to them, racks by label.
func NewStrandingSampler(nodes []*corev1.Node, background []*corev1.Pod, label string) *StrandingSampler {
	return &StrandingSampler{nodes: nodes, background: background, label: label}
}

// Sample reads the GPUs stranded now, from the gangs' pods and the gangs
// that do not wait (bound whole, or not yet arrived whole), and keeps the
// figure if some gang waits: with none waiting nothing is stranded, and a
// run's figure is over the moments when gangs waited. It says whether it
// kept one.
func (s *StrandingSampler) Sample(gangPods []*corev1.Pod, notWaiting map[string]bool) bool {
	all := append(slices.Clone(s.background), gangPods...)
	st := StrandingOf(s.nodes, all, gangPods, notWaiting, s.label)
	if st.Waiting == 0 {
		return false
	}
	s.stranded = append(s.stranded, st.StrandedGPUs)
	s.free = append(s.free, st.FreeGPUs)
	return true
}

// Samples are the GPUs stranded at each sample kept, in order, and the
// GPUs free then.
func (s *StrandingSampler) Samples() (stranded, free []int64) {
	return slices.Clone(s.stranded), slices.Clone(s.free)
}

// BindLog keeps every pod as it was first seen bound, so that the racks of
// gangs deleted during a run (TS) can still be read (RacksOf). It is a
// client-go event handler.
type BindLog struct {
	mu   sync.Mutex
	seen map[types.UID]bool
	pods []*corev1.Pod
}

// NewBindLog returns an empty log.
func NewBindLog() *BindLog { return &BindLog{seen: map[types.UID]bool{}} }

var _ toolscache.ResourceEventHandler = &BindLog{}

func (l *BindLog) OnAdd(obj any, _ bool) { l.observe(obj) }
func (l *BindLog) OnUpdate(_, obj any)   { l.observe(obj) }
func (l *BindLog) OnDelete(any)          {}

func (l *BindLog) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen[pod.UID] {
		l.seen[pod.UID] = true
		l.pods = append(l.pods, pod)
	}
}

// Pods are the pods seen bound, each once, in the order they were.
func (l *BindLog) Pods() []*corev1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pods)
}
