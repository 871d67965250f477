package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/bench/gen"
	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/warehouse"
)

// startInProcess runs the capture path in process (warehouse, bootstrap, edge on
// loopback) and returns its URL and project token.
func startInProcess(b *testing.B) (string, string) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	log := slog.New(slog.DiscardHandler)
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(dir, "hedge.duckdb"), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	boot, err := admin.BootstrapIfEmpty(ctx, wh.DB(), dir, admin.Bootstrap{UserEmail: "admin@localhost"})
	if err != nil {
		b.Fatal(err)
	}
	api, err := admin.New(ctx, admin.Config{Warehouse: wh, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	srv := edge.New(edge.Config{Handoff: wh.Writer(), Teams: api.ProjectTokens().Team, Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		wh.Close()
	})
	return "http://" + ln.Addr().String(), boot.ProjectAPIKey
}

// BenchmarkBatchIngest posts 1,000-event /batch/ bodies (bench/gen, posthog-js-like)
// from 4 connections, durably, with person processing as posthog-js traffic asks it
// (30% personless) and with every event personless: the cost of the identity model
// end to end.
func BenchmarkBatchIngest(b *testing.B) {
	for _, c := range []struct {
		name  string
		share float64
	}{{"persons", 0.3}, {"personless", 1}} {
		b.Run(c.name, func(b *testing.B) {
			url, token := startInProcess(b)
			g := gen.New(gen.Config{Seed: 7, PersonlessShare: c.share})
			bodies := make([][]byte, 64)
			for i := range bodies {
				bodies[i] = g.Batch(nil, token, 1000, time.Now())
			}
			client := &fasthttp.Client{MaxConnsPerHost: 4}
			post := func(body []byte) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(url + "/batch/")
				req.Header.SetMethod(fasthttp.MethodPost)
				req.SetBodyRaw(body)
				if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
					b.Errorf("batch: %v %d %s", err, resp.StatusCode(), resp.Body())
				}
			}
			for _, body := range bodies[:8] { // the persons exist before timing, as in a running system
				post(body)
			}
			var next atomic.Int64
			b.SetParallelism(2) // 4 connections on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					post(bodies[next.Add(1)%int64(len(bodies))])
				}
			})
			b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "events/s")
		})
	}
}
