package warehouse

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the nice value of the calling OS thread (on Linux a
// priority is per thread) to queryNice. A failure leaves the priority as it was: the
// query runs all the same.
func lowerThreadPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), queryNice)
}
