package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/bench/gen"
)

// target is the server under load.
type target struct {
	CaptureURL string `json:"capture_url"`
	// CaptureURLs are a cluster's capture listeners, one a node, CaptureURL the first:
	// a stream's connections go to each in turn. Empty: all go to CaptureURL.
	CaptureURLs []string `json:"capture_urls,omitempty"`
	AdminURL    string   `json:"admin_url,omitempty"`
	ProjectID   int64    `json:"project_id,omitempty"`
	token       string
	// api reads the management listener; nil when there is none to read, and then
	// visibility and the row check are skipped.
	api *apiClient
	// pids are the server's process ids (a cluster's: its nodes', named by nodes),
	// none when it is not on this machine; its CPU and memory then come from hedge's
	// /metrics, if api is set.
	pids  []int
	nodes []string
}

func (t *target) probe() serverProbe {
	switch {
	case len(t.pids) > 0:
		p := procProbe{nodes: t.nodes}
		for _, pid := range t.pids {
			p.pids = append(p.pids, strconv.Itoa(pid))
		}
		return p
	case t.api != nil:
		return metricsProbe{api: t.api}
	}
	return nil
}

// captureURL is where a stream's connection number conn sends.
func (t *target) captureURL(conn int) string {
	if len(t.CaptureURLs) == 0 {
		return t.CaptureURL
	}
	return t.CaptureURLs[conn%len(t.CaptureURLs)]
}

// runner runs scenarios against a target.
type runner struct {
	target  *target
	seed    uint64
	log     io.Writer
	profile string // directory for the server's CPU profiles ("": none)
	// settle is how long the row check waits for acknowledged rows to show up, for
	// endpoints that store asynchronously (hedge stores before it answers).
	settle time.Duration
	// flags is the flags scenarios' project, set up by the first of them.
	flags *flagsProject
	// tenant is the project that the abuse's queries go to, set up by the first
	// scenario that sends them.
	tenant int64
}

// scenarioRun is one run of a scenario: what was sent and answered, what the server used
// meanwhile, and what the database holds afterwards.
type scenarioRun struct {
	scenario   scenario
	runID      uint32
	build      time.Duration // building the bodies, before timing
	window     time.Duration // the measured part
	sent       sendStats     // sends started in the measured part
	all        sendStats     // every send, warmup included: what the row check expects
	bodyEvents int           // events per body of the stream whose rows are checked
	// beside is the traffic sent beside the scenario's own (scenario.Beside), nil
	// when none; its rows are the ones checked.
	beside *besideRun
	// answers is what a flags scenario verified of its answers.
	answers *answerCheck
	// abuse is what the abuse beside the scenario's traffic did (scenario.Abuse).
	abuse *abuseRun
	// queries is what the queries scenario measured (scenario.Queries).
	queries *queryRun
	// visibility is the visibility sampler's measures; dedup is hedge's deduplication
	// set as read while the run lasted, and intervals the run's figures per interval,
	// for a scenario that asks for them (scenario.Interval).
	visibility []visibleSample
	dedup      []dedupSample
	intervals  []interval
	reads      map[string]*sendStats
	usage      usage
	warmEnd    time.Duration // since the run started, for the soak's series
	rows       rowCheck
	err        error // the first failed send's error
}

// sendStats counts sends and their answers.
type sendStats struct {
	latencies []time.Duration
	statuses  map[int]int64 // 0: no answer
	acked     int64         // sends answered 200
	events    int64         // events in them
	bytes     int64         // body bytes of them
	// refused and unanswered list the sends not answered 200: with an answer, and
	// without one (the server may have stored those).
	refused, unanswered []uint64
	first, last         time.Time // the measured sends' first start and last answer
	// timeline is each measured send, for a scenario reported per interval.
	timeline []timedSend
}

// besideRun is what the traffic beside a scenario's own sent and was answered.
type besideRun struct {
	sent, all sendStats
	window    time.Duration
}

func newSendStats() *sendStats { return &sendStats{statuses: map[int]int64{}} }

