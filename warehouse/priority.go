package warehouse

import "runtime"

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

// onLoweredThread runs f on an OS thread of its own whose scheduling priority is
// lowered to nice (where the platform allows it), and returns what f returns; with a
// nice of 0 or less, on the caller's thread. The thread is never handed back to the Go
// scheduler: it ends with f, and its priority with it (a process without privileges
// cannot raise a priority back). A panic in f is raised again in the caller's
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
	go func() {
		var o outcome
		defer func() {
			o.panic = recover()
			done <- o
		}()
		runtime.LockOSThread() // not unlocked: the thread exits with this goroutine
		lowerThreadPriority(nice)
		o.value, o.err = f()
	}()
	o := <-done
	if o.panic != nil {
		panic(o.panic)
	}
	return o.value, o.err
}
