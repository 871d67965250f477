package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The abuse scenarios measure a /batch/ load like batch-1k's beside three kinds of
// abuse, each from elsewhere than the load: connections that never send a request,
// bodies that stop sending, and another tenant's heavy queries; the first two
// (abuse-connections), then all three at once (abuse). The same load alone runs just
// before them (abuseBaseline), and the report compares each with it.

// abuse is what the abuse scenario sends beside its load.
type abuse struct {
	// IdleConns connections to the capture listener send nothing; hedge closes each
	// after its header timeout, and the abuse opens it again, so that as many stay open.
	IdleConns int `json:"idle_connections"`
	// StalledBodies requests POST /batch/ announcing StalledLength bytes, send
	// StalledSent of them (past the first 64 KB, which hedge takes with the headers)
	// and stop; hedge ends each after its body idle timeout, and the abuse starts it again.
	StalledBodies int `json:"stalled_bodies"`
	StalledLength int `json:"stalled_content_length"`
	StalledSent   int `json:"stalled_bytes_sent"`
	// QueryWorkers send Queries (HogQL), each worker one after the other, to the
	// project of another organization than the load's.
	QueryWorkers int      `json:"query_workers"`
	Queries      []string `json:"queries,omitempty"`
}

// abuseBaseline is the scenario that runs the abuse scenario's load alone, just before it.
const abuseBaseline = "abuse-baseline"

// logSuffix ends the name of a scenario that runs through the event log (scenario.Log).
const logSuffix = "-log"

// perSource is how many of the abuse's connections come from one address: half of
// hedge's default cap on one address's connections, so that the abuse measures the
// timeouts, not the cap.
const perSource = 500

// tenantName names the abuse's other organization, which a second run finds by name.
const tenantName = "hedge bench: tenant"

// abuseSources are the addresses that the abuse's n connections come from, one for
// every perSource of them: when hedge listens on an IPv4 loopback address, loopback
// addresses other than the load's (127.0.0.2 and up: Linux routes all of 127/8 to lo),
// so that the load, from 127.0.0.1, shares no address with the abuse; else nil, the
// machine's own address, the load's too.
func abuseSources(host string, n int) []*net.TCPAddr {
	ip := net.ParseIP(host).To4()
	if ip == nil || !ip.IsLoopback() {
		return []*net.TCPAddr{nil}
	}
	sources := make([]*net.TCPAddr, max(1, (n+perSource-1)/perSource))
	for i := range sources {
		sources[i] = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
	}
	return sources
}

