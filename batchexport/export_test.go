package batchexport

import "context"

// Queue queues what a tick of a started Runner would, the windows of the schedules and
// of the backfills, without running them: tests of the queue drive it by hand.
func (r *Runner) Queue(ctx context.Context) error { return r.queue(ctx) }
