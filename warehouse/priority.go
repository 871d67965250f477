package warehouse

import (
	"runtime"
	"sync"
)

// Users' queries yield the CPU to ingestion. On a small machine a query that keeps
// every core busy (SELECT count(*) FROM range(1e12) runs until its time limit) starved
// the writer: a checkpoint that takes a second took 13 s, every commit waited behind it,
// and another tenant's /batch/ load fell to a third of its rate or stopped. So the
// users' queries run on OS threads of lowered priority (QueryLimits.Nice), as do DuckDB's
// worker threads, which run the parallel parts of queries: a thread inherits the
// priority of the thread that creates it, and the database is opened from a lowered
// thread. The writer runs on the Go runtime's threads at normal priority, and so does
// the part of its checkpoints that it runs itself. On an idle machine a lowered thread
// runs as fast as any; only when threads compete does the scheduler favour the others
// (nice 10 weighs about a tenth of nice 0 on Linux).
const DefaultQueryNice = 10

// onLoweredThread runs f on an OS thread whose scheduling priority is lowered to nice
// (where the platform allows it), and returns what f returns; with a nice of 0 or
// less, on the caller's thread. A panic in f is raised again in the caller's
// goroutine, where the caller's recovery sees it.
func onLoweredThread[T any](nice int, f func() (T, error)) (T, error) {
	if nice <= 0 {
		return f()
	}
	type outcome struct {
		value T
		err   error
		panic any
	}
	done := make(chan outcome, 1)
	loweredPoolOf(nice).run(func() {
		var o outcome
		defer func() {
			o.panic = recover()
			done <- o
		}()
		o.value, o.err = f()
	})
	o := <-done
	if o.panic != nil {
		panic(o.panic)
	}
	return o.value, o.err
}

// loweredThreadsPerPool bounds the threads of one priority: more than the query pool's
// connections, the funnels and an Open at once need.
const loweredThreadsPerPool = 8

// loweredPool is a set of OS threads of one lowered priority, each locked to a
// goroutine that runs the functions sent to work, one at a time. The threads live as
// long as the process: a thread's priority cannot be raised back without privileges,
// so it is never handed back to the Go scheduler, and ending it instead would end a
// thread that ran DuckDB's C++ without its thread-local cleanup, which Go's exit of a
// locked thread skips.
type loweredPool struct {
	nice    int
	work    chan func()
	mu      sync.Mutex
	threads int
}

// loweredPools holds a pool per nice value, made on first use.
var loweredPools sync.Map // int -> *loweredPool

func loweredPoolOf(nice int) *loweredPool {
	if p, ok := loweredPools.Load(nice); ok {
		return p.(*loweredPool)
	}
	p, _ := loweredPools.LoadOrStore(nice, &loweredPool{nice: nice, work: make(chan func())})
	return p.(*loweredPool)
}

// run hands f to an idle thread of the pool, starts one for it when none is idle and
// the pool has room, and else waits for one to be idle.
func (p *loweredPool) run(f func()) {
	if !p.tryRun(f) {
		p.work <- f
	}
}

// tryRun hands f to an idle thread of the pool, or starts one for it when the pool has
// room, and reports whether it did; it never waits for a thread.
func (p *loweredPool) tryRun(f func()) bool {
	select {
	case p.work <- f:
		return true
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.threads >= loweredThreadsPerPool {
		return false
	}
	p.threads++
	go p.thread(f)
	return true
}

// thread runs first, then the functions sent to the pool's work.
func (p *loweredPool) thread(first func()) {
	runtime.LockOSThread() // for the life of the process: see loweredPool
	lowerThreadPriority(p.nice)
	first()
	for f := range p.work {
		f()
	}
}

// tryAlongside starts f on a thread of nice's pool, idle or new, and reports whether
// it did: when every thread of the pool is busy it does not wait, and the caller does
// f's work itself. With nice <= 0 f runs on a goroutine of its own.
func tryAlongside(nice int, f func()) bool {
	if nice <= 0 {
		go f()
		return true
	}
	return loweredPoolOf(nice).tryRun(f)
}
