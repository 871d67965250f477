package flags

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
)

// definitionsCache holds the Definitions of the most recently read projects, at most
// max of them (least recently read dropped first), each with its local evaluation
// body once asked for.
//
// A change invalidates its project at once: the entry goes, and a fill of the project
// that is reading the database at that moment is marked stale, so that what it read
// (possibly from before the change) is handed to the callers that were already
// waiting for it but never kept. A read that starts after the invalidation starts a
// fill of its own, so it sees the change.
type definitionsCache struct {
	mu      sync.Mutex
	max     int
	entries map[int64]*list.Element // of *cacheEntry, most recently read at the front
	lru     *list.List
	fills   map[int64]*fill // the fill in progress of a project, if any
}

// cacheEntry is one project's definitions. defs is never changed once built; local
// is built from them on the first local evaluation request.
type cacheEntry struct {
	team  int64
	defs  *Definitions
	local atomic.Pointer[localEvaluation]
}

// fill is a read of one project's definitions from the database, which concurrent
// readers of that project wait for rather than read again.
type fill struct {
	done  chan struct{}
	entry *cacheEntry
	err   error
	stale bool // a change came while it read: it is not kept
}

func newDefinitionsCache(max int) *definitionsCache {
	return &definitionsCache{max: max, entries: map[int64]*list.Element{}, lru: list.New(), fills: map[int64]*fill{}}
}

// get returns the project's entry, from memory or read by load. The read is not
// cancelled with ctx (others may wait for it); a caller whose ctx ends stops waiting.
func (c *definitionsCache) get(ctx context.Context, team int64, load func(context.Context, int64) (*Definitions, error)) (*cacheEntry, error) {
	c.mu.Lock()
	if el, ok := c.entries[team]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cacheEntry), nil
	}
	f, filling := c.fills[team]
	if !filling {
		f = &fill{done: make(chan struct{})}
		c.fills[team] = f
	}
	c.mu.Unlock()
	if filling {
		select {
		case <-f.done:
			return f.entry, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	defs, err := load(context.WithoutCancel(ctx), team)
	c.mu.Lock()
	if c.fills[team] == f {
		delete(c.fills, team)
	}
	f.err = err
	if err == nil {
		f.entry = &cacheEntry{team: team, defs: defs}
		if !f.stale {
			c.keep(f.entry)
		}
	}
	c.mu.Unlock()
	close(f.done)
	return f.entry, f.err
}

// keep adds an entry, dropping the least recently read past max. c.mu is held.
func (c *definitionsCache) keep(e *cacheEntry) {
	if el, ok := c.entries[e.team]; ok {
		c.lru.Remove(el)
	}
	c.entries[e.team] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).team)
	}
}

// invalidate drops the project's entry and makes its fill in progress stale.
func (c *definitionsCache) invalidate(team int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[team]; ok {
		c.lru.Remove(el)
		delete(c.entries, team)
	}
	if f, ok := c.fills[team]; ok {
		f.stale = true
		delete(c.fills, team)
	}
}

// len is how many projects are held.
func (c *definitionsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
