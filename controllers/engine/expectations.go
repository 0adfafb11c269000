package engine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// expectationTTL bounds how long a missed watch event can stall a job.
const expectationTTL = 5 * time.Minute

// expectations remembers the creations and deletions a reconcile made, and
// the job's own status writes, until the informer cache shows them. Until
// then the cache is known to be stale for that job, and acting on it would
// create a pod twice, count one failure twice, or write the job's status
// over a version it has already replaced (which the API server refuses as
// a conflict); the reconcile waits for the cache instead.
type expectations struct {
	mu    sync.Mutex
	byJob map[string]*jobExpectations
}

type jobExpectations struct {
	// creates holds the names of objects created but not yet in the cache.
	creates map[string]time.Time
	// deletes holds the UIDs of objects deleted but still in the cache
	// without a deletion timestamp.
	deletes map[types.UID]time.Time
	// status is the resourceVersion the job's last status write produced,
	// while the cache shows an older one; statusAt is when it was written.
	// With statusRefused, status is instead the version a refused write
	// was made over, and the cache must show a newer one.
	status        string
	statusAt      time.Time
	statusRefused bool
}

func newExpectations() *expectations {
	return &expectations{byJob: map[string]*jobExpectations{}}
}

func (e *expectations) forJob(job string) *jobExpectations {
	je, ok := e.byJob[job]
	if !ok {
		je = &jobExpectations{creates: map[string]time.Time{}, deletes: map[types.UID]time.Time{}}
		e.byJob[job] = je
	}
	return je
}

func (e *expectations) expectCreate(job string, key string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forJob(job).creates[key] = now
}

func (e *expectations) expectDelete(job string, uid types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forJob(job).deletes[uid] = now
}

// expectStatus records that a status write left the job at
// resourceVersion.
func (e *expectations) expectStatus(job, resourceVersion string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	je := e.forJob(job)
	je.status, je.statusAt, je.statusRefused = resourceVersion, now, false
}

// refusedStatus records that the API server refused a status write made
// over the job at resourceVersion, as a conflict or for a job not found:
// the job changed or went since, so a pass over the cached job at that
// version would only have its write refused again. The cache's next
// version of the job, or its deletion, brings the next pass.
func (e *expectations) refusedStatus(job, resourceVersion string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	je := e.forJob(job)
	je.status, je.statusAt, je.statusRefused = resourceVersion, now, true
}

// statusSeen drops the expectation of the job's last status write if the
// cached job (at resourceVersion) shows it (or, for a refused write, a
// version newer than the one written over), or it expired, and reports
// whether it is gone. A version that cannot be compared (not one the API
// server's storage gives) is taken as showing it: the expectation only
// saves a write the API server would refuse, and must never stall a job.
func (e *expectations) statusSeen(job, resourceVersion string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	je, ok := e.byJob[job]
	if !ok || je.status == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(resourceVersion, je.status)
	shown := c >= 0
	if je.statusRefused {
		shown = c > 0
	}
	if err != nil || shown || now.Sub(je.statusAt) > expectationTTL {
		je.status = ""
		e.dropIfEmpty(job, je)
		return true
	}
	return false
}

// dropIfEmpty forgets je once it expects nothing. e.mu is held.
func (e *expectations) dropIfEmpty(job string, je *jobExpectations) {
	if len(je.creates) == 0 && len(je.deletes) == 0 && je.status == "" {
		delete(e.byJob, job)
	}
}

// observedObject is what the cache shows of one object.
type observedObject struct {
	key         string
	uid         types.UID
	terminating bool
}

// satisfied drops the expectations of creations and deletions that the
// cached objects fulfil, or that expired, and reports whether none of them
// remain.
func (e *expectations) satisfied(job string, cached []observedObject, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	je, ok := e.byJob[job]
	if !ok {
		return true
	}
	present := make(map[string]bool, len(cached))
	live := make(map[types.UID]bool, len(cached))
	for _, o := range cached {
		present[o.key] = true
		if !o.terminating {
			live[o.uid] = true
		}
	}
	for key, at := range je.creates {
		if present[key] || now.Sub(at) > expectationTTL {
			delete(je.creates, key)
		}
	}
	for uid, at := range je.deletes {
		if !live[uid] || now.Sub(at) > expectationTTL {
			delete(je.deletes, uid)
		}
	}
	e.dropIfEmpty(job, je)
	return len(je.creates) == 0 && len(je.deletes) == 0
}

// createFailed drops the expectation of a creation the API server refused.
func (e *expectations) createFailed(job, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if je, ok := e.byJob[job]; ok {
		delete(je.creates, key)
	}
}

// deleteFailed drops the expectation of a deletion the API server refused.
func (e *expectations) deleteFailed(job string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if je, ok := e.byJob[job]; ok {
		delete(je.deletes, uid)
	}
}

// forget drops everything expected for a job that is gone.
func (e *expectations) forget(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byJob, job)
}
