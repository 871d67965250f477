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

// run hands f to an idle thread of the pool, starts one when none is idle and the pool
// has room, and else waits for one to be idle.
func (p *loweredPool) run(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	p.mu.Lock()
	if p.threads < loweredThreadsPerPool {
		p.threads++
		go p.thread()
	}
	p.mu.Unlock()
	p.work <- f
}

func (p *loweredPool) thread() {
	runtime.LockOSThread() // for the life of the process: see loweredPool
	lowerThreadPriority(p.nice)
	for f := range p.work {
		f()
	}
}

// runAlongside runs f on a thread of nice's pool as soon as one is idle, without its
// caller waiting for one (a goroutine waits); with nice <= 0, on a goroutine of its own.
// A caller that needs f's work done must not wait for f to start: the threads may all
// be running callers like it.
func runAlongside(nice int, f func()) {
	if nice <= 0 {
		go f()
		return
	}
	go loweredPoolOf(nice).run(f)
}
