package warehouse

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FunnelsQuery is PostHog's FunnelsQuery as its "steps" view answers it: of the persons
// who did the first step, how many went on to do each next one within the conversion
// window, and how long they took.
//
// A funnel counts persons as they are now: an event counts for the person its distinct
// id belongs to at query time (the events view reads person_overrides), not the one
// it was ingested under. So two distinct ids merged into one person midway through a
// funnel are one person in it, as in PostHog, whose queries read the person of an
// event through its overrides of merged persons too.
type FunnelsQuery struct {
	Series          []FunnelsStep    `json:"series"`
	DateRange       DateRange        `json:"dateRange"`
	FunnelsFilter   FunnelsFilter    `json:"funnelsFilter"`
	BreakdownFilter *BreakdownFilter `json:"breakdownFilter"`
	// Properties filter every event the funnel reads.
	Properties []PropertyFilter `json:"properties"`
	// AggregationGroupTypeIndex would count groups rather than persons: refused.
	AggregationGroupTypeIndex *int `json:"aggregation_group_type_index"`
}

// FunnelsStep is one step of a funnel: an event (nil for any event) that passes
// property filters.
type FunnelsStep struct {
	Kind       string           `json:"kind"` // EventsNode, the default and the only kind
	Event      *string          `json:"event"`
	CustomName *string          `json:"custom_name"`
	Properties []PropertyFilter `json:"properties"`
	// OptionalInFunnel steps are refused.
	OptionalInFunnel bool `json:"optionalInFunnel"`
}

// FunnelsFilter is how a funnel counts.
type FunnelsFilter struct {
	// FunnelOrderType is ordered (the default), strict or unordered.
	FunnelOrderType string `json:"funnelOrderType"`
	// FunnelVizType is steps, the default and the only view answered.
	FunnelVizType string `json:"funnelVizType"`
	// The conversion window is FunnelWindowInterval (default 14) of
	// FunnelWindowIntervalUnit: second, minute, hour, day (the default), week or month.
	FunnelWindowInterval     *int   `json:"funnelWindowInterval"`
	FunnelWindowIntervalUnit string `json:"funnelWindowIntervalUnit"`
	// BreakdownAttributionType is first_touch (the default) or last_touch: a person's
	// breakdown value is that of the first, or last, event the funnel reads of theirs.
	BreakdownAttributionType string `json:"breakdownAttributionType"`
	// Exclusions, and an aggregation other than by person, are refused.
	Exclusions             []json.RawMessage `json:"exclusions"`
	FunnelAggregateByHogQL *string           `json:"funnelAggregateByHogQL"`
}

// FunnelsResult is the answer of a FunnelsQuery, in PostHog's shape: Results is a
// []FunnelStepResult, or with a breakdown a [][]FunnelStepResult, a funnel per value.
// A funnel that no person entered answers no steps, as PostHog's does.
type FunnelsResult struct {
	Results  any    `json:"results"`
	Timezone string `json:"timezone"`
}

// FunnelStepResult is one step of a funnel's answer. Its conversion rates are its
// count over the first step's (or the previous step's), as PostHog's UI computes them.
type FunnelStepResult struct {
	// ActionID and Name are the step's event (null for any event); an unordered
	// funnel's steps are "Completed 1 step", "Completed 2 steps"... without an event.
	ActionID   *string  `json:"action_id"`
	Name       *string  `json:"name"`
	CustomName *string  `json:"custom_name"`
	Order      int      `json:"order"`
	People     []string `json:"people"` // always empty: PostHog lists them by another query
	// Count is how many persons reached the step.
	Count int64  `json:"count"`
	Type  string `json:"type"`
	// The mean and median, in seconds, of the time from the previous step to this one
	// over the persons who reached it; null for the first step and when none did.
	AverageConversionTime *float64 `json:"average_conversion_time"`
	MedianConversionTime  *float64 `json:"median_conversion_time"`
	// With a breakdown, the value the funnel is of ("" for events without the
	// property, "Other" for the values past the 25 largest funnels), twice as PostHog
	// answers it.
	Breakdown      *string `json:"breakdown,omitempty"`
	BreakdownValue *string `json:"breakdown_value,omitempty"`
}