func (s *sendStats) add(o *sendStats) {
	s.latencies = append(s.latencies, o.latencies...)
	for status, n := range o.statuses {
		s.statuses[status] += n
	}
	s.acked += o.acked
	s.events += o.events
	s.bytes += o.bytes
	s.refused = append(s.refused, o.refused...)
	s.unanswered = append(s.unanswered, o.unanswered...)
	s.timeline = append(s.timeline, o.timeline...)
	if s.first.IsZero() || !o.first.IsZero() && o.first.Before(s.first) {
		s.first = o.first
	}
	if o.last.After(s.last) {
		s.last = o.last
	}
}

func (s *sendStats) record(status, events, bytes int, due, answered time.Time, latency bool) {
	s.statuses[status]++
	if latency {
		s.latencies = append(s.latencies, answered.Sub(due))
	}
	if status == fasthttp.StatusOK {
		s.acked++
		s.events += int64(events)
		s.bytes += int64(bytes)
	}
	if s.first.IsZero() || due.Before(s.first) {
		s.first = due
	}
	s.last = answered
}

// run builds the scenario's bodies, sends them, and checks the rows.
func (r *runner) run(ctx context.Context, sc scenario) (*scenarioRun, error) {
	if sc.Flags && r.flags == nil {
		begin := time.Now()
		project, err := setupFlags(ctx, r.target, r.seed, sc.flagsPersons)
		if err != nil {
			return nil, fmt.Errorf("cannot set up the flags scenarios: %w", err)
		}
		r.flags = project
		fmt.Fprintf(r.log, "%-20s %d persons stored, %d flags in each answer, %d bodies, set up in %v\n", sc.Name,
			project.persons, project.count, len(project.bodies), time.Since(begin).Round(time.Millisecond))
	}
	if sc.Abuse != nil && sc.Abuse.QueryWorkers > 0 && r.tenant == 0 {
		if r.target.api == nil {
			return nil, fmt.Errorf("the abuse's queries go to another tenant, made through the management API: give -admin-url, -personal-key and -project-id (or -bootstrap)")
		}
		project, err := setupTenant(r.target.api)
		if err != nil {
			return nil, fmt.Errorf("cannot set up the abuse scenario's tenant: %w", err)
		}
		r.tenant = project
	}
	begin := time.Now()
	bodies := sc.bodies(r.target.token, r.seed)
	var besideBodies []*gen.Body
	if sc.Beside != nil {
		besideBodies = sc.Beside.bodies(r.target.token, r.seed+1)
	}
	res := &scenarioRun{scenario: sc, runID: rand.Uint32(), build: time.Since(begin), reads: map[string]*sendStats{}}
	switch {
	case len(besideBodies) > 0:
		res.bodyEvents = besideBodies[0].Events
	case len(bodies) > 0:
		res.bodyEvents = bodies[0].Events
	}
	switch {
	case sc.Flags:
		fmt.Fprintf(r.log, "%-20s run %08x: %d /flags/ bodies, %d bodies of %d events beside, built in %v\n", sc.Name, res.runID,
			len(r.flags.bodies), len(besideBodies), res.bodyEvents, res.build.Round(time.Millisecond))
	default:
		fmt.Fprintf(r.log, "%-20s run %08x: %d bodies of %d events built in %v\n", sc.Name, res.runID, len(bodies), res.bodyEvents, res.build.Round(time.Millisecond))
	}

	w, err := startWatch(r.target.probe())
	if err != nil {
		return nil, err
	}
	// The abuse is in place before the load starts, and ends with it.
	var abuser *abuser
	if sc.Abuse != nil {
		begin := time.Now()
		if abuser, err = startAbuse(ctx, *sc.Abuse, r.target, r.tenant); err != nil {
			w.end()
			return nil, err
		}
		queries := ""
		if sc.Abuse.QueryWorkers > 0 {
			queries = fmt.Sprintf(", %d query workers on project %d", sc.Abuse.QueryWorkers, r.tenant)
		}
		fmt.Fprintf(r.log, "%-20s %d idle connections and %d stalled bodies from %s%s: in place in %v\n", sc.Name, sc.Abuse.IdleConns,
			sc.Abuse.StalledBodies, strings.Join(abuser.run.sources, ", "), queries, time.Since(begin).Round(time.Millisecond))
	}
	start := time.Now()
	warmEnd := start.Add(sc.Warmup)
	end := warmEnd.Add(sc.Duration)
	res.warmEnd = sc.Warmup

	var side sync.WaitGroup
	sideCtx, stopSide := context.WithCancel(ctx)
	var sampler *visibilitySampler
	if r.target.api != nil && !sc.Health {
		sampler = newVisibilitySampler(r.target.api)
		side.Go(func() { res.visibility = sampler.run(sideCtx) })
	}
	if sc.Interval > 0 && r.target.api != nil {
		side.Go(func() { res.dedup = sampleDedup(sideCtx, r.target.api, warmEnd, sc.Interval) })
	}
	if sc.Reads && r.target.api != nil {
		for _, kind := range []string{"management", "query"} {
			stats := newSendStats()
			res.reads[kind] = stats
			side.Go(func() { readLoop(sideCtx, r.target.api, kind, stats, warmEnd) })
		}
	}
	if r.profile != "" && r.target.api != nil {
		side.Go(func() { r.cpuProfile(sideCtx, sc, res.runID, warmEnd, end) })
	}

	// Each stream sends on connections of its own; the visibility sampler follows the
	// one that carries events.
	var wg sync.WaitGroup
	startStream := func(sc scenario, bodies []*gen.Body, flags *flagsProject, sampler *visibilitySampler) []*worker {
		workers := make([]*worker, sc.Connections)
		client := &fasthttp.Client{
			Name:            "hedge-bench",
			MaxConnsPerHost: sc.Connections,
			ReadTimeout:     2 * time.Minute, // a 20 MB body on a loaded machine
			WriteTimeout:    2 * time.Minute,
		}
		next := new(atomic.Uint64)
		for i := range workers {
			workers[i] = &worker{ctx: ctx, sc: sc, client: client, bodies: bodies, flags: flags, runID: res.runID, next: next, sampler: sampler,
				start: start, warmEnd: warmEnd, end: end, url: r.target.captureURL(i), measured: newSendStats(), all: newSendStats()}
			if flags != nil {
				workers[i].answers = &answerCheck{}
			}
			wg.Go(workers[i].loop)
		}
		return workers
	}
	var workers, besideWorkers []*worker
	if sc.Flags {
		workers = startStream(sc, nil, r.flags, nil)
	} else {
		workers = startStream(sc, bodies, nil, sampler)
	}
	if sc.Beside != nil {
		besideWorkers = startStream(*sc.Beside, besideBodies, nil, sampler)
	}
	wg.Wait()
	if abuser != nil {
		res.abuse = abuser.stop()
	}
	stopSide()
	side.Wait()
	res.usage, err = w.end()
	if err != nil {
		return nil, err
	}
	res.sent, res.all, res.err = collect(workers)
	res.window = window(sc, &res.sent)
	if sc.Interval > 0 {
		res.intervals = bucket(warmEnd, sc.Duration, sc.Interval, timeline{
			sends: res.sent.timeline, visible: res.visibility, dedup: res.dedup, rss: rssAt(w.start, res.usage.Series)})
	}
	if sc.Flags {
		res.answers = &answerCheck{Flags: r.flags.count}
		for _, wk := range workers {
			res.answers.add(wk.answers)
		}
		res.answers.finish()
	}
	checked := &res.all
	if sc.Beside != nil {
		b := &besideRun{}
		var besideErr error
		b.sent, b.all, besideErr = collect(besideWorkers)
		b.window = window(*sc.Beside, &b.sent)
		res.err = cmp.Or(res.err, besideErr)
		res.beside, checked = b, &b.all
	}
	if r.target.api != nil && !sc.Health {
		res.rows, err = r.checkRows(res.runID, checked, res.bodyEvents)
		if err != nil {
			return nil, fmt.Errorf("cannot check the rows of %s: %w", sc.Name, err)
		}
	} else {
		res.rows.Skipped = "no query API to count rows with"
	}
	return res, nil
}

