package edge

import (
	"hash/maphash"
	"sync"
)

// overflowLimiter decides which realtime events go to the overflow lane: those of a
// (project, distinct_id) that sends faster than rate events a second, past a burst of
// burst. Overflow events are committed after the realtime ones of each group, never
// dropped (PostHog routes them to its overflow topic for the same reason: one hot
// distinct_id must not slow everyone else).
//
// It is a fixed table of token buckets indexed by a hash of the key, so its memory is
// the same whatever the number of distinct ids. Two keys that share a bucket share a
// rate, which can only send more events to overflow, never lose one.
type overflowLimiter struct {
	rate, burst float64
	seed        maphash.Seed
	shards      [256]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex
	buckets [256]tokenBucket
}

type tokenBucket struct {
	tokens float64
	last   int64 // unix nanoseconds of the last refill; 0 for a bucket never used
}

// newOverflowLimiter returns nil, which lets every event through, when rate is 0.
func newOverflowLimiter(rate, burst float64) *overflowLimiter {
	if rate <= 0 {
		return nil
	}
	return &overflowLimiter{rate: rate, burst: max(burst, 1), seed: maphash.MakeSeed()}
}

// allow takes a token for one event of the key at now (unix nanoseconds) and reports
// whether there was one.
func (l *overflowLimiter) allow(team int64, distinctID string, now int64) bool {
	if l == nil {
		return true
	}
	h := maphash.String(l.seed, distinctID) ^ (uint64(team) * 0x9e3779b97f4a7c15)
	shard := &l.shards[(h>>8)&0xff]
	shard.mu.Lock()
	defer shard.mu.Unlock()
	b := &shard.buckets[h&0xff]
	if b.last == 0 {
		b.tokens = l.burst
	} else if elapsed := now - b.last; elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+float64(elapsed)/1e9*l.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
