//go:build !linux

package main

// lowerThreadPriority does nothing where a priority is not per thread.
func lowerThreadPriority() {}
