package edge_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/edge"
)

// TestRemote: an edge-only node's edge (no flags store) forwards the flag routes to
// the warehouse node's capture listener as sent and answers with its answer; while it
// does not know where that is, or it does not answer, the answer is 503, which SDKs
// retry.
func TestRemote(t *testing.T) {
	warehouseNode := newCaptureEnv(t, edge.Config{})
	warehouseNode.createFlag(t, warehouseNode.team, "remote-flag", `{"groups":[{"properties":[],"rollout_percentage":100}]}`)
	var remoteURL atomic.Value
	remoteURL.Store("")
	srv := edge.New(edge.Config{
		Teams:  func(string) (int64, bool) { return 0, false },
		Remote: edge.NewRemote(func() string { return remoteURL.Load().(string) }),
		Logger: testLogger(),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	edgeOnly := &captureEnv{url: "http://" + ln.Addr().String(), token: warehouseNode.token}
	body := []byte(`{"token":"` + warehouseNode.token + `","distinct_id":"someone"}`)
	json := map[string]string{"Content-Type": "application/json"}

	if a := edgeOnly.send(t, http.MethodPost, "/flags/?v=2", body, json); a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("before the warehouse node is known: %d %q %v, want 503 with Retry-After", a.status, a.body, a.header)
	}
	remoteURL.Store(warehouseNode.url)
	a := edgeOnly.send(t, http.MethodPost, "/flags/?v=2", body, json)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"remote-flag":{"key":"remote-flag","enabled":true`) {
		t.Fatalf("forwarded /flags/?v=2: %d %s", a.status, a.body)
	}
	direct := warehouseNode.send(t, http.MethodPost, "/flags/?v=2", body, json)
	if a.header.Get("Content-Type") != direct.header.Get("Content-Type") {
		t.Errorf("forwarded Content-Type %q, the warehouse node's %q", a.header.Get("Content-Type"), direct.header.Get("Content-Type"))
	}
	// The warehouse node's refusals come through as they are.
	if a := edgeOnly.send(t, http.MethodPost, "/flags/?v=2", []byte(`{"distinct_id":"someone"}`), json); a.status != http.StatusUnauthorized {
		t.Errorf("forwarded /flags/ without a token: %d %s, want 401", a.status, a.body)
	}
	// A capture route is never forwarded: this edge refuses a token it does not know.
	if a := edgeOnly.send(t, http.MethodPost, "/batch/", []byte(`{"api_key":"`+warehouseNode.token+`","batch":[{"event":"e","distinct_id":"d"}]}`), json); a.status != http.StatusUnauthorized {
		t.Errorf("/batch/ with a token the edge was not told of: %d %s, want 401", a.status, a.body)
	}
	remoteURL.Store("http://" + closedAddress(t))
	if a := edgeOnly.send(t, http.MethodPost, "/flags/?v=2", body, json); a.status != http.StatusServiceUnavailable {
		t.Errorf("with the warehouse node down: %d %s, want 503", a.status, a.body)
	}
}

// closedAddress is a loopback address that nothing listens on.
func closedAddress(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
