package warehouse

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the nice value of the calling OS thread (on Linux a
// priority is per thread) to nice. A failure leaves the priority as it was: the query
// runs all the same.
func lowerThreadPriority(nice int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice)
}
