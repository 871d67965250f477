package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// replayReportInterval is how often the replay of a write-ahead log is reported.
const replayReportInterval = 5 * time.Second

// reportReplay says, while DuckDB opens the database at path, that it is replaying
// the write-ahead log left by a process that did not shut down cleanly, and every
// interval how far it has read: a WAL of gigabytes takes a while (DuckDB reads it
// twice, first to check it, then to apply it), during which hedge does not serve yet.
// It does nothing when there is no WAL to replay. stop ends the reports; the caller
// calls it once the database is open.
func reportReplay(path string, interval time.Duration, log *slog.Logger) (stop func()) {
	wal := path + ".wal"
	info, err := os.Stat(wal)
	if err != nil || info.Size() == 0 {
		return func() {}
	}
	if abs, err := filepath.Abs(wal); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			wal = real // as /proc names it
		}
	}
	size := info.Size()
	log.Info("replaying the write-ahead log before serving", "wal", wal, "wal_bytes", size)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		begin := time.Now()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		pass, last := 1, int64(0)
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			attrs := []any{"wal_bytes", size, "elapsed", time.Since(begin).Round(time.Second)}
			if read, ok := readOffset(wal); ok {
				if read < last {
					pass++
				}
				last = read
				attrs = append(attrs, "pass", pass, "read_bytes", read)
			}
			log.Info("replaying the write-ahead log", attrs...)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// readOffset is the offset this process has read the file at path (absolute, without
// symbolic links) to, on Linux, where /proc says which descriptor holds the file and
// where it stands; ok is false elsewhere, or when the file is not open.
func readOffset(path string) (offset int64, ok bool) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err != nil || target != path {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			return 0, false
		}
		for line := range bytes.Lines(info) {
			if value, found := bytes.CutPrefix(line, []byte("pos:")); found {
				offset, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
				return offset, err == nil
			}
		}
	}
	return 0, false
}
