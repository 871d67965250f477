// Package edge is hedge's ingestion listener: the fasthttp server that PostHog SDKs
// send events to. It reads each body once, within its route's limit and a global
// budget of in-flight bytes, undoes the SDKs' encodings (gzip, form data=, base64,
// lz-string), decodes the JSON into typed structs without maps, checks the project
// token, and hands the events to the warehouse Writer. It answers 200 only once the
// Writer has committed them, so a 200 means the events are durable.
//
// A request passes through the files in order: edge.go routes it, body.go reads its
// body and undoes the encodings, decode.go decodes the JSON and resolves the token,
// event.go applies PostHog's event rules to make the lanes' rows, and edge.go submits
// them and answers.
package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/internal/jsontext"
	"github.com/hedge-analytics/hedge/warehouse"
)

// The defaults of Config: the timeouts, MaxConnsPerIP and MaxInflightBytes when they
// are zero, and the overflow lane's rate and burst that hedge serve starts with (zero
// turns the lane off).
const (
	DefaultHeaderTimeout    = 10 * time.Second
	DefaultMaxConnsPerIP    = 1000
	DefaultBodyIdleTimeout  = 10 * time.Second
	DefaultMaxInflightBytes = 256 << 20
	DefaultOverflowRate     = 100
	DefaultOverflowBurst    = 1000
)

// Config is what the edge needs.
type Config struct {
	// Handoff takes each request's events: the warehouse's Writer, which commits them
	// before Submit returns, or the log's Publisher, which returns once the log holds
	// them (eventlog). The edge answers 200 only after Submit returned nil, and 503
	// with Retry-After when it answers warehouse.ErrOverloaded or ErrClosed.
	Handoff Handoff
	// Teams resolves a project API token to the project's id.
	Teams func(token string) (team int64, ok bool)
	// MaxInflightBytes bounds the bytes that requests hold at once, bodies and
	// decompressed payloads together; past it capture answers 503 (default
	// DefaultMaxInflightBytes).
	MaxInflightBytes int64
	// HeaderTimeout is how long a connection may take to send a request's headers
	// (and the first 64 KB of its body); a half-sent request is closed past it
	// (default DefaultHeaderTimeout).
	HeaderTimeout time.Duration
	// MaxConnsPerIP is how many connections one client address may hold open (default
	// DefaultMaxConnsPerIP; behind a proxy every client has the proxy's address, so
	// raise it there).
	MaxConnsPerIP int
	// BodyIdleTimeout is how long a request body may stop sending before the read fails
	// and the connection is closed (default DefaultBodyIdleTimeout).
	BodyIdleTimeout time.Duration
	// OverflowRate is how many events a second one (project, distinct_id) may send
	// before its realtime events go to the overflow lane, after a burst of
	// OverflowBurst; 0 turns the overflow lane off.
	OverflowRate  float64
	OverflowBurst float64
	// Flags holds the projects' flag definitions that /flags/ and /decide/ evaluate,
	// and People the stored person and group properties they evaluate against. Both
	// nil (an edge-only node of a cluster, which holds no warehouse): the flag routes
	// go to Remote.
	Flags  *flags.Store
	People *warehouse.Warehouse
	// Remote, on an edge-only node, answers the routes this edge does not (flags,
	// remote config, the SDKs' management routes): the warehouse node's capture
	// listener, which the request is forwarded to as sent.
	Remote *Remote
	// Health answers /_health: nil while the events' store answers (the warehouse's
	// database, or on an edge-only node the log).
	Health func(context.Context) error
	// Locations gives a project's time zone, in which flags read dates written without
	// one; nil, or a nil answer, is UTC.
	Locations func(team int64) *time.Location
	// FlagEvaluations is how many /flags/ evaluations of one project run at once
	// (default: half the cores, at least one); a request that finds none free within
	// 100 ms is answered 429.
	FlagEvaluations int
	// SDKAPI answers the management API's routes that server SDKs call on the host
	// they send events to: flag definitions for local evaluation and remote config
	// payloads, which personal API keys authenticate. nil: those routes are 404.
	SDKAPI fasthttp.RequestHandler
	Logger *slog.Logger
}

// Handoff is where the edge puts a request's batches (at most one per lane): Submit
// returns nil once they are durable, and is done with their memory when it returns.
type Handoff interface {
	Submit(batches ...*warehouse.Batch) error
}