// Funnel orders, and the name of the funnel of the breakdown values past the largest.
const (
	funnelOrdered   = "ordered"
	funnelStrict    = "strict"
	funnelUnordered = "unordered"
	funnelOther     = "Other"
)

// maxFunnelSteps bounds a funnel's steps: each is a condition of its query and a bit
// of each event's step mask.
const maxFunnelSteps = 30

// maxFunnelWindowInterval bounds the conversion window's count: 100,000 months (8,500
// years) bound no real funnel, and their microseconds fit an int64.
const maxFunnelWindowInterval = 100_000

// funnelWindowUnits are the conversion window's units in microseconds: a month is 31
// days, as PostHog counts it.
var funnelWindowUnits = map[string]int64{
	"second": 1e6, "minute": 60e6, "hour": 3600e6, "day": 86400e6, "week": 7 * 86400e6, "month": 31 * 86400e6,
}

// funnelSpec is what a FunnelsQuery asks, checked.
type funnelSpec struct {
	steps     int
	order     string // funnelOrdered, funnelStrict or funnelUnordered
	window    int64  // the conversion window, in microseconds
	lastTouch bool   // a person's breakdown value is their last event's, else their first's
	breakdown bool
}

// Funnels runs a FunnelsQuery.
func (q *Queries) Funnels(ctx context.Context, scope Scope, fq FunnelsQuery, now time.Time) (*FunnelsResult, error) {
	spec, err := checkFunnel(fq)
	if err != nil {
		return nil, err
	}
	ctx, done, err := q.begin(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer done()
	query, _, _, err := q.funnelRead(ctx, scope, fq, spec, now)
	if err != nil {
		return nil, err
	}
	tallies, err := onLoweredThread(q.nice, func() (map[string]*funnelTally, error) {
		return q.funnelTallies(ctx, scope, query, spec)
	})
	if err != nil {
		return nil, err
	}
	results, err := funnelsResults(ctx, tallies, fq, spec)
	if err != nil {
		return nil, cmp.Or(q.interrupted(ctx), err)
	}
	return &FunnelsResult{Results: results, Timezone: scope.timezone()}, nil
}

// funnelRead is the query of fq's events (funnelsSQL) over its date range, and the
// range, [from, to).
func (q *Queries) funnelRead(ctx context.Context, scope Scope, fq FunnelsQuery, spec funnelSpec, now time.Time) (query funnelQuery, from, to time.Time, err error) {
	if from, to, err = q.dates(ctx, scope, fq.DateRange, now); err != nil {
		return query, from, to, err
	}
	query, err = funnelsSQL(fq, spec, from, to)
	return query, from, to, err
}

// checkFunnel refuses what hedge's funnels do not answer, naming the field, and
// resolves the defaults of the rest.
func checkFunnel(fq FunnelsQuery) (funnelSpec, error) {
	f := fq.FunnelsFilter
	spec := funnelSpec{steps: len(fq.Series), order: cmp.Or(f.FunnelOrderType, funnelOrdered)}
	if spec.steps < 2 || spec.steps > maxFunnelSteps {
		return spec, queryErrorf("a funnel has from 2 to %d steps in series, not %d", maxFunnelSteps, spec.steps)
	}
	for i, step := range fq.Series {
		if step.Kind != "" && step.Kind != "EventsNode" {
			return spec, queryErrorf("series[%d]: a funnel step must be an EventsNode, not %q", i, step.Kind)
		}
		if step.OptionalInFunnel {
			return spec, queryErrorf("series[%d]: optionalInFunnel is not supported", i)
		}
	}
	if !slices.Contains([]string{funnelOrdered, funnelStrict, funnelUnordered}, spec.order) {
		return spec, queryErrorf("funnelsFilter.funnelOrderType must be ordered, strict or unordered, not %q", f.FunnelOrderType)
	}
	if f.FunnelVizType != "" && f.FunnelVizType != "steps" {
		return spec, queryErrorf("funnelsFilter.funnelVizType must be steps, not %q: only the steps view is supported", f.FunnelVizType)
	}
	interval := 14
	if f.FunnelWindowInterval != nil {
		interval = *f.FunnelWindowInterval
	}
	if interval < 1 || interval > maxFunnelWindowInterval {
		return spec, queryErrorf("funnelsFilter.funnelWindowInterval must be from 1 to %d, not %d", maxFunnelWindowInterval, interval)
	}
	unit, ok := funnelWindowUnits[cmp.Or(f.FunnelWindowIntervalUnit, "day")]
	if !ok {
		return spec, queryErrorf("funnelsFilter.funnelWindowIntervalUnit must be second, minute, hour, day, week or month, not %q", f.FunnelWindowIntervalUnit)
	}
	spec.window = int64(interval) * unit
	switch f.BreakdownAttributionType {
	case "", "first_touch":
	case "last_touch":
		spec.lastTouch = true
	default:
		return spec, queryErrorf("funnelsFilter.breakdownAttributionType must be first_touch or last_touch, not %q", f.BreakdownAttributionType)
	}
	if len(f.Exclusions) > 0 {
		return spec, queryErrorf("funnelsFilter.exclusions are not supported")
	}
	if fq.AggregationGroupTypeIndex != nil || f.FunnelAggregateByHogQL != nil && *f.FunnelAggregateByHogQL != "" && *f.FunnelAggregateByHogQL != "person_id" {
		return spec, queryErrorf("funnels count persons: aggregation_group_type_index and funnelsFilter.funnelAggregateByHogQL are not supported")
	}
	spec.breakdown = fq.BreakdownFilter != nil && fq.BreakdownFilter.Breakdown != ""
	return spec, nil
}

// funnelQuery is the query of a funnel's events (funnelsSQL), and how its rows hold
// them.
type funnelQuery struct {
	// text selects the rows in no order; order is what orders them as the fold reads
	// them, when DuckDB sorts them (funnelTallies).
	text    string
	order   string
	args    []any
	persons personJoin // what of persons it reads
	// packedBits is how many low bits of the time column hold the steps (0: the steps
	// have a column of their own); the rest are the microseconds since fromUs.
	packedBits int
	fromUs     int64
}

// funnelsSQL is the query of the events fq reads over [from, to): a row per event with
// its person, its time in microseconds (at_us), a mask of the steps it is (bit i: step i)
// and its breakdown value ("" without one, or without the property). Its order (the
// query's order, which funnelTallies has DuckDB sort by or sorts itself) is by person,
// then time, then steps, so that events of one time always come in one order: those of
// one time and steps are alike to the fold. With a breakdown, events of one time are
// also ordered by uuid, for the first or last of them gives the person's value.
//
// A person is the 64-bit hash of their UUID, and when the range's microseconds and the
// steps fit 62 bits the time and the steps are one number, (at_us - from) << steps |
// mask, which orders as the two do. The sort then has a 16-byte key, and each row two
// integers to hand over rather than a UUID's bytes, an integer and another: 2.6M
// events 0.56 s against 0.8 s. Two persons of one funnel with the same hash would be
// counted as one: for n persons a chance of about n²/2^65 (7e-11 for 50,000 persons,
// 3e-6 for ten million), and only within the project, whose clients could skew its
// funnels by sending events anyway.
//
// The events are those that are a step, and pass fq's properties; a strict funnel reads
// every event that passes them, for any event between two steps breaks it, but only of
// the persons who did the first step. An event counts for its distinct id's person now.
//
// When every step names its event and the funnel is not strict, the events of each
// name are read by a scan of their own, the scans joined by UNION ALL: DuckDB then
// filters each by its name as it reads, where "event IN (...)" compares each event's
// name after the scan, and an event's steps are those of its scan's name, compared no
// more (2.6M events of 5M read: 0.30 s against 0.33 s).
func funnelsSQL(fq FunnelsQuery, spec funnelSpec, from, to time.Time) (funnelQuery, error) {
	byName := spec.order != funnelStrict && !slices.ContainsFunc(fq.Series, func(step FunnelsStep) bool { return step.Event == nil })
	var scans []funnelScan // one, or one per event name when byName
	scanOf := map[string]int{}
	withPersons := false
	for i, step := range fq.Series {
		filters, filterArgs, ofPersons, err := propertyFilters(step.Properties)
		if err != nil {
			return funnelQuery{}, err
		}
		withPersons = withPersons || ofPersons
		var conditions []string
		var conditionArgs []any
		k := 0
		if byName {
			var ok bool
			if k, ok = scanOf[*step.Event]; !ok {
				k, scanOf[*step.Event] = len(scans), len(scans)
				scans = append(scans, funnelScan{where: "event = ?", whereArgs: []any{*step.Event}})
			}
		} else if step.Event != nil {
			conditions, conditionArgs = append(conditions, "event = ?"), append(conditionArgs, *step.Event)
		}
		if len(scans) == 0 {
			scans = append(scans, funnelScan{})
		}
		scans[k].addStep(i, append(conditions, filters...), append(conditionArgs, filterArgs...))
	}
	query := funnelQuery{fromUs: from.UnixMicro()}
	columns, order := "person, at_us, steps", "person, at_us, steps"
	if bits.Len64(uint64(max(to.UnixMicro()-query.fromUs, 1)))+spec.steps <= 62 {
		// Both numbers are hedge's own, not the request's text.
		query.packedBits = spec.steps
		columns = "person, (at_us - " + strconv.FormatInt(query.fromUs, 10) + ") * " + strconv.FormatInt(1<<spec.steps, 10) + " + steps AS at_steps"
		order = "person, at_steps"
	}
	// Without a breakdown the rows have no value column: scanning a string per event
	// is a third of reading them (2.65M events: 1.67 s against 1.13 s); nor are events
	// of one time ordered by uuid, a third of the sort (2.6M events: 0.45 s against 0.8 s).
	value, valueArgs := "", []any(nil)
	if spec.breakdown {
		column, ofPersons, err := fq.BreakdownFilter.column()
		if err != nil {
			return funnelQuery{}, err
		}
		withPersons = withPersons || ofPersons
		read, args := propertyValue(column, fq.BreakdownFilter.Breakdown)
		value, valueArgs, columns, order = ", coalesce("+read+", '') AS breakdown", args, columns+", breakdown", order+", uuid"
	}
	where := []string{`"timestamp" >= ?`, `"timestamp" < ?`, "person_id IS NOT NULL"} // a row of no person counts for no one
	whereArgs := []any{from, to}
	filters, filterArgs, ofPersons, err := propertyFilters(fq.Properties)
	if err != nil {
		return funnelQuery{}, err
	}
	withPersons = withPersons || ofPersons
	where, whereArgs = append(where, filters...), append(whereArgs, filterArgs...)
	inFunnel := "steps > 0"
	if spec.order == funnelStrict {
		inFunnel = "person IN (SELECT person FROM funnel_events WHERE steps % 2 = 1)"
	}
	reads := make([]string, len(scans))
	for k, scan := range scans {
		read := `SELECT hash(person_id) AS person, epoch_us("timestamp") AS at_us, uuid,
			(` + strings.Join(scan.mask, " + ") + `)::BIGINT AS steps` + value + `
			FROM events WHERE ` + strings.Join(where, " AND ")
		if scan.where != "" {
			read += " AND " + scan.where
		}
		reads[k] = read
		query.args = append(append(append(append(query.args, scan.maskArgs...), valueArgs...), whereArgs...), scan.whereArgs...)
	}
	query.text = `WITH funnel_events AS (` + strings.Join(reads, "\n\t\tUNION ALL ") + `)
		SELECT ` + columns + ` FROM funnel_events WHERE ` + inFunnel
	query.order = order
	query.persons = max(personJoinOf(withPersons), currentPersons)
	return query, nil
}

// funnelScan is a read of the events of a funnel's query: of one event name, or of
// every event the funnel reads.
type funnelScan struct {
	where     string // the events it reads of the query's: "" for all
	whereArgs []any
	mask      []string // a term per step its events may be: the step's bit, or 0
	maskArgs  []any
}

// addStep adds step i to the steps the scan's events may be: those that pass
// conditions, or all of them without any.
func (s *funnelScan) addStep(i int, conditions []string, args []any) {
	bit := strconv.Itoa(1 << i)
	if len(conditions) == 0 {
		s.mask = append(s.mask, bit)
		return
	}
	s.mask = append(s.mask, "CASE WHEN "+strings.Join(conditions, " AND ")+" THEN "+bit+" ELSE 0 END")
	s.maskArgs = append(s.maskArgs, args...)
}

// funnelTally is what a funnel, or one breakdown value's, counts.
type funnelTally struct {
	counts []int64     // how many persons reached each step
	times  [][]float64 // the conversion times into each step after the first, in seconds
}

// funnelEvent is an event the fold holds: its time in microseconds, the steps it is
// (bit i: step i), and its place in the fold's input, which tells events apart.
type funnelEvent struct {
	at    int64
	steps uint64
	seq   int64
}

// funnelAttempt is one way into an ordered funnel: when its first step was done, and
// the times and events (seq) of the steps it did. The fold's attempts own their
// slices for its whole life, so extending an attempt allocates nothing: an event of a
// funnel is folded millions of times a query.
type funnelAttempt struct {
	set    bool
	start  int64
	times  []int64
	events []int64
}

// Bytes the fold counts for what it holds: an event of the ordered funnels' group of
// one time, a time of the unordered funnels' window or of a conversion, a tally's step.
const (
	funnelEventBytes = 24
	funnelTimeBytes  = 8
	funnelStepBytes  = 32
)

// funnelFold computes the funnel of each person from their events in time order (add,
// then endPerson), and tallies them by breakdown value. Each person counts once, at
// the furthest step they reached; their conversion times are those of the attempt that
// first reached it. The rules are those of PostHog's funnel aggregation (its
// aggregate_funnel function), without exclusions and optional steps:
//
//   - Ordered: any event of the first step starts an attempt; an event of step s+1
//     extends the latest attempt that did s steps, when it comes at most the window
//     after that attempt's first step, and that attempt has not done step s+1 yet (the
//     window counts from the first step). An event that is several steps extends the
//     attempts from its last step down, so it is never two steps of one attempt.
//     Events of one time are folded together: when they are not all the same steps,
//     each (event, step) is folded alone, by step, an event still never being two steps
//     of one attempt; so steps done at one time convert in the funnel's order.
//   - Strict: as ordered, but any event that is not step s drops the attempts that did
//     s steps, so no other event may come between two steps (events of one time with
//     different steps excepted, as PostHog excepts them). Its input is every event of
//     the person, not only the steps.
//   - Unordered: an attempt is the events within the window: each step's events are
//     kept in time order until they fall out of the window of the newest event, and the
//     steps done are those with an event kept. An event that is several steps is kept
//     for the one whose newest kept event is the oldest (one without any first). The
//     furthest is counted before each event falls out of the window, and at the end.
//
// Conversion times are the differences between the times of consecutive steps (an
// unordered attempt's times sorted); as in PostHog, a time of 0 (steps done at once)
// is left out of the mean and the median.
type funnelFold struct {
	spec    funnelSpec
	budget  int // how many more bytes the fold may hold (funnel*Bytes)
	limit   int // the budget it started with
	tallies map[string]*funnelTally
	seq     int64
	// onPerson, when set, is told of each person as they are tallied: the furthest
	// step they reached (0: none) and their breakdown value (the fold's own bytes,
	// valid for the call only). Listing a step's persons reads them so.
	onPerson func(best int, value []byte) error

	// The person being folded.
	events    int     // how many of their events were added
	value     []byte  // their breakdown value
	done      bool    // they did every step: their later events change nothing
	best      int     // the furthest step they reached, from 1; 0 for none
	bestTimes []int64 // the times of the attempt that first reached it (its own copy)
	// Ordered and strict: the events of one time not yet folded, and entered[s], the
	// latest attempt that did s steps (entered[0] starts at the time being folded).
	group   []funnelEvent
	entered []funnelAttempt
	// Unordered: the times of each step's events within the window, oldest first, and
	// how many steps have one.
	queues    [][]int64
	completed int
}

func newFunnelFold(spec funnelSpec, maxBytes int) *funnelFold {
	f := &funnelFold{spec: spec, budget: maxBytes, limit: maxBytes, tallies: map[string]*funnelTally{},
		entered: make([]funnelAttempt, spec.steps+1), queues: make([][]int64, spec.steps),
		bestTimes: make([]int64, 0, spec.steps)}
	for s := range f.entered {
		f.entered[s].times, f.entered[s].events = make([]int64, 0, s), make([]int64, 0, s)
	}
	return f
}

// charge counts n more bytes held, refusing past the budget.
func (f *funnelFold) charge(n int) error {
	if f.budget -= n; f.budget < 0 {
		return queryErrorf("the funnel holds more than %d MB of conversion times, breakdown values and events of one person at one time: "+
			"shorten the date range, or break down by a property of fewer values", f.limit>>20)
	}
	return nil
}

// add folds the person's next event: its time (µs), steps and breakdown value.
func (f *funnelFold) add(at int64, steps uint64, value string) error {
	if f.events == 0 || f.spec.lastTouch {
		f.value = append(f.value[:0], value...)
	}
	f.events++
	f.seq++
	if f.done {
		return nil
	}
	e := funnelEvent{at: at, steps: steps, seq: f.seq}
	if f.spec.order == funnelUnordered {
		return f.unordered(e)
	}
	if len(f.group) > 0 && f.group[0].at != at {
		if f.foldGroup(); f.done {
			return nil
		}
	}
	if err := f.charge(funnelEventBytes); err != nil {
		return err
	}
	f.group = append(f.group, e)
	return nil
}

// endPerson tallies the person whose events were added, if any, and starts the next.
func (f *funnelFold) endPerson() error {
	if f.events == 0 {
		return nil
	}
	if !f.done {
		if f.spec.order == funnelUnordered {
			f.unorderedBest()
		} else if len(f.group) > 0 {
			f.foldGroup()
		}
	}
	err := f.tally()
	if f.onPerson != nil && err == nil {
		err = f.onPerson(f.best, f.value)
	}
	f.events, f.done, f.best, f.bestTimes = 0, false, 0, f.bestTimes[:0]
	f.budget += len(f.group) * funnelEventBytes
	f.group = f.group[:0]
	for s := range f.entered {
		f.entered[s].set = false
	}
	for s, queue := range f.queues {
		f.budget += len(queue) * funnelTimeBytes
		f.queues[s] = queue[:0]
	}
	f.completed = 0
	return err
}

// tally counts the person at the furthest step they reached, under their breakdown value.
func (f *funnelFold) tally() error {
	if f.best == 0 {
		return nil
	}
	t := f.tallies[string(f.value)]
	if t == nil {
		if err := f.charge(len(f.value) + f.spec.steps*funnelStepBytes); err != nil {
			return err
		}
		t = &funnelTally{counts: make([]int64, f.spec.steps), times: make([][]float64, f.spec.steps)}
		f.tallies[string(f.value)] = t
	}
	for s := range f.best {
		t.counts[s]++
	}
	for s := 1; s < f.best; s++ {
		if d := f.bestTimes[s] - f.bestTimes[s-1]; d > 0 {
			if err := f.charge(funnelTimeBytes); err != nil {
				return err
			}
			t.times[s] = append(t.times[s], float64(d)/1e6)
		}
	}
	return nil
}

// foldGroup folds the ordered or strict funnel's events of one time.
func (f *funnelFold) foldGroup() {
	g := f.group
	f.entered[0].set, f.entered[0].start = true, g[0].at
	if len(g) == 1 || !slices.ContainsFunc(g, func(e funnelEvent) bool { return e.steps != g[0].steps }) {
		for _, e := range g {
			f.orderedEvent(e, e.steps, true)
		}
	} else {
		for s := range f.spec.steps {
			for _, e := range g {
				if e.steps&(1<<s) != 0 {
					f.orderedEvent(e, 1<<s, false)
				}
			}
		}
	}
	f.budget += len(g) * funnelEventBytes
	f.group = f.group[:0]
	f.done = f.entered[f.spec.steps].set
}

// orderedEvent folds event e as the steps of mask steps; alone is false when it is
// folded one step at a time with other events of its time.
func (f *funnelFold) orderedEvent(e funnelEvent, steps uint64, alone bool) {
	for s := f.spec.steps; s >= 1; s-- { // s steps done once e is step s (bit s-1)
		if steps&(1<<(s-1)) == 0 {
			continue
		}
		from, to := &f.entered[s-1], &f.entered[s]
		if !from.set || e.at-from.start > f.spec.window {
			continue
		}
		if to.set && to.start == from.start {
			continue // this attempt did step s already
		}
		if !alone && slices.Contains(from.events, e.seq) {
			continue // e is an earlier step of this attempt
		}
		// entered[s] and entered[s-1] hold slices of their own, so from's are
		// copied, not shared.
		to.set, to.start = true, from.start
		to.times, to.events = append(append(to.times[:0], from.times...), e.at), append(append(to.events[:0], from.events...), e.seq)
		if s > f.best {
			f.best, f.bestTimes = s, append(f.bestTimes[:0], to.times...)
		}
	}
	if f.spec.order == funnelStrict && alone {
		for s := 1; s <= f.spec.steps; s++ {
			if steps&(1<<(s-1)) == 0 {
				f.entered[s].set = false
			}
		}
	}
}

// unordered folds event e of an unordered funnel.
func (f *funnelFold) unordered(e funnelEvent) error {
	for {
		oldest := -1
		for s, queue := range f.queues {
			if len(queue) > 0 && (oldest < 0 || queue[0] < f.queues[oldest][0]) {
				oldest = s
			}
		}
		if oldest < 0 || f.completed < f.spec.steps && f.queues[oldest][0]+f.spec.window >= e.at {
			break
		}
		f.unorderedBest()
		f.queues[oldest] = f.queues[oldest][1:]
		f.budget += funnelTimeBytes
		if len(f.queues[oldest]) == 0 {
			f.completed--
		}
	}
	newest := func(queue []int64) int64 {
		if len(queue) == 0 {
			return math.MinInt64
		}
		return queue[len(queue)-1]
	}
	pick := -1
	for s := range f.spec.steps {
		if e.steps&(1<<s) != 0 && (pick < 0 || newest(f.queues[s]) < newest(f.queues[pick])) {
			pick = s
		}
	}
	if err := f.charge(funnelTimeBytes); err != nil {
		return err
	}
	if len(f.queues[pick]) == 0 {
		f.completed++
	}
	f.queues[pick] = append(f.queues[pick], e.at)
	f.done = f.best == f.spec.steps
	return nil
}

// unorderedBest records the steps done within the window when they are the most yet:
// their oldest kept times, in order.
func (f *funnelFold) unorderedBest() {
	if f.completed <= f.best {
		return
	}
	f.bestTimes = f.bestTimes[:0]
	for _, queue := range f.queues {
		if len(queue) > 0 {
			f.bestTimes = append(f.bestTimes, queue[0])
		}
	}
	slices.Sort(f.bestTimes)
	f.best = f.completed
}

// funnelsResults shapes the tallies into PostHog's answer: without a breakdown, the
// funnel; with one, a funnel per value, the 25 largest and the rest together as
// "Other", largest first (by the count of the last step, then of the one before...,
// then by value). It stops with ctx's error once ctx is done.
func funnelsResults(ctx context.Context, tallies map[string]*funnelTally, fq FunnelsQuery, spec funnelSpec) (any, error) {
	if !spec.breakdown {
		t := tallies[""]
		if t == nil {
			return []FunnelStepResult{}, nil
		}
		return funnelSteps(t, fq, spec, nil), nil
	}
	keys := slices.Collect(maps.Keys(tallies))
	sortFunnels(keys, tallies)
	if len(keys) > breakdownLimit {
		merged := make(map[string]*funnelTally, breakdownLimit+1)
		for i, k := range keys {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if i < breakdownLimit {
				merged[k] = tallies[k]
				continue
			}
			other := merged[funnelOther]
			if other == nil {
				other = &funnelTally{counts: make([]int64, spec.steps), times: make([][]float64, spec.steps)}
				merged[funnelOther] = other
			}
			for s := range spec.steps {
				other.counts[s] += tallies[k].counts[s]
				other.times[s] = append(other.times[s], tallies[k].times[s]...)
			}
		}
		tallies, keys = merged, slices.Collect(maps.Keys(merged))
		sortFunnels(keys, tallies)
	}
	funnels := make([][]FunnelStepResult, 0, len(keys))
	for _, k := range keys {
		funnels = append(funnels, funnelSteps(tallies[k], fq, spec, &k))
	}
	return funnels, nil
}

// sortFunnels orders breakdown values by their funnels: the larger count of the last
// step first, then of the step before..., then by value.
func sortFunnels(keys []string, tallies map[string]*funnelTally) {
	slices.SortFunc(keys, func(a, b string) int {
		ca, cb := tallies[a].counts, tallies[b].counts
		for s := len(ca) - 1; s >= 0; s-- {
			if c := cmp.Compare(cb[s], ca[s]); c != 0 {
				return c
			}
		}
		return strings.Compare(a, b)
	})
}

// funnelSteps is the answer of one funnel: a step per step of fq.
func funnelSteps(t *funnelTally, fq FunnelsQuery, spec funnelSpec, breakdown *string) []FunnelStepResult {
	steps := make([]FunnelStepResult, len(fq.Series))
	for i, step := range fq.Series {
		r := FunnelStepResult{Order: i, People: []string{}, Count: t.counts[i], Type: "events", Breakdown: breakdown, BreakdownValue: breakdown}
		if spec.order == funnelUnordered {
			name := fmt.Sprintf("Completed %d step", i+1)
			if i > 0 {
				name += "s"
			}
			r.Name = &name
		} else {
			r.ActionID, r.Name, r.CustomName = step.Event, step.Event, step.CustomName
		}
		if times := t.times[i]; len(times) > 0 {
			// Sorted first, so that the sum does not depend on the order the persons
			// were folded in, which differs as funnelTallies reads them.
			slices.Sort(times)
			var sum float64
			for _, d := range times {
				sum += d
			}
			mean := sum / float64(len(times))
			median := times[len(times)/2]
			if len(times)%2 == 0 {
				median = (times[len(times)/2-1] + median) / 2
			}
			r.AverageConversionTime, r.MedianConversionTime = &mean, &median
		}
		steps[i] = r
	}
	return steps
}
