//go:build !linux

package warehouse

// lowerThreadPriority does nothing where a thread's priority cannot be set alone.
func lowerThreadPriority(int) {}
