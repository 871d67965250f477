// Package edge is hedge's ingestion listener: the fasthttp server that PostHog SDKs
// send events to. It reads each body once, decodes it without building maps, checks
// the project token, and hands the events to the warehouse Writer; it answers 200 only
// once the Writer has committed them, so a 200 means the events are durable.
package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Body limits, counted as PostHog counts them (20 MB = 20 x 1024 x 1024 bytes): a
// /batch/ body must be smaller than 20 MB, any other body smaller than 2 MB.
const (
	maxBatchBody = 20 << 20
	maxEventBody = 2 << 20
)

// Config is what the edge needs.
type Config struct {
	Writer *warehouse.Writer
	// Teams resolves a project API token to the project's id.
	Teams  func(token string) (team int64, ok bool)
	Logger *slog.Logger
}

// Server is the capture listener.
type Server struct {
	srv    *fasthttp.Server
	writer *warehouse.Writer
	teams  func(string) (int64, bool)
	log    *slog.Logger
}

// New builds the capture server.
func New(cfg Config) *Server {
	s := &Server{writer: cfg.Writer, teams: cfg.Teams, log: cfg.Logger}
	s.srv = &fasthttp.Server{
		Handler:      s.handle,
		ErrorHandler: s.handleTransportError,
		Name:         "hedge",
		// fasthttp refuses a body over this while reading it, before it is buffered.
		MaxRequestBodySize: maxBatchBody - 1,
		ReadTimeout:        time.Minute, // a 20 MB body over a slow link
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        2 * time.Minute,
		CloseOnShutdown:    true,
		Logger:             fasthttpLogger{cfg.Logger},
	}
	return s
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting connections and waits until in-flight requests, which
// wait for their commits, have been answered.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	allowCORS(ctx)
	switch string(ctx.Path()) {
	case "/capture", "/capture/":
		s.ingest(ctx, maxEventBody)
	case "/_health":
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"ok"}`)
	default:
		writeError(ctx, errNotFound)
	}
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

// statusOK is the success body posthog-js and PostHog's docs expect, byte for byte.
var statusOK = []byte(`{"status": 1}`)

// eventBatch is the pooled slice of rows built from one request.
type eventBatch struct{ events []warehouse.Event }

var batchPool = sync.Pool{New: func() any { return &eventBatch{events: make([]warehouse.Event, 0, 16)} }}

// ingest handles a capture request: decode, check the token, submit, and answer once
// the events are committed.
func (s *Server) ingest(ctx *fasthttp.RequestCtx, maxBody int) {
	switch {
	case ctx.IsPost():
	case ctx.IsOptions():
		preflight(ctx)
		return
	default:
		writeError(ctx, errMethodNotAllowed)
		return
	}
	body := ctx.PostBody()
	if len(body) == 0 {
		writeError(ctx, errNoData)
		return
	}
	if len(body) >= maxBody {
		writeError(ctx, errTooLarge)
		return
	}
	var raw rawEvent
	if err := decodeEvent(body, &raw); err != nil {
		writeError(ctx, err)
		return
	}
	token := raw.APIKey
	if token == "" {
		token = raw.Token
	}
	if token == "" {
		writeError(ctx, errMissingAPIKey)
		return
	}
	team, ok := s.teams(token)
	if !ok {
		writeError(ctx, errInvalidAPIKey)
		return
	}

	batch := batchPool.Get().(*eventBatch)
	defer func() {
		clear(batch.events) // drop the views of this request's body
		batch.events = batch.events[:0]
		batchPool.Put(batch)
	}()
	var row warehouse.Event
	keep, err := normalize(&raw, team, time.Now().UTC(), &row)
	if err != nil {
		writeError(ctx, err)
		return
	}
	if keep {
		batch.events = append(batch.events, row)
	}
	// The events alias the body: Submit returns only once the Writer is done with them.
	if err := s.writer.Submit(warehouse.LaneRealtime, batch.events); err != nil {
		if !errors.Is(err, warehouse.ErrOverloaded) && !errors.Is(err, warehouse.ErrClosed) {
			s.log.Error("cannot commit events", "team", team, "events", len(batch.events), "err", err)
		}
		writeError(ctx, errUnavailable)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(statusOK)
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
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		writeError(ctx, errTooLarge)
		return
	}
	writeError(ctx, errInvalidPayload("the request could not be read"))
}

// fasthttpLogger sends fasthttp's own messages to the process log at debug level:
// they are about single connections (timeouts, resets), not about the server.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug("capture listener", "msg", fmt.Sprintf(format, args...))
}
