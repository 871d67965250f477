// Package admin is hedge's management API: Fiber routes under /api/ over the metadata
// tables of the warehouse (organizations, users, memberships, projects, personal API
// keys), with personal-API-key authentication and scopes, PostHog's flat error body
// and its limit/offset pagination. One file per resource; handlers bind, check and
// query, with nothing in between.
//
// It also owns the bootstrap of an empty database and the index of project API tokens
// that the capture listener consults.
//
// Feature flags and cohorts are kept by package flags, which alone reads and writes
// their tables: their routes here are HTTP only, and so are the paths the server SDKs
// poll for flag definitions (/flags/definitions), which the capture listener forwards.
package admin

import (
	"context"
	"database/sql"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/bytedance/sonic"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/warehouse"
)

// DefaultInsightCacheTTL is Config.InsightCacheTTL when it is zero.
const DefaultInsightCacheTTL = 15 * time.Minute

// Config is what the management API needs.
type Config struct {
	// Warehouse holds the metadata tables this API owns, and answers for the tables
	// it owns itself (events, persons, groups) and for queries.
	Warehouse *warehouse.Warehouse
	// PublicURL is the scheme://host[:port] that absolute links (pagination) start
	// with; empty means the request's own.
	PublicURL string
	// CaptureURL is the scheme://host[:port] the capture listener is reached at: where
	// SDKs send events (posthog-js's api_host). The management API cannot know it from
	// a request, so `hedge serve` says it (--capture-public-url, else the capture
	// listener's own address); GET /api/users/@me/ shows it, for the console's install
	// snippets. Empty: unknown (null there).
	CaptureURL string
	// TrustedProxies are the peers whose X-Forwarded-For, -Host and -Proto are believed
	// (proxies.go); none: those headers are ignored.
	TrustedProxies []netip.Prefix
	// InsightCacheTTL is how long a computed insight result is served while its project
	// has no new events (default DefaultInsightCacheTTL).
	InsightCacheTTL time.Duration
	// InsightCacheBytes bounds the memory of the computed insight results kept: in all,
	// a quarter of it per project, a sixteenth per result (default
	// DefaultInsightCacheBytes; resultsCache).
	InsightCacheBytes int
	// Pprof serves Go's profiles under /debug/pprof/, without authentication: turn it
	// on only where the management listener is not exposed.
	Pprof  bool
	Logger *slog.Logger
	// SMTPURL is the server that invite e-mails go through
	// (smtp://[user:password@]host[:port][?from=address], or smtps://); empty: invites
	// are not e-mailed.
	SMTPURL string
	// DNSServer (host[:port]) answers the TXT lookups that verify domains; empty: the
	// system resolver.
	DNSServer string
	// Exports keeps and runs the batch exports; the API manages them through it. Nil:
	// a Runner of the warehouse with the default policy that is never started, so
	// exports are kept but nothing runs them (tests of the API alone).
	Exports *batchexport.Runner
	// Flags keeps the feature flags and cohorts; the API manages them, and serves their
	// definitions to the server SDKs, through it. Nil: a Store of the warehouse.
	Flags *flags.Store
	// Version is hedge's, which the instance status shows.
	Version string
	// EventLog says how the event log is doing, for the instance status; nil, or nil
	// answers: events reach the warehouse directly.
	EventLog func() *EventLogStatus
}

// API is the management API on its own listener.
type API struct {
	app       *fiber.App
	api       fiber.Router // the /api group
	routes    []route
	db        *sql.DB // the metadata tables (meta.*), which only admin reads and writes
	warehouse *warehouse.Warehouse
	tokens    *ProjectTokens
	queries   *warehouse.Queries
	results   *resultsCache
	running   runningQueries // the named queries, which a DELETE cancels
	exports   *batchexport.Runner
	flags     *flags.Store
	version   string
	eventLog  func() *EventLogStatus
	publicURL string
	// captureURL is Config.CaptureURL without a trailing slash.
	captureURL string
	hasher     *hasher        // passwords
	signIns    *signInLimiter // failed sign-ins and lockouts
	log        *slog.Logger
	// trustedProxies is Config.TrustedProxies.
	trustedProxies []netip.Prefix
}

// route is an authenticated management route and the scope its key needs. The table
// is what the OpenAPI and authorization-matrix tests walk.
type route struct {
	method, path, scope string
}

