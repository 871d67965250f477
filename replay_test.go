package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log destination that a reporting goroutine writes to while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// While the database opens, hedge says it replays a WAL, its size, and how far it has
// read it; without a WAL it says nothing.
func TestReportReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hedge.duckdb")
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))

	reportReplay(path, time.Millisecond, log)()
	if out.String() != "" {
		t.Fatalf("no WAL, yet: %s", out.String())
	}

	if err := os.WriteFile(path+".wal", make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	wal, err := os.Open(path + ".wal")
	if err != nil {
		t.Fatal(err)
	}
	defer wal.Close()
	if _, err := io.ReadFull(wal, make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	stop := reportReplay(path, 10*time.Millisecond, log)
	progress := regexp.MustCompile(`msg="replaying the write-ahead log" wal_bytes=1000 elapsed=\S+ pass=1 read_bytes=300`)
	for deadline := time.Now().Add(5 * time.Second); !progress.MatchString(out.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress reported:\n%s", out.String())
		}
	}
	stop()
	if !regexp.MustCompile(`msg="replaying the write-ahead log before serving" wal=\S+ wal_bytes=1000`).MatchString(out.String()) {
		t.Fatalf("the replay was not announced:\n%s", out.String())
	}
	reported := out.String()
	time.Sleep(30 * time.Millisecond)
	if out.String() != reported {
		t.Fatalf("reports after stop:\n%s", out.String())
	}
}
