package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
)

// funnelTallies runs a funnel's query and folds its rows, each person's in time order,
// on the calling thread (which the caller lowers as run does).
//
// Without a breakdown, and with each row's time and steps one number, the rows come in
// no order and are grouped by person in Go, each person's then sorted (funnelGroups):
// DuckDB's sort of them by person is most of the query (2.6M events: 0.27 s sorted
// against 0.08 s not, on two cores), and grouping, sorting and folding them in Go takes
// 0.16 s on one (the funnel's fastest runs 0.24-0.27 s against 0.28-0.32 s). The
// groups hold every row: past q.maxBytes of them the rows are
// read again, sorted by DuckDB, and folded as they come, as a breakdown's always are,
// holding none (q.maxRows bounds answers held whole; a funnel's is at most 26
// funnels). The fold's own state is bounded by q.maxBytes too.
func (q *Queries) funnelTallies(ctx context.Context, scope Scope, query funnelQuery, spec funnelSpec) (map[string]*funnelTally, error) {
	if query.packedBits > 0 && !spec.breakdown {
		tallies, err := q.readFunnelTallies(ctx, scope, query.text, query, spec, true)
		if !errors.Is(err, errFunnelGroupsFull) {
			return tallies, err
		}
	}
	return q.readFunnelTallies(ctx, scope, query.text+"\n\t\tORDER BY "+query.order, query, spec, false)
}

// readFunnelTallies runs text, query's SQL sorted or not, and folds its rows: grouped
// by person first, or as they come.
func (q *Queries) readFunnelTallies(ctx context.Context, scope Scope, text string, query funnelQuery, spec funnelSpec, grouped bool) (map[string]*funnelTally, error) {
	var fold *funnelFold
	conn, err := q.session(ctx, scope, text, query.persons, len(query.args), func(conn *sql.Conn, text string) (func(), error) {
		fold = newFunnelFold(spec, q.maxBytes)
		var sink funnelSink = &funnelRows{query: query, fold: fold}
		if grouped {
			sink = newFunnelGroups(query, fold, q.maxBytes, func(f func()) bool { return tryAlongside(q.nice, f) })
		}
		return nil, conn.Raw(func(driverConn any) error { return q.readFunnel(ctx, driverConn, text, query, sink) })
	})
	if err != nil {
		return nil, err
	}
	conn.Close()
	return fold.tallies, nil
}

// funnelSink takes a funnel query's rows as readFunnel hands them over (DuckDB's Arrow
// reader in builds with the duckdb_arrow tag, else the driver's rows): each row's
// person, time (with the steps, when packed), steps and breakdown value, then the end.
type funnelSink interface {
	add(person uint64, at, steps int64, value string) error
	end() error
}

// columns are the columns of a row's steps and breakdown value: the time's column holds
// the steps too when packed, and there is no value without a breakdown.
func (query funnelQuery) columns() (steps, value int) {
	if query.packedBits > 0 {
		return 1, 2
	}
	return 2, 3
}

// unpack is a packed row's time and steps (funnelsSQL).
func (query funnelQuery) unpack(atSteps int64) (at int64, steps uint64) {
	return query.fromUs + atSteps>>query.packedBits, uint64(atSteps) & (1<<query.packedBits - 1)
}

// funnelArgs are query's arguments as the driver binds them.
func funnelArgs(driverConn any, query funnelQuery) ([]driver.NamedValue, error) {
	checker, _ := driverConn.(driver.NamedValueChecker)
	named := make([]driver.NamedValue, len(query.args))
	for i, arg := range query.args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: arg}
		if checker != nil && checker.CheckNamedValue(&named[i]) == nil {
			continue
		}
		value, err := driver.DefaultParameterConverter.ConvertValue(arg)
		if err != nil {
			return nil, fmt.Errorf("cannot bind the funnel's parameter %d: %w", i+1, err)
		}
		named[i].Value = value
	}
	return named, nil
}

// funnelRows folds rows sorted by the query's order as they come.
type funnelRows struct {
	query funnelQuery
	fold  *funnelFold
	// The person being folded; the first row's needs no case of its own, for
	// endPerson of no events does nothing.
	current uint64
}

func (r *funnelRows) add(person uint64, at, steps int64, value string) error {
	mask := uint64(steps)
	if r.query.packedBits > 0 {
		at, mask = r.query.unpack(at)
	}
	if person != r.current {
		if err := r.fold.endPerson(); err != nil {
			return err
		}
		r.current = person
	}
	return r.fold.add(at, mask, value)
}

func (r *funnelRows) end() error { return r.fold.endPerson() }

// errFunnelGroupsFull is funnelGroups' refusal of more rows than it may hold.
var errFunnelGroupsFull = errors.New("the funnel's rows are more than its groups may hold")

