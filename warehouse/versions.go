package warehouse

import (
	"sync"
	"sync/atomic"
)

// dataVersions counts, per project, the commits that added rows to it, so that cached
// query results can tell that their project has new data. The Writer bumps it after
// each commit; readers only compare.
type dataVersions struct {
	m sync.Map // project id → *atomic.Uint64
}

func (v *dataVersions) counter(team int64) *atomic.Uint64 {
	if c, ok := v.m.Load(team); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := v.m.LoadOrStore(team, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (v *dataVersions) bump(team int64)       { v.counter(team).Add(1) }
func (v *dataVersions) get(team int64) uint64 { return v.counter(team).Load() }