// collect adds up the workers' sends: the measured ones, all of them, and the first
// failed send's error.
func collect(workers []*worker) (sent, all sendStats, err error) {
	sent, all = *newSendStats(), *newSendStats()
	for _, wk := range workers {
		sent.add(wk.measured)
		all.add(wk.all)
		if err == nil {
			err = wk.err
		}
	}
	return sent, all, err
}

// window is the measured part of a stream: its duration, or for a count of sends from
// the first to the last answer; an open-loop stream that falls behind its schedule
// lasts until its last answer, so that throughput counts what the server did, not
// what was offered.
func window(sc scenario, sent *sendStats) time.Duration {
	switch span := sent.last.Sub(sent.first); {
	case sc.Sends > 0:
		return span
	case sc.Rate > 0:
		return max(sc.Duration, span)
	}
	return sc.Duration
}

// worker is one connection's sending loop.
type worker struct {
	ctx                 context.Context // ends the run early (an interrupt)
	sc                  scenario
	client              *fasthttp.Client
	bodies              []*gen.Body
	flags               *flagsProject // a flags stream's bodies, instead of bodies
	answers             *answerCheck  // what a flags stream verified
	runID               uint32
	next                *atomic.Uint64 // the next send's number, shared by the workers
	sampler             *visibilitySampler
	start, warmEnd, end time.Time
	url                 string
	measured, all       *sendStats
	err                 error
}