// funnelGroups groups a packed funnel's rows (no breakdown: a row is its time and
// steps as one number, which sorts as the fold reads them) by person as they come, in
// any order, then sorts each person's and folds them (end).
//
// A person is found in an open-addressed table by their hash, which is one already (a
// hash chosen to collide would only slow its own project's funnels, within their
// budget). Their rows go in blocks of funnelBlockRows, chained, that slabs of blocks
// hold: growing a slice per person, as append does, was half of the grouping's time
// (2.6M rows of 30,000 persons: 39 ms of 95). It holds at most budget bytes: blocks,
// persons, and the copy of a person's rows that end sorts with the sort's own; past
// them add, or end, answers errFunnelGroupsFull.
type funnelGroups struct {
	query  funnelQuery
	fold   *funnelFold
	budget int
	// alongside starts a function on another thread of the query's priority and
	// reports whether it did, never waiting for one (tryAlongside).
	alongside func(func()) bool
	// A person is at the first slot from hash & mask on that holds them or is free.
	// At most half the slots are taken. A slot holds the person's blocks itself: a
	// row then reads two places of memory, its slot and its block.
	slots   []funnelSlot
	mask    uint64
	persons int
	slabs   [][]funnelBlock // of funnelSlabBlocks each, the last one filling
}

// funnelSlot is a person's place in funnelGroups' table: their hash and blocks, the
// first and the one being filled, each as 1 + its index (0: a free slot).
type funnelSlot struct {
	person      uint64
	first, last int32
}

// funnelBlock holds rows of one person, n of them, and 1 + the index of the person's
// next block (0: none).
type funnelBlock struct {
	rows [funnelBlockRows]int64
	n    int32
	next int32
}

// The bytes funnelGroups counts for a row, a block and a person (their slot, with the
// table's free ones); the rows a block holds, and the blocks a slab holds. A person of
// one row takes a block: 16 rows make one of 136 bytes, as fast to fill as 32 and half
// the size; 8 were slower.
const (
	funnelRowBytes    = 8
	funnelBlockRows   = 16
	funnelSlabBlocks  = 4096
	funnelBlockBytes  = funnelBlockRows*funnelRowBytes + 8
	funnelPersonBytes = 32
)

func newFunnelGroups(query funnelQuery, fold *funnelFold, budget int, alongside func(func()) bool) *funnelGroups {
	const slots = 1 << 12
	return &funnelGroups{query: query, fold: fold, budget: budget, alongside: alongside, slots: make([]funnelSlot, slots), mask: slots - 1}
}

func (g *funnelGroups) charge(n int) error {
	if g.budget -= n; g.budget < 0 {
		return errFunnelGroupsFull
	}
	return nil
}

func (g *funnelGroups) add(person uint64, atSteps, _ int64, _ string) error {
	slot, err := g.slot(person)
	if err != nil {
		return err
	}
	b := g.block(slot.last)
	if b.n == funnelBlockRows {
		next, err := g.newBlock()
		if err != nil {
			return err
		}
		b.next, slot.last = next, next
		b = g.block(next)
	}
	b.rows[b.n] = atSteps
	b.n++
	return nil
}

// slot is person's slot, which it fills when they have none yet.
func (g *funnelGroups) slot(person uint64) (*funnelSlot, error) {
	for i := person & g.mask; ; i = (i + 1) & g.mask {
		slot := &g.slots[i]
		if slot.first == 0 {
			if 2*(g.persons+1) > len(g.slots) {
				g.grow()
				return g.slot(person)
			}
			if err := g.charge(funnelPersonBytes); err != nil {
				return nil, err
			}
			first, err := g.newBlock()
			if err != nil {
				return nil, err
			}
			*slot = funnelSlot{person: person, first: first, last: first}
			g.persons++
			return slot, nil
		} else if slot.person == person {
			return slot, nil
		}
	}
}

// grow doubles the table.
func (g *funnelGroups) grow() {
	slots := g.slots
	g.slots, g.mask = make([]funnelSlot, 2*len(slots)), uint64(2*len(slots)-1)
	for _, slot := range slots {
		if slot.first == 0 {
			continue
		}
		j := slot.person & g.mask
		for g.slots[j].first != 0 {
			j = (j + 1) & g.mask
		}
		g.slots[j] = slot
	}
}

// newBlock takes an empty block and returns 1 + its index. A slab is made with room
// for all its blocks and never grows past it, so a pointer to a block (add holds one
// while it takes the next) stays valid.
func (g *funnelGroups) newBlock() (int32, error) {
	if err := g.charge(funnelBlockBytes); err != nil {
		return 0, err
	}
	if len(g.slabs) == 0 || len(g.slabs[len(g.slabs)-1]) == funnelSlabBlocks {
		g.slabs = append(g.slabs, make([]funnelBlock, 0, funnelSlabBlocks))
	}
	last := &g.slabs[len(g.slabs)-1]
	*last = append(*last, funnelBlock{})
	return int32((len(g.slabs)-1)*funnelSlabBlocks + len(*last)), nil
}

