package edge

import (
	"runtime"
	"sync"
	"time"
)

// flagSlots bounds the /flags/ evaluations of one project that run at once, so that
// one project's flags (whose token is public: any visitor of its site can send
// requests) take at most that many cores from the others and from ingestion. A request
// waits up to flagSlotWait for a slot of its project and is answered 429 if none
// frees: the project is busy with evaluations that each run up to
// flagEvaluationTimeout.
type flagSlots struct {
	limit int
	// projects holds each project's semaphore (a channel of limit slots), made on its
	// first evaluation and kept: one small channel per project that evaluates flags.
	projects sync.Map // int64 → chan struct{}
}

// flagSlotWait is how long a /flags/ request waits for a slot of its project.
const flagSlotWait = 100 * time.Millisecond

// defaultFlagEvaluations is how many evaluations of one project run at once when the
// configuration says nothing: half the cores, at least one.
func defaultFlagEvaluations() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func newFlagSlots(limit int) *flagSlots {
	if limit <= 0 {
		limit = defaultFlagEvaluations()
	}
	return &flagSlots{limit: limit}
}

func (fs *flagSlots) of(team int64) chan struct{} {
	if sem, ok := fs.projects.Load(team); ok {
		return sem.(chan struct{})
	}
	sem, _ := fs.projects.LoadOrStore(team, make(chan struct{}, fs.limit))
	return sem.(chan struct{})
}

// acquire takes a slot of the project, waiting up to flagSlotWait, and returns the
// project's semaphore, to give the slot back to with releaseSlot; ok is false when no slot
// freed.
func (fs *flagSlots) acquire(team int64) (sem chan struct{}, ok bool) {
	sem = fs.of(team)
	select {
	case sem <- struct{}{}:
		return sem, true
	default:
	}
	wait := time.NewTimer(flagSlotWait)
	defer wait.Stop()
	select {
	case sem <- struct{}{}:
		return sem, true
	case <-wait.C:
		return nil, false
	}
}

// releaseSlot gives back a slot that acquire took.
func releaseSlot(sem chan struct{}) { <-sem }