// setupTenant returns the abuse's other tenant: the first project of the organization
// named tenantName, created with its default project through the management API when
// the key's user has none.
func setupTenant(api *apiClient) (int64, error) {
	type organization struct {
		Name  string `json:"name"`
		Teams []struct {
			ID int64 `json:"id"`
		} `json:"teams"`
	}
	const limit = 100
	for offset := 0; ; offset += limit {
		status, body, err := api.do(fasthttp.MethodGet, fmt.Sprintf("/api/organizations/?limit=%d&offset=%d", limit, offset), nil)
		if err != nil {
			return 0, err
		}
		if status != fasthttp.StatusOK {
			return 0, fmt.Errorf("cannot list organizations: the management API answered %d: %.300s", status, body)
		}
		var page struct {
			Count   int            `json:"count"`
			Results []organization `json:"results"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, fmt.Errorf("cannot read the organizations: %w", err)
		}
		for _, o := range page.Results {
			if o.Name == tenantName && len(o.Teams) > 0 {
				return o.Teams[0].ID, nil
			}
		}
		if len(page.Results) < limit || offset+limit >= page.Count {
			break
		}
	}
	create, err := json.Marshal(map[string]string{"name": tenantName})
	if err != nil {
		return 0, fmt.Errorf("cannot encode the organization: %w", err)
	}
	status, body, err := api.do(fasthttp.MethodPost, "/api/organizations/", create)
	if err != nil {
		return 0, err
	}
	if status != fasthttp.StatusCreated {
		return 0, fmt.Errorf("cannot create organization %q: the management API answered %d: %.300s", tenantName, status, body)
	}
	var created organization
	if err := json.Unmarshal(body, &created); err != nil || len(created.Teams) == 0 {
		return 0, fmt.Errorf("cannot read the project of the created organization: %v: %.300s", err, body)
	}
	return created.Teams[0].ID, nil
}

// abuser runs one run's abuse, from startAbuse until stop.
type abuser struct {
	cfg      abuse
	addr     string // the capture listener's host:port
	stalled  []byte // a stalled body's request, as far as it is sent
	queryURL string
	key      string
	http     *http.Client
	ctx      context.Context // ends the abuse: closes its connections
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	idleOpen atomic.Int64

	mu  sync.Mutex
	run *abuseRun
}

// abuseRun is what one run's abuse did and how hedge answered it, warmup included.
type abuseRun struct {
	sources []string
	tenant  int64
	// idleHeld is how many idle connections were open when the load ended.
	idleOpened, idleHeld, stalledStarted int64
	// idleClosed is how long hedge kept each idle connection it closed, stalledEnded
	// how long each stalled body it ended had been silent; their answers are the
	// statuses hedge answered before closing (0: none).
	idleClosed, stalledEnded    []time.Duration
	idleAnswers, stalledAnswers map[int]int64
	queries                     *sendStats
	// queriesAbandoned were still waiting for their answers when the load ended.
	queriesAbandoned int64
	errors           int64
	firstError       error
}

// startAbuse opens the abuse's connections, waits until each has sent what it sends,
// and starts the queries against project tenant (which needs t.api).
func startAbuse(ctx context.Context, cfg abuse, t *target, tenant int64) (*abuser, error) {
	u, err := url.Parse(t.CaptureURL)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("the abuse scenario opens plain TCP connections: it needs an http:// capture URL, not %q", t.CaptureURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	sources := abuseSources(u.Hostname(), cfg.IdleConns+cfg.StalledBodies)
	a := &abuser{
		cfg: cfg, addr: addr, stalled: stalledRequest(u.Host, t.token, cfg.StalledLength, cfg.StalledSent),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.QueryWorkers}},
		run:  &abuseRun{tenant: tenant, idleAnswers: map[int]int64{}, stalledAnswers: map[int]int64{}, queries: newSendStats()},
	}
	if cfg.QueryWorkers > 0 {
		a.queryURL, a.key = fmt.Sprintf("%s/api/projects/%d/query/", t.api.adminURL, tenant), t.api.key
	}
	a.ctx, a.cancel = context.WithCancel(ctx)
	for _, s := range sources {
		name := "this machine's address"
		if s != nil {
			name = s.IP.String()
		}
		a.run.sources = append(a.run.sources, name)
	}
	source := func(i int) *net.TCPAddr { return sources[min(i/perSource, len(sources)-1)] }
	var ready sync.WaitGroup
	ready.Add(cfg.IdleConns + cfg.StalledBodies)
	for i := range cfg.IdleConns {
		a.wg.Go(func() { a.idle(source(i), sync.OnceFunc(ready.Done)) })
	}
	for i := range cfg.StalledBodies {
		a.wg.Go(func() { a.stall(source(cfg.IdleConns+i), sync.OnceFunc(ready.Done)) })
	}
	ready.Wait()
	for i := range cfg.QueryWorkers {
		a.wg.Go(func() { a.query(i) })
	}
	return a, nil
}

// stop ends the abuse: it closes every connection and abandons the queries waiting
// for their answers (hedge runs each on to its end, at most its query time limit),
// waits for its goroutines, and returns what the abuse did.
func (a *abuser) stop() *abuseRun {
	a.mu.Lock()
	a.run.idleHeld = a.idleOpen.Load()
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait()
	a.http.CloseIdleConnections()
	return a.run
}

// idle holds one connection that never sends a byte, opening it again whenever hedge
// closes it; ready is called once the first is open (or failed, or the abuse ended).
func (a *abuser) idle(source *net.TCPAddr, ready func()) {
	defer ready()
	for a.ctx.Err() == nil {
		conn := a.dial(source)
		ready()
		if conn == nil {
			continue
		}
		opened := time.Now()
		a.idleOpen.Add(1)
		status := a.awaitClose(conn)
		a.idleOpen.Add(-1)
		a.mu.Lock()
		a.run.idleOpened++
		if a.ctx.Err() == nil {
			a.run.idleClosed = append(a.run.idleClosed, time.Since(opened))
			a.run.idleAnswers[status]++
		}
		a.mu.Unlock()
	}
}

// stall sends one stalled body, starting another whenever hedge ends it; ready is
// called once the first has sent its bytes (or failed, or the abuse ended).
func (a *abuser) stall(source *net.TCPAddr, ready func()) {
	defer ready()
	for a.ctx.Err() == nil {
		conn := a.dial(source)
		if conn == nil {
			ready()
			continue
		}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := conn.Write(a.stalled)
		ready()
		if err != nil {
			conn.Close()
			a.fail(fmt.Errorf("cannot send a stalled body: %w", err))
			continue
		}
		sent := time.Now()
		status := a.awaitClose(conn)
		a.mu.Lock()
		a.run.stalledStarted++
		if a.ctx.Err() == nil {
			a.run.stalledEnded = append(a.run.stalledEnded, time.Since(sent))
			a.run.stalledAnswers[status]++
		}
		a.mu.Unlock()
	}
}

// dial connects to the capture listener from source (nil: the machine's address); nil
// when it cannot, after a pause so that a failing dial does not spin.
func (a *abuser) dial(source *net.TCPAddr) net.Conn {
	d := net.Dialer{Timeout: 10 * time.Second}
	if source != nil {
		d.LocalAddr = source // a nil *TCPAddr in the interface would not be nil
	}
	conn, err := d.DialContext(a.ctx, "tcp", a.addr)
	if err != nil {
		a.fail(fmt.Errorf("cannot connect to the capture listener: %w", err))
		return nil
	}
	return conn
}

// fail counts an error of the abuse's own (not one of hedge's answers) and pauses.
func (a *abuser) fail(err error) {
	if a.ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	a.run.errors++
	if a.run.firstError == nil {
		a.run.firstError = err
	}
	a.mu.Unlock()
	select {
	case <-a.ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// awaitClose reads conn until hedge closes it, or the abuse ends and closes it, and
// returns the status that hedge answered before closing (0: none).
func (a *abuser) awaitClose(conn net.Conn) int {
	stop := context.AfterFunc(a.ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	var head [len("HTTP/1.1 200")]byte
	n, _ := io.ReadFull(conn, head[:])
	io.Copy(io.Discard, conn)
	status, err := strconv.Atoi(string(bytes.TrimPrefix(head[:n], []byte("HTTP/1.1 "))))
	if n < len(head) || err != nil {
		return 0
	}
	return status
}

// query runs the worker's queries one after the other, starting at the worker's own,
// until the abuse ends.
func (a *abuser) query(worker int) {
	for i := worker; a.ctx.Err() == nil; i++ {
		sent := time.Now()
		status, err := a.tenantQuery(a.cfg.Queries[i%len(a.cfg.Queries)])
		if a.ctx.Err() != nil {
			a.mu.Lock()
			a.run.queriesAbandoned++
			a.mu.Unlock()
			return
		}
		if err != nil {
			a.fail(err)
		}
		a.mu.Lock()
		a.run.queries.record(status, 0, 0, sent, time.Now(), true)
		a.mu.Unlock()
	}
}

// tenantQuery runs a HogQL query in the tenant's project and returns hedge's status;
// the abuse's end abandons it (net/http closes its connection).
func (a *abuser) tenantQuery(sql string) (int, error) {
	body, err := json.Marshal(map[string]any{"query": map[string]string{"kind": "HogQLQuery", "query": sql}})
	if err != nil {
		return 0, fmt.Errorf("cannot encode a query: %w", err)
	}
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, a.queryURL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("cannot make a query request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot query the tenant's project: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// stalledRequest is a stalled body's request as far as it is sent: the head of a
// /batch/ request announcing length bytes, and the first sent bytes of its body, the
// start of a batch of events for the project of token.
func stalledRequest(host, token string, length, sent int) []byte {
	b := fmt.Appendf(nil, "POST /batch/ HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, length)
	body := fmt.Appendf(nil, `{"api_key":%q,"batch":[`, token)
	event := []byte(`{"event":"$pageview","properties":{"distinct_id":"bench-stalled","$current_url":"https://example.com/"}},`)
	for len(body) < sent {
		body = append(body, event...)
	}
	return append(b, body[:sent]...)
}

// abuseStats is what the abuse did and how hedge answered it, over a scenario's runs.
type abuseStats struct {
	// Sources are the addresses the idle connections and the stalled bodies came
	// from, perSource connections each; TenantProject is where the queries went.
	Sources       []string `json:"sources"`
	TenantProject int64    `json:"tenant_project"`
	// IdleOpened counts the idle connections opened, again after hedge closed them
	// too; IdleHeld those open when the load ended; IdleClosed how long hedge kept
	// each it closed.
	IdleOpened  int64            `json:"idle_opened"`
	IdleHeld    int64            `json:"idle_open_at_end"`
	IdleClosed  percentiles      `json:"idle_closed_by_hedge_after_ms"`
	IdleAnswers map[string]int64 `json:"idle_answers,omitempty"`
	// StalledEnded is how long each stalled body that hedge ended had been silent.
	StalledStarted int64            `json:"stalled_started"`
	StalledEnded   percentiles      `json:"stalled_ended_by_hedge_after_ms"`
	StalledAnswers map[string]int64 `json:"stalled_answers,omitempty"`
	// Queries are the tenant's answered queries, their latency from sending;
	// QueriesAbandoned were still running when the load ended.
	Queries          reads `json:"queries"`
	QueriesAbandoned int64 `json:"queries_abandoned"`
	// Errors are the abuse's own (a connection it could not open, say), not hedge's
	// answers.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

// abuseOf adds up the abuse of a scenario's runs; nil when they had none.
func abuseOf(runs []*scenarioRun) *abuseStats {
	if runs[0].abuse == nil {
		return nil
	}
	s := &abuseStats{Sources: runs[0].abuse.sources, TenantProject: runs[0].abuse.tenant}
	var idleClosed, stalledEnded []time.Duration
	idleAnswers, stalledAnswers, queries := map[int]int64{}, map[int]int64{}, newSendStats()
	for _, r := range runs {
		a := r.abuse
		s.IdleOpened += a.idleOpened
		s.IdleHeld = max(s.IdleHeld, a.idleHeld)
		s.StalledStarted += a.stalledStarted
		s.QueriesAbandoned += a.queriesAbandoned
		s.Errors += a.errors
		if a.firstError != nil && s.FirstError == "" {
			s.FirstError = a.firstError.Error()
		}
		idleClosed = append(idleClosed, a.idleClosed...)
		stalledEnded = append(stalledEnded, a.stalledEnded...)
		for status, n := range a.idleAnswers {
			idleAnswers[status] += n
		}
		for status, n := range a.stalledAnswers {
			stalledAnswers[status] += n
		}
		queries.add(a.queries)
	}
	s.IdleClosed, s.StalledEnded = percentilesOf(idleClosed), percentilesOf(stalledEnded)
	s.IdleAnswers, s.StalledAnswers = answers(idleAnswers), answers(stalledAnswers)
	s.Queries = reads{Latency: percentilesOf(queries.latencies), Answers: answers(queries.statuses)}
	return s
}

// print says what the abuse beside r's load did and how hedge answered it, and how
// the load fared against the same load alone (baseline, nil when it did not run).
func (s *abuseStats) print(w io.Writer, r, baseline *result) {
	sc := r.Scenario
	cfg := sc.Abuse
	sources := s.Sources[0]
	if len(s.Sources) > 1 {
		sources += "–" + s.Sources[len(s.Sources)-1]
	}
	if cfg.IdleConns+cfg.StalledBodies > 0 {
		// ended says how many of them hedge closed, after how long (p50), answering what.
		ended := func(p percentiles, answers map[string]int64) string {
			if p.Count == 0 {
				return "none by hedge yet"
			}
			return fmt.Sprintf("%s by hedge after p50 %s (%s)", thousands(float64(p.Count)), millis(p.P50), answerText(answers))
		}
		fmt.Fprintf(w, "%s: %s idle connections and %d stalled bodies (%s KB of %s MB sent) from %s; idle: %s open when the load ended, %s opened, closed %s; stalled: %s started, ended %s of silence\n",
			sc.Name, thousands(float64(cfg.IdleConns)), cfg.StalledBodies, thousands(float64(cfg.StalledSent)/1024), thousands(float64(cfg.StalledLength)/(1<<20)), sources,
			thousands(float64(s.IdleHeld)), thousands(float64(s.IdleOpened)), ended(s.IdleClosed, s.IdleAnswers),
			thousands(float64(s.StalledStarted)), ended(s.StalledEnded, s.StalledAnswers))
	}
	if cfg.QueryWorkers > 0 {
		answered := "none answered"
		if q := s.Queries; q.Latency.Count > 0 {
			answered = fmt.Sprintf("%d answered (%s), p50 %s, max %s", q.Latency.Count, answerText(q.Answers), millis(q.Latency.P50), millis(q.Latency.Max))
		}
		fmt.Fprintf(w, "%s: another tenant's heavy queries (project %d, %d workers): %s; %d still running when the load ended, abandoned\n",
			sc.Name, s.TenantProject, cfg.QueryWorkers, answered, s.QueriesAbandoned)
	}
	if s.Errors > 0 {
		fmt.Fprintf(w, "%s: %d errors of the abuse's own, e.g. %s\n", sc.Name, s.Errors, s.FirstError)
	}
	switch {
	case len(r.Answers) == 0:
		fmt.Fprintf(w, "%s: /batch/ beside the abuse stalled: no send of its measured part was answered\n", sc.Name)
	case baseline != nil && baseline.EventsPerSecond > 0:
		fmt.Fprintf(w, "%s: /batch/ beside the abuse: %s events/s, %.2f of %s's %s; p99 %s against %s alone; %s\n",
			sc.Name, thousands(r.EventsPerSecond), r.EventsPerSecond/baseline.EventsPerSecond, baseline.Scenario.Name,
			thousands(baseline.EventsPerSecond), millis(r.Latency.P99), millis(baseline.Latency.P99), answerText(r.Answers))
	}
}
