package main

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the nice value of the calling OS thread (on Linux a
// priority is per thread) to hedge's for users' queries. A failure leaves the priority
// as it was.
func lowerThreadPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), queryNice)
}
