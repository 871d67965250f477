package edge

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/bench/gen"
)

// BenchmarkDecode runs the capture path between reading a body and submitting its rows
// (undo the encoding, decode, resolve the token, sort into lanes) on realistic
// posthog-js-like bodies (bench/gen, 30% personless): a 1,000-event /batch/ body, the
// same body gzip-compressed and sent unannounced as posthog-js does, and a single
// /capture/ event. One goroutine: the figures are per core. `go run ./bench suite`
// sets them beside the end-to-end figures they bound.
func BenchmarkDecode(b *testing.B) {
	g := gen.New(gen.Config{Seed: 42, PersonlessShare: 0.3})
	now := time.Now()
	batch := g.BatchBody(gen.BodyConfig{Token: "phc_bench", Events: 1000, Time: now})
	for _, c := range []struct {
		name        string
		body        *gen.Body
		contentType string
	}{
		{"batch-1k", batch, "application/json"},
		{"gzip-1k", batch.Gzip(), "text/plain"},
		{"single", g.SingleBody("phc_bench", now), "application/json"},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := c.body.Stamp(nil, 1, 1)
			s := New(Config{})
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(fasthttp.MethodPost)
			ctx.Request.SetRequestURI("/batch/")
			ctx.Request.Header.SetContentType(c.contentType)
			budget := newBudget(1<<30, time.Second)
			b.SetBytes(int64(c.body.PlainLen())) // JSON bytes, so that the encodings compare
			b.ReportAllocs()
			for b.Loop() {
				q := requestPool.Get().(*request)
				q.res.budget = budget
				q.body = append(q.body[:0], body...)
				if err := decodeOnce(s, q, &ctx); err != nil {
					b.Fatal(err)
				}
				if n := len(q.batches[0].Events); n != c.body.Events {
					b.Fatalf("%d events sorted, want %d", n, c.body.Events)
				}
				q.release()
				requestPool.Put(q)
			}
			b.ReportMetric(float64(b.N*c.body.Events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// decodeOnce is what Server.capture does with a body it has read, up to Submit.
func decodeOnce(s *Server, q *request, ctx *fasthttp.RequestCtx) *captureError {
	payload, err := q.payload(ctx)
	if err != nil {
		return err
	}
	if err := q.parsed.decode(payload, &q.res); err != nil {
		return err
	}
	if _, err := q.parsed.resolveToken(); err != nil {
		return err
	}
	return s.sort(q, 1, route{maxBody: maxBatchBody}, q.parsed.sentAt, time.Now().UTC())
}
