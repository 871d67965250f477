package warehouse

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runSorter sorts as slices.Sort does, whatever the runs: none, one, many, every
// number its own (descending), equal numbers across runs.
func TestRunSorter(t *testing.T) {
	random := rand.New(rand.NewPCG(3, 5))
	var sorter runSorter
	cases := [][]int64{nil, {7}, {1, 2, 3}, {3, 2, 1}, {2, 2, 1, 1, 2}, {5, 1, 5, 1, 5}}
	for range 500 {
		var rows []int64
		for range random.IntN(6) {
			start := random.Int64N(50)
			for range random.IntN(30) {
				rows = append(rows, start)
				start += random.Int64N(5)
			}
		}
		cases = append(cases, rows)
	}
	for _, rows := range cases {
		want := slices.Sorted(slices.Values(rows))
		got := slices.Clone(rows)
		sorter.sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("sort(%v) = %v, want %v", rows, got, want)
		}
	}
}

// funnelGroups fold what the sorted rows fold, in whatever order the rows come and
// however many persons (the table grows past 2,048), and refuse rows past their budget.
func TestFunnelGroups(t *testing.T) {
	random := rand.New(rand.NewPCG(11, 13))
	query := funnelQuery{packedBits: 3, fromUs: 1_000_000}
	spec := funnelSpec{steps: 3, order: funnelOrdered, window: 3600e6}
	type row struct {
		person  uint64
		atSteps int64
	}
	var rows []row
	for range 5000 {
		person := random.Uint64()
		for range 1 + random.IntN(12) {
			rows = append(rows, row{person, random.Int64N(4*3600e6)<<3 | 1<<random.IntN(3)})
		}
	}
	random.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })

	group := func(alongside func(func()) bool) (map[string]*funnelTally, int) {
		t.Helper()
		fold := newFunnelFold(spec, 1<<30)
		groups := newFunnelGroups(query, fold, 1<<30, alongside)
		for _, r := range rows {
			if err := groups.add(r.person, r.atSteps, r.atSteps, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := groups.end(); err != nil {
			t.Fatal(err)
		}
		return sortedTimes(fold.tallies), len(groups.slots)
	}
	// The second half folded on a thread of its own, or by end itself when no thread
	// takes it.
	alongside, slots := group(func(f func()) bool { go f(); return true })
	inlined, _ := group(func(func()) bool { return false })
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(a.person, b.person), cmp.Compare(a.atSteps, b.atSteps)) })
	sorted := newFunnelFold(spec, 1<<30)
	folded := &funnelRows{query: query, fold: sorted}
	for _, r := range rows {
		if err := folded.add(r.person, r.atSteps, r.atSteps, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := folded.end(); err != nil {
		t.Fatal(err)
	}
	want := talliesText(sortedTimes(sorted.tallies))
	if got := talliesText(alongside); got != want || slots <= 4096 {
		t.Fatalf("grouped (%d slots):\n%.300s\nsorted:\n%.300s", slots, got, want)
	}
	if got := talliesText(inlined); got != want {
		t.Fatalf("grouped, folded on one thread:\n%.300s\nsorted:\n%.300s", got, want)
	}

	small := newFunnelGroups(query, newFunnelFold(spec, 1<<30), 4*funnelBlockBytes, func(f func()) bool { go f(); return true })
	var err error
	for _, r := range rows {
		if err = small.add(r.person, r.atSteps, r.atSteps, ""); err != nil {
			break
		}
	}
	if !errors.Is(err, errFunnelGroupsFull) {
		t.Fatalf("rows past the budget: %v", err)
	}
	// A person's rows that fill two blocks are within the budget; their copy and the
	// sort's are not.
	blocks := newFunnelGroups(query, newFunnelFold(spec, 1<<30), 2*funnelBlockBytes+funnelPersonBytes+100, func(func()) bool { return false })
	for i := range int64(2 * funnelBlockRows) {
		if err := blocks.add(1, (64-i)<<3|1, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := blocks.end(); !errors.Is(err, errFunnelGroupsFull) {
		t.Fatalf("sorting rows past the budget: %v", err)
	}
}

// A funnel whose rows are more than the query's budget lets groups hold reads them
// again sorted by DuckDB, to the same tallies.
func TestFunnelGroupsFull(t *testing.T) {
	tallies := func(maxBytes int) (map[string]*funnelTally, error) {
		w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{Query: QueryLimits{MaxBytes: maxBytes}})
		defer w.Close()
		query, spec, _ := submitFunnelEvents(t, w)
		if maxBytes > 0 {
			if _, err := w.Queries().readFunnelTallies(context.Background(), utc, query.text, query, spec, true); !errors.Is(err, errFunnelGroupsFull) {
				t.Fatalf("the grouped read of %d bytes at most: %v", maxBytes, err)
			}
		}
		return w.Queries().funnelTallies(context.Background(), utc, query, spec)
	}
	want, err := tallies(0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tallies(32 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := talliesText(sortedTimes(got)), talliesText(sortedTimes(want)); got != want || !strings.Contains(want, "[300 ") {
		t.Fatalf("read again sorted:\n%.300s\nwant\n%.300s", got, want)
	}
}