// block is the block of index i - 1.
func (g *funnelGroups) block(i int32) *funnelBlock {
	return &g.slabs[(i-1)/funnelSlabBlocks][(i-1)%funnelSlabBlocks]
}

// end sorts each person's rows and folds them: the table's two halves at once, the
// second on another thread when one is free, else after the first (alongside: 2.6M
// rows, 80 ms on one thread),
// into a fold of its own whose tallies it then adds to the fold's. The tallies do not
// depend on the order the persons are folded in. Each half may hold half the budget
// left for its copies of a person's rows, and the second fold as much as the first.
func (g *funnelGroups) end() error {
	half := len(g.slots) / 2
	budgets := [2]int{g.budget / 2, g.budget / 2}
	second := newFunnelFold(g.fold.spec, g.fold.limit)
	foldSecond := func() error { return g.foldSlots(g.slots[half:], second, &budgets[1]) }
	done := make(chan error, 1)
	alongside := g.alongside(func() {
		// A panic here, on a thread of its own, would end the process.
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("the funnel's fold panicked: %v", p)
			}
		}()
		done <- foldSecond()
	})
	err := g.foldSlots(g.slots[:half], g.fold, &budgets[0])
	var secondErr error
	if alongside {
		secondErr = <-done
	} else { // no thread was free
		secondErr = foldSecond()
	}
	if err := cmp.Or(err, secondErr); err != nil {
		return err
	}
	for value, t := range second.tallies {
		into := g.fold.tallies[value]
		if into == nil {
			g.fold.tallies[value] = t
			continue
		}
		for s := range t.counts {
			into.counts[s] += t.counts[s]
			into.times[s] = append(into.times[s], t.times[s]...)
		}
	}
	return nil
}

// foldSlots sorts the rows of each person of slots and folds them into fold, charging
// its copies of them to budget.
func (g *funnelGroups) foldSlots(slots []funnelSlot, fold *funnelFold, budget *int) error {
	var sorter runSorter
	var rows []int64
	held := 0 // the bytes of rows and of the sorter's scratch, charged as they grow
	for _, slot := range slots {
		if slot.first == 0 {
			continue
		}
		rows = rows[:0]
		for i := slot.first; ; {
			b := g.block(i)
			rows = append(rows, b.rows[:b.n]...)
			if i = b.next; i == 0 {
				break
			}
		}
		sorter.sort(rows)
		if grown := (cap(rows) + cap(sorter.scratch)) * funnelRowBytes; grown > held {
			if *budget -= grown - held; *budget < 0 {
				return errFunnelGroupsFull
			}
			held = grown
		}
		for _, atSteps := range rows {
			at, steps := g.query.unpack(atSteps)
			if err := fold.add(at, steps, ""); err != nil {
				return err
			}
		}
		if err := fold.endPerson(); err != nil {
			return err
		}
	}
	return nil
}

// runSorter sorts numbers by merging their ascending runs two by two, reusing its
// buffers. A person's rows come as a few runs, each of the query's scans reading the
// events in the order they are stored, which is mostly by time: merging them takes a
// third of a general sort's time (2.6M rows of 4-5 runs a person: 19 ms against 55).
type runSorter struct {
	scratch []int64
	bounds  []int // where each run starts, and the end
}

// sort sorts rows in place.
func (s *runSorter) sort(rows []int64) {
	bounds := append(s.bounds[:0], 0)
	for i := 1; i < len(rows); i++ {
		if rows[i] < rows[i-1] {
			bounds = append(bounds, i)
		}
	}
	s.bounds = bounds
	if len(bounds) == 1 {
		return
	}
	bounds = append(bounds, len(rows))
	s.scratch = slices.Grow(s.scratch[:0], len(rows))[:len(rows)]
	from, to := rows, s.scratch
	for len(bounds) > 2 {
		// Each pass merges runs 0 and 1, 2 and 3...; the bounds of the merged runs
		// overwrite the ones read already.
		merged := bounds[:1]
		for r := 0; r+1 < len(bounds); r += 2 {
			lo, mid, hi := bounds[r], bounds[r+1], bounds[r+1]
			if r+2 < len(bounds) {
				hi = bounds[r+2]
			}
			mergeRuns(to[lo:hi], from[lo:mid], from[mid:hi])
			merged = append(merged, hi)
		}
		bounds, from, to = merged, to, from
	}
	if &from[0] != &rows[0] {
		copy(rows, from)
	}
}

// mergeRuns writes the ascending a and b into out, ascending: len(out) is len(a) + len(b).
func mergeRuns(out, a, b []int64) {
	i, j := 0, 0
	for k := range out {
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			out[k], i = a[i], i+1
		} else {
			out[k], j = b[j], j+1
		}
	}
}
