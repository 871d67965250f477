package eventlog

import (
	"context"
	"testing"
	"time"
)

// TestDirectory: the tokens and the warehouse's address a warehouse node shares are
// what a Directory reads, at once for those shared before the watch and soon after
// for those shared later; a token shared again unchanged is not written again.
func TestDirectory(t *testing.T) {
	ctx := context.Background()
	e := openLog(t, t.TempDir(), Config{}, false)
	if err := e.node.ShareWarehouse(ctx, "http://127.0.0.1:8001"); err != nil {
		t.Fatal(err)
	}
	if err := e.node.ShareTokens(ctx, map[string]int64{"phc_first": 1, "odd token/with.dots": 2}); err != nil {
		t.Fatal(err)
	}
	d, err := e.node.WatchDirectory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := func(token string, want int64, ok bool) {
		t.Helper()
		if team, found := d.Team(token); team != want || found != ok {
			t.Fatalf("Team(%q) = %d, %v; want %d, %v", token, team, found, want, ok)
		}
	}
	f("phc_first", 1, true)
	f("odd token/with.dots", 2, true)
	f("phc_unknown", 0, false)
	if got := d.Warehouse(); got != "http://127.0.0.1:8001" {
		t.Fatalf("Warehouse() = %q", got)
	}
	writes := func() uint64 {
		t.Helper()
		s, err := e.node.js.Stream(ctx, "KV_"+directoryBucket)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().State.LastSeq
	}
	before := writes()
	if err := e.node.ShareTokens(ctx, map[string]int64{"phc_first": 1, "odd token/with.dots": 2, "phc_later": 3}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, ok := d.Team("phc_later"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a token shared after the watch began never reached the directory")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f("phc_later", 3, true)
	if n := writes() - before; n != 1 {
		t.Errorf("sharing one new token with two unchanged wrote %d values, want 1", n)
	}

	// The next start reads what the directory holds and writes nothing unchanged.
	dir, tokens := e.dir, map[string]int64{"phc_first": 1, "odd token/with.dots": 2, "phc_later": 3}
	e.close()
	e = openLog(t, dir, Config{}, false)
	before = writes()
	if err := e.node.ShareTokens(ctx, tokens); err != nil {
		t.Fatal(err)
	}
	if n := writes() - before; n != 0 {
		t.Errorf("a start sharing the tokens the directory holds wrote %d values, want 0", n)
	}
}