func (w *worker) loop() {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	sc := w.sc
	if sc.Health {
		req.SetRequestURI(w.url + "/_health")
	} else {
		req.SetRequestURI(w.url + sc.Path)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType(sc.contentType())
	}
	if w.flags != nil {
		req.Header.SetUserAgent(flagsUserAgent)
	}
	var buf []byte
	for {
		send := w.next.Add(1) - 1
		due, measured, ok := w.schedule(send)
		if !ok {
			return
		}
		events, size := 0, 0
		var flagsBody *flagsBody
		switch {
		case w.flags != nil:
			flagsBody = &w.flags.bodies[send%uint64(len(w.flags.bodies))]
			req.SetBodyRaw(flagsBody.data)
			req.Header.SetContentType(flagsBody.contentType())
			size = len(flagsBody.data)
		case !sc.Health:
			body := w.bodies[send%uint64(len(w.bodies))]
			buf = body.Stamp(buf[:0], w.runID, send)
			req.SetBodyRaw(buf)
			events, size = body.Events, len(buf)
		}
		err := w.client.Do(req, resp)
		answered := time.Now()
		status := 0
		if err == nil {
			status = resp.StatusCode()
		} else if w.err == nil {
			w.err = err
		}
		if measured {
			w.measured.record(status, events, size, due, answered, true)
			if sc.Interval > 0 {
				w.measured.timeline = append(w.measured.timeline, timedSend{due: due, latency: answered.Sub(due), status: status, events: events})
			}
			if status == fasthttp.StatusOK && w.sampler != nil {
				w.sampler.offer(w.runID, send, answered)
			}
		}
		if flagsBody != nil {
			w.answers.answer(w.flags, send, status, resp.Body(), flagsBody)
		}
		if !sc.Health {
			w.all.record(status, events, size, due, answered, false)
			switch {
			case status == 0:
				w.all.unanswered = append(w.all.unanswered, send)
			case status != fasthttp.StatusOK:
				w.all.refused = append(w.all.refused, send)
			}
		}
	}
}

// schedule says when send number send is due and whether it is measured, waiting
// for its time in open-loop scenarios; ok is false when the run is over.
func (w *worker) schedule(send uint64) (due time.Time, measured, ok bool) {
	sc := w.sc
	if w.ctx.Err() != nil {
		return due, false, false
	}
	switch {
	case sc.Sends > 0:
		if send >= uint64(sc.WarmupSends+sc.Sends) || time.Now().After(w.end) {
			return due, false, false
		}
		return time.Now(), send >= uint64(sc.WarmupSends), true
	case sc.Rate > 0:
		due = w.start.Add(time.Duration(float64(send) / sc.Rate * float64(time.Second)))
		if !due.Before(w.end) {
			return due, false, false
		}
		time.Sleep(time.Until(due))
	default:
		due = time.Now()
		if !due.Before(w.end) {
			return due, false, false
		}
	}
	return due, !due.Before(w.warmEnd), true
}