// handle registers an authenticated route under /api: the key is checked for scope
// before handler runs, and on a route under a project (/projects/:param/...) the
// caller must reach the project its parameter names (requireProject) before handler
// runs, whatever handler does.
func (a *API) handle(method, path, scope string, handler fiber.Handler) {
	a.routes = append(a.routes, route{method: method, path: "/api" + path, scope: scope})
	handlers := []fiber.Handler{a.require(scope)}
	if rest, ok := strings.CutPrefix(path, "/projects/:"); ok {
		param, _, _ := strings.Cut(rest, "/")
		handlers = append(handlers, a.requireProject(param))
	}
	a.api.Add(method, path, append(handlers, handler)...)
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// New builds the API and loads the project token index.
func New(ctx context.Context, cfg Config) (*API, error) {
	tokens, err := loadProjectTokens(ctx, cfg.Warehouse.DB())
	if err != nil {
		return nil, err
	}
	if cfg.Exports == nil {
		cfg.Exports = batchexport.New(batchexport.Config{Warehouse: cfg.Warehouse})
	}
	if cfg.Flags == nil {
		cfg.Flags = flags.NewStore(flags.Config{DB: cfg.Warehouse.DB(), GroupTypes: cfg.Warehouse.GroupTypes, Logger: cfg.Logger})
	}
	a := &API{
		db:         cfg.Warehouse.DB(),
		warehouse:  cfg.Warehouse,
		tokens:     tokens,
		queries:    cfg.Warehouse.Queries(),
		results:    newResultsCache(cfg.InsightCacheTTL, cfg.InsightCacheBytes),
		exports:    cfg.Exports,
		flags:      cfg.Flags,
		version:    cfg.Version,
		eventLog:   cfg.EventLog,
		publicURL:  strings.TrimSuffix(cfg.PublicURL, "/"),
		captureURL: strings.TrimSuffix(cfg.CaptureURL, "/"),
		hasher:     newHasher(),
		signIns:    newSignInLimiter(),
		log:        cfg.Logger,
		// Sign-ins count per client, which only trusted proxies may name.
		trustedProxies: cfg.TrustedProxies,
	}
	a.app = fiber.New(fiber.Config{
		AppName:               "hedge",
		DisableStartupMessage: true,
		ErrorHandler:          a.handleError,
		JSONEncoder:           sonic.Marshal,
		JSONDecoder:           sonic.Unmarshal,
		// PostHog routes answer with and without the trailing slash.
		StrictRouting: false,
		CaseSensitive: true,
		BodyLimit:     4 << 20,
		ReadTimeout:   30 * time.Second,
		WriteTimeout:  60 * time.Second,
		IdleTimeout:   2 * time.Minute,
		// X-Forwarded-Host and -Proto (Hostname, Protocol, BaseURL) count from the
		// trusted proxies only; the client's address is clientAddress's.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          proxyStrings(cfg.TrustedProxies),
	})
	a.app.Use(responseHeaders, a.recoverPanic)
	if cfg.Pprof {
		a.app.Use(pprof.New())
	}
	a.app.Get("/_health", a.health)
	a.app.Get("/metrics", a.metrics)
	a.api = a.app.Group("/api")
	a.bindSessions()
	a.bindProjects()
	a.bindExplicitMembers()
	a.bindPersons()
	a.bindGroups()
	a.bindQuery()
	a.bindDashboards()
	a.bindInsights()
	a.bindCollaborators()
	a.bindSharing()
	mail, err := newMailer(cfg.SMTPURL)
	if err != nil {
		return nil, err
	}
	a.bindOrganizations()
	a.bindUsers()
	a.bindInstanceStatus()
	a.bindPersonalAPIKeys()
	a.bindMembers()
	a.bindInvites(mail)
	a.bindSignup()
	a.bindDomains(cfg.DNSServer)
	a.bindBatchExports()
	a.bindFeatureFlags()
	a.bindCohorts()
	a.bindFlagDefinitions()
	if err := a.bindConsole(); err != nil {
		return nil, err
	}
	return a, nil
}

// ProjectTokens is the index of project API tokens, kept current by this API.
func (a *API) ProjectTokens() *ProjectTokens { return a.tokens }

// Handler answers a request as the management listener does. The capture listener
// forwards to it the routes that server SDKs call on the host they send events to:
// flag definitions for local evaluation and remote config payloads.
func (a *API) Handler() fasthttp.RequestHandler { return a.app.Handler() }

// Serve answers requests on ln until Shutdown.
func (a *API) Serve(ln net.Listener) error { return a.app.Listener(ln) }

// Shutdown stops accepting connections and waits for in-flight requests to finish.
func (a *API) Shutdown(ctx context.Context) error { return a.app.ShutdownWithContext(ctx) }

// GET /metrics: the process's counters in Prometheus text format. The counters are
// package variables beside the code that bumps them (edge, warehouse), registered in
// the metrics package's default set.
func (a *API) metrics(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/plain; version=0.0.4")
	metrics.WritePrometheus(c, true)
	return nil
}

// GET /_health: 200 {"status":"ok"} while a query of the database answers (Ping would
// answer even once DuckDB has invalidated the database; see warehouse.Check).
func (a *API) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := a.warehouse.Check(ctx); err != nil {
		a.log.Error("health check failed", "err", err)
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable"})
	}
	return c.JSON(fiber.Map{"status": "ok"})
}
