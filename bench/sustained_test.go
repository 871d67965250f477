package main

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// bucket puts each send in the interval it was due in, each visibility sample in the
// one its event was acknowledged in (after the end: the last), nothing before the
// start, and gives each interval the deduplication set read at its end, the last one
// the set read last.
func TestBucket(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(seconds float64) time.Time { return start.Add(time.Duration(seconds * float64(time.Second))) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	f := func(length, every time.Duration, tl timeline, want []interval) {
		t.Helper()
		if got := bucket(start, length, every, tl); !reflect.DeepEqual(got, want) {
			t.Fatalf("bucket(%v, %v):\n got %+v\nwant %+v", length, every, got, want)
		}
	}
	tl := timeline{
		sends: []timedSend{
			{due: at(-1), latency: ms(9000), status: 200, events: 10}, // the warmup's
			{due: at(0), latency: ms(100), status: 200, events: 10},
			{due: at(9.9), latency: ms(1500), status: 503, events: 10},
			{due: at(12), latency: ms(50), status: 200, events: 10},
			{due: at(24), latency: ms(2000), status: 0, events: 10},
		},
		visible: []visibleSample{{at(-0.5), ms(800)}, {at(3), ms(200)}, {at(26), ms(300)}},
		rss:     []rssMoment{{at(-1), 900}, {at(1), 100}, {at(5), 300}, {at(15), 200}},
		dedup:   []dedupSample{{at(0.001), 10, 0}, {at(10.001), 20, 0}, {at(20.001), 30, 5}, {at(25), 30, 12}, {at(27), 31, 13}},
	}
	f(25*time.Second, 10*time.Second, tl, []interval{
		{From: 0, Seconds: 10, Requests: 1, Events: 10, Failed: 1, Latency: percentilesOf([]time.Duration{ms(100), ms(1500)}),
			Visibility: percentilesOf([]time.Duration{ms(200)}), PeakRSS: 300, Dedup: &dedupState{Held: 20}},
		{From: 10, Seconds: 10, Requests: 1, Events: 10, Latency: percentilesOf([]time.Duration{ms(50)}),
			PeakRSS: 200, Dedup: &dedupState{Held: 30, Evicted: 5}},
		{From: 20, Seconds: 5, Failed: 1, Latency: percentilesOf([]time.Duration{ms(2000)}),
			Visibility: percentilesOf([]time.Duration{ms(300)}), Dedup: &dedupState{Held: 31, Evicted: 8}},
	})
	// A set not read after an interval's end leaves it without one.
	tl.dedup = tl.dedup[:2]
	got := bucket(start, 25*time.Second, 10*time.Second, tl)
	if got[0].Dedup == nil || got[1].Dedup != nil || got[2].Dedup != nil {
		t.Fatalf("sets read until 10 s: %+v %+v %+v", got[0].Dedup, got[1].Dedup, got[2].Dedup)
	}
	// The read made as the run ended, a moment before its computed end, is the last
	// interval's.
	tl.dedup = []dedupSample{{at(10.001), 20, 0}, {at(20.001), 30, 5}, {at(24.999), 31, 9}}
	got = bucket(start, 25*time.Second, 10*time.Second, tl)
	if got[2].Dedup == nil || *got[2].Dedup != (dedupState{Held: 31, Evicted: 4}) {
		t.Fatalf("the read at 24.999 s: %+v", got[2].Dedup)
	}
	f(20*time.Second, 10*time.Second, timeline{}, []interval{{From: 0, Seconds: 10}, {From: 10, Seconds: 10}})
	f(0, 10*time.Second, tl, nil)
}

// A scenario that takes another's rate runs at its share of the median of that one's
// runs, with connections for a second of it; it fails when that one has not run.
func TestResolveRate(t *testing.T) {
	sc := scenario{Name: "sustained", RateOf: "batch-1k", RateOfMax: 0.8, Connections: 1}
	run := func(name string, acked int64, window time.Duration) *scenarioRun {
		return &scenarioRun{scenario: scenario{Name: name}, sent: sendStats{statuses: map[int]int64{200: acked, 503: 7}}, window: window}
	}
	f := func(runs []*scenarioRun, rate, base float64, connections int) {
		t.Helper()
		got, err := resolveRate(sc, runs)
		if err != nil || got.Rate != rate || got.RateBase != base || got.Connections != connections {
			t.Fatalf("rate %v of %v on %d connections, %v; want %v of %v on %d", got.Rate, got.RateBase, got.Connections, err, rate, base, connections)
		}
	}
	f([]*scenarioRun{run("batch-1k", 240, 2*time.Second), run("batch-1k-personless", 500, time.Second), run("batch-1k", 100, time.Second),
		run("batch-1k", 90, time.Second)}, 80, 100, 80)
	f([]*scenarioRun{run("batch-1k", 1, 2*time.Second)}, 0.4, 0.5, 1)
	for _, runs := range [][]*scenarioRun{nil, {run("batch-1k-personless", 500, time.Second)}, {run("batch-1k", 0, time.Second)}} {
		if got, err := resolveRate(sc, runs); err == nil {
			t.Fatalf("%d runs: rate %v, no error", len(runs), got.Rate)
		}
	}
	given := sc
	given.Rate = 5 // bench load -rate
	if got, err := resolveRate(given, nil); err != nil || got.Rate != 5 || got.Connections != 5 {
		t.Fatalf("a given rate: %v on %d connections, %v; want 5 on 5", got.Rate, got.Connections, err)
	}
}

// Picking a scenario that takes another's rate runs that one before it.
func TestPick(t *testing.T) {
	f := func(mode, list string, want ...string) {
		t.Helper()
		planned, err := plan(mode)
		if err != nil {
			t.Fatal(err)
		}
		picked, err := pick(planned, list)
		var names []string
		for _, sc := range picked {
			names = append(names, sc.Name)
		}
		if err != nil || !slices.Equal(names, want) {
			t.Fatalf("%s %q: %v, %v; want %v", mode, list, names, err, want)
		}
	}
	f("tiny", "sustained", "batch-1k", "sustained")
	f("quick", "sustained,batch-1k", "batch-1k", "sustained")
	f("standard", "sustained", "batch-1k", "batch-1k", "batch-1k", "sustained")
	f("tiny", "capture,soak", "capture", "soak")
}