// readLoop reads the management API or the query API back to back, as a dashboard
// user would, from warmEnd until ctx ends, recording each answer.
func readLoop(ctx context.Context, api *apiClient, kind string, stats *sendStats, warmEnd time.Time) {
	management := []string{
		"/api/organizations/",
		"/api/users/@me/",
		fmt.Sprintf("/api/projects/%d/persons/?limit=20", api.project),
		fmt.Sprintf("/api/projects/%d/dashboards/", api.project),
	}
	queries := []any{
		map[string]string{"kind": "HogQLQuery", "query": "SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 1 HOUR GROUP BY event ORDER BY count() DESC LIMIT 20"},
		map[string]any{"kind": "TrendsQuery", "interval": "hour", "dateRange": map[string]string{"date_from": "-1d"},
			"series": []map[string]string{{"kind": "EventsNode", "event": "$pageview", "math": "total"}}},
		map[string]any{"kind": "EventsQuery", "select": []string{"event", "distinct_id", "timestamp"}, "orderBy": []string{"timestamp DESC"}, "limit": 100},
	}
	time.Sleep(time.Until(warmEnd))
	for i := 0; ctx.Err() == nil; i++ {
		due := time.Now()
		var status int
		var err error
		if kind == "management" {
			status, _, err = api.do(fasthttp.MethodGet, management[i%len(management)], nil)
		} else {
			status, _, err = api.query(queries[i%len(queries)])
		}
		if err != nil {
			status = 0
		}
		stats.record(status, 0, 0, due, time.Now(), true)
	}
}

// cpuProfile saves the server's CPU profile of the measured part of a run, when hedge
// serves /debug/pprof (hedge serve --pprof).
func (r *runner) cpuProfile(ctx context.Context, sc scenario, runID uint32, warmEnd, end time.Time) {
	time.Sleep(time.Until(warmEnd))
	seconds := int(time.Until(end).Seconds())
	if sc.Sends > 0 {
		seconds = 5
	}
	if seconds < 1 || ctx.Err() != nil {
		return
	}
	status, body, err := r.target.api.do(fasthttp.MethodGet, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), nil)
	if err == nil && status != fasthttp.StatusOK {
		err = fmt.Errorf("status %d (is hedge serving with --pprof?)", status)
	}
	if err == nil {
		path := filepath.Join(r.profile, fmt.Sprintf("%s-%08x.cpu.pprof", sc.Name, runID))
		err = os.WriteFile(path, body, 0o644)
	}
	if err != nil {
		fmt.Fprintf(r.log, "%-20s no CPU profile: %v\n", sc.Name, err)
	}
}

// visibilitySampler measures, for some of the events answered 200, how long until the
// query API reads them: one at a time, so that its queries stay a small load.
type visibilitySampler struct {
	api   *apiClient
	want  atomic.Bool
	acks  chan ack
	every time.Duration
}

type ack struct {
	uuid []byte
	at   time.Time
}

// visibilityTimeout gives up on an event that never shows up (and reports it).
const visibilityTimeout = 30 * time.Second

func newVisibilitySampler(api *apiClient) *visibilitySampler {
	// At most ten samples a second: each is a query API call that costs hedge a few
	// milliseconds of CPU (about 8% of it at 50 ms spacing, measured under capture).
	return &visibilitySampler{api: api, acks: make(chan ack, 1), every: 100 * time.Millisecond}
}

// offer hands the first event of an acknowledged send to the sampler if it is waiting
// for one; it never blocks a worker.
func (s *visibilitySampler) offer(runID uint32, send uint64, at time.Time) {
	if s.want.CompareAndSwap(true, false) {
		s.acks <- ack{uuid: gen.StampedUUID(nil, runID, send, 0), at: at}
	}
}

// visibleSample is how long an event acknowledged at acked took to be read.
type visibleSample struct {
	acked time.Time
	delay time.Duration
}

// run samples until ctx ends and returns the delays, a timeout counting as
// visibilityTimeout.
func (s *visibilitySampler) run(ctx context.Context) []visibleSample {
	var delays []visibleSample
	for {
		s.want.Store(true)
		var a ack
		select {
		case <-ctx.Done():
			return delays
		case a = <-s.acks:
		}
		query := fmt.Sprintf("SELECT count() FROM events WHERE uuid = '%s'", a.uuid)
		// hedge stores before it answers, so the first query finds the event; an
		// endpoint that stores later is polled less and less often.
		for wait := 5 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			row, err := s.api.count(query)
			if err == nil && row[0] > 0 {
				delays = append(delays, visibleSample{a.at, time.Since(a.at)})
				break
			}
			if time.Since(a.at) > visibilityTimeout {
				delays = append(delays, visibleSample{a.at, visibilityTimeout})
				break
			}
			time.Sleep(wait)
		}
		time.Sleep(s.every)
	}
}