// Server is the capture listener.
type Server struct {
	srv      *fasthttp.Server
	handoff  Handoff
	teams    func(string) (int64, bool)
	budget   *budget
	bodyIdle time.Duration
	overflow *overflowLimiter
	flags    *flags.Store
	slots    *flagSlots
	people   *warehouse.Warehouse
	remote   *Remote
	healthy  func(context.Context) error
	location func(team int64) *time.Location
	sdkAPI   fasthttp.RequestHandler
	log      *slog.Logger
}

// New builds the capture server.
func New(cfg Config) *Server {
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if cfg.BodyIdleTimeout <= 0 {
		cfg.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if cfg.Health == nil {
		cfg.Health = func(context.Context) error { return nil }
		if cfg.People != nil {
			cfg.Health = cfg.People.Check
		}
	}
	s := &Server{
		handoff:  cfg.Handoff,
		teams:    cfg.Teams,
		budget:   newBudget(cfg.MaxInflightBytes, time.Second),
		bodyIdle: cfg.BodyIdleTimeout,
		overflow: newOverflowLimiter(cfg.OverflowRate, cfg.OverflowBurst),
		flags:    cfg.Flags,
		slots:    newFlagSlots(cfg.FlagEvaluations),
		people:   cfg.People,
		remote:   cfg.Remote,
		healthy:  cfg.Health,
		location: cfg.Locations,
		sdkAPI:   cfg.SDKAPI,
		log:      cfg.Logger,
	}
	s.srv = &fasthttp.Server{
		Handler:      s.handle,
		ErrorHandler: s.handleTransportError,
		Name:         "hedge",
		// The handler reads bodies itself, past the first prefetchSize bytes, so that
		// each route's limit and the in-flight budget hold while reading.
		StreamRequestBody:            true,
		MaxRequestBodySize:           prefetchSize,
		DisablePreParseMultipartForm: true,
		// The headers and the first prefetchSize bytes must come within HeaderTimeout;
		// the rest of a body is read by the handler, as long as its bytes keep coming
		// (BodyIdleTimeout), so a 20 MB body over a slow link still goes.
		ReadTimeout:     cfg.HeaderTimeout,
		MaxConnsPerIP:   cfg.MaxConnsPerIP,
		WriteTimeout:    30 * time.Second,
		IdleTimeout:     2 * time.Minute,
		CloseOnShutdown: true,
		Logger:          fasthttpLogger{cfg.Logger},
	}
	return s
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting connections and waits until in-flight requests, which
// wait for their commits, have been answered.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

// health answers GET /_health: 200 {"status":"ok"} while Config.Health answers nil (a
// query of the database, warehouse.Check), else 503 {"status":"unavailable"}, as the
// management listener's does.
func (s *Server) health(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	c, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if err := s.healthy(c); err != nil {
		s.log.Error("health check failed", "err", err)
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.SetBodyString(`{"status":"unavailable"}`)
		return
	}
	ctx.SetBodyString(`{"status":"ok"}`)
}

// healthTimeout bounds a health check's wait for the database.
const healthTimeout = 2 * time.Second

// route is a capture path and how its requests are read.
type route struct {
	maxBody int
	// engage: an event without a name is an $identify (the Mixpanel-style /engage/).
	engage bool
}

func routeOf(path []byte) (route, bool) {
	switch strings.TrimSuffix(jsontext.BytesToString(path), "/") {
	case "/batch":
		return route{maxBody: maxBatchBody}, true
	case "/capture", "/e", "/i/v0/e", "/track":
		return route{maxBody: maxEventBody}, true
	case "/engage":
		return route{maxBody: maxEventBody, engage: true}, true
	}
	return route{}, false
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	allowCORS(ctx)
	// No browser may take an answer for a page or a script.
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	if string(ctx.Path()) == "/_health" {
		s.health(ctx)
		return
	}
	rt, ok := routeOf(ctx.Path())
	if !ok {
		if endpoint, token, ok := flagsRouteOf(ctx.Path()); ok {
			switch {
			case s.flags != nil:
				s.serveFlags(ctx, endpoint, token)
				return
			case s.remote != nil:
				s.remote.forward(ctx, s)
				return
			}
		}
	}
	switch {
	case !ok:
		s.answer(ctx, errNotFound)
	case ctx.IsOptions():
		preflight(ctx)
		countRequest(fasthttp.StatusOK)
	case !ctx.IsPost():
		s.answer(ctx, errMethodNotAllowed)
	default:
		q := requestPool.Get().(*request)
		q.res.budget = s.budget
		err := s.capture(ctx, rt, q)
		q.release()
		requestPool.Put(q)
		s.answer(ctx, err)
	}
}

// statusOK is the success body posthog-js and PostHog's docs expect, byte for byte.
var statusOK = []byte(`{"status": 1}`)

func (s *Server) answer(ctx *fasthttp.RequestCtx, err *captureError) {
	if err != nil {
		writeError(ctx, err)
		countRequest(err.status)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(statusOK)
	countRequest(fasthttp.StatusOK)
}

// request is the pooled state of one capture request. Its parts alias each other and
// the connection's buffers; release clears them before reuse.
type request struct {
	res     reservation
	body    []byte
	scratch [2][]byte
	args    fasthttp.Args
	lz      lzDecoder
	parsed  parsed
	batches [3]warehouse.Batch // indexed by lane
}

var requestPool = sync.Pool{New: func() any {
	q := &request{}
	for i := range q.batches {
		q.batches[i].Lane = warehouse.Lane(i)
	}
	return q
}}

// maxPooledBuffer: buffers that grew beyond this for one large request are dropped
// rather than kept in the pool.
const maxPooledBuffer = 4 << 20

func (q *request) release() {
	q.res.release()
	q.body = pooled(q.body)
	q.scratch[0], q.scratch[1] = pooled(q.scratch[0]), pooled(q.scratch[1])
	if cap(q.lz.units) > maxPooledBuffer/2 {
		q.lz = lzDecoder{}
	}
	q.args.Reset()
	q.parsed.reset()
	for i := range q.batches {
		if cap(q.batches[i].Events) > maxPooledEvents {
			q.batches[i] = warehouse.Batch{}
		}
		q.batches[i].Reset()
	}
}

func pooled(b []byte) []byte {
	if cap(b) > maxPooledBuffer {
		return nil
	}
	return b[:0]
}

// readRequestBody reads ctx's body into q.body, at most limit bytes, charged to q's
// reservation. On a refusal, unread body bytes would be taken for the next request:
// they are drained, or the connection closes. A client that is still sending when
// the answer comes gets a reset instead of the answer, so a refused oversized body is
// drained (not kept) up to a bound, so that SDKs see the 413 and split their batch
// instead of retrying it whole.
func (s *Server) readRequestBody(ctx *fasthttp.RequestCtx, q *request, limit int) error {
	var err error
	q.body, err = readBody(ctx, limit, s.bodyIdle, &q.res, q.body[:0])
	if err != nil && (!errors.Is(err, errBodyTooLarge) || !drain(ctx, maxDrain)) {
		ctx.SetConnectionClose()
	}
	return err
}

// capture reads, decodes and commits one request.
func (s *Server) capture(ctx *fasthttp.RequestCtx, rt route, q *request) *captureError {
	if err := s.readRequestBody(ctx, q, rt.maxBody); err != nil {
		return readError(err)
	}
	bodyBytesTotal.Add(len(q.body))
	payload, cerr := q.payload(ctx)
	if cerr != nil {
		return cerr
	}
	payloadBytesTotal.Add(len(payload))
	// A lone UTF-16 surrogate (\ud800) is valid JSON but no character, and DuckDB's JSON
	// functions refuse a document that holds one: stored as sent, it would fail every
	// property read of the project. It is stored as U+FFFD, and the rest as sent.
	jsontext.RepairSurrogates(payload)
	if cerr := q.parsed.decode(payload, &q.res); cerr != nil {
		return cerr
	}
	token, cerr := q.parsed.resolveToken()
	if cerr != nil {
		return cerr
	}
	team, ok := s.teams(token)
	if !ok {
		return errInvalidAPIKey
	}
	sentAt := q.parsed.sentAt
	if sentAt.IsZero() {
		args := ctx.QueryArgs()
		sentAt = queryTime(args.Peek("_"))
		if sentAt.IsZero() {
			sentAt = queryTime(args.Peek("sent_at"))
		}
	}
	if q.parsed.historical {
		// Decision (PostHog applies the rule here too): a historical migration replays
		// records from a server, whose clock is right; correcting by sent_at would only
		// shift every imported timestamp by the request's transit time.
		sentAt = time.Time{}
	}
	if cerr := s.sort(q, team, rt, sentAt, time.Now().UTC()); cerr != nil {
		return cerr
	}
	// The events alias q's buffers: Submit returns only once it is done with them.
	if err := s.handoff.Submit(&q.batches[0], &q.batches[1], &q.batches[2]); err != nil {
		if !errors.Is(err, warehouse.ErrOverloaded) && !errors.Is(err, warehouse.ErrClosed) {
			s.log.Error("cannot commit events", "team", team, "err", err)
		}
		return errUnavailable
	}
	countEvents(q.batches[:])
	return nil
}

// allowCORS lets browsers send events from any site, as PostHog does: the request's
// Origin is mirrored with credentials allowed.
func allowCORS(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	if origin := ctx.Request.Header.Peek(fasthttp.HeaderOrigin); len(origin) > 0 {
		h.SetBytesV(fasthttp.HeaderAccessControlAllowOrigin, origin)
		h.Set(fasthttp.HeaderAccessControlAllowCredentials, "true")
		h.Set(fasthttp.HeaderVary, "Origin")
	} else {
		h.Set(fasthttp.HeaderAccessControlAllowOrigin, "*")
	}
}

// preflight answers a CORS preflight: the JSON bodies posthog-js sends uncompressed
// are not "simple" requests, so browsers ask first.
func preflight(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set(fasthttp.HeaderAccessControlAllowMethods, "POST, OPTIONS")
	if requested := ctx.Request.Header.Peek(fasthttp.HeaderAccessControlRequestHeaders); len(requested) > 0 {
		h.SetBytesV(fasthttp.HeaderAccessControlAllowHeaders, requested)
	}
	h.Set(fasthttp.HeaderAccessControlMaxAge, "86400")
	ctx.SetStatusCode(fasthttp.StatusOK)
}

// handleTransportError answers what fasthttp refuses before a handler runs.
func (s *Server) handleTransportError(ctx *fasthttp.RequestCtx, err error) {
	allowCORS(ctx)
	s.answer(ctx, errInvalidPayload("the request could not be read"))
}

// fasthttpLogger sends fasthttp's own messages to the process log at debug level:
// they are about single connections (timeouts, resets), not about the server.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug("capture listener", "msg", fmt.Sprintf(format, args...))
}

// Counters, exposed at /metrics on the management listener.
var (
	bodyBytesTotal    = metrics.NewCounter(`hedge_capture_body_bytes_total`)
	payloadBytesTotal = metrics.NewCounter(`hedge_capture_payload_bytes_total`)
	requestsTotal     = func() map[int]*metrics.Counter {
		m := map[int]*metrics.Counter{}
		for _, status := range []int{200, 400, 401, 404, 405, 413, 503} {
			m[status] = metrics.NewCounter(fmt.Sprintf(`hedge_capture_requests_total{status="%d"}`, status))
		}
		return m
	}()
	acceptedTotal = [3]*metrics.Counter{
		metrics.NewCounter(`hedge_capture_events_accepted_total{lane="realtime"}`),
		metrics.NewCounter(`hedge_capture_events_accepted_total{lane="historical"}`),
		metrics.NewCounter(`hedge_capture_events_accepted_total{lane="overflow"}`),
	}
	droppedTotal = func() map[string]*metrics.Counter {
		m := map[string]*metrics.Counter{}
		for _, reason := range []string{warnMissingEventName, warnMissingDistinctID, warnMissingSurveyID, warnPersonlessIdentity,
			warnGroupKeyTooLong, warnInvalidGroupSet, dropDuplicateUUID} {
			m[reason] = metrics.NewCounter(fmt.Sprintf(`hedge_capture_events_dropped_total{reason=%q}`, reason))
		}
		return m
	}()
)

func countRequest(status int) {
	if c := requestsTotal[status]; c != nil {
		c.Inc()
	}
}

// countEvents counts a committed request's events by lane and its skipped events by
// reason: those it sent with a warning, and those the writer found stored already.
func countEvents(batches []warehouse.Batch) {
	for i := range batches {
		acceptedTotal[i].Add(len(batches[i].Events) - batches[i].Duplicates)
		droppedTotal[dropDuplicateUUID].Add(batches[i].Duplicates)
		for _, w := range batches[i].Warnings {
			droppedTotal[w.Type].Inc()
		}
	}
}
