package eventlog

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestServerLoggerRepeats: the NATS server's repeated message is logged once a
// repeatEvery, saying how many were left out; another message is logged at once.
func TestServerLoggerRepeats(t *testing.T) {
	var out strings.Builder
	l := newServerLogger(slog.New(slog.NewTextHandler(&out, nil)))
	for i := range 5 {
		l.Errorf("Error trying to connect to route (attempt %d): %v", i, "refused")
	}
	l.Warnf("JetStream cluster stream %q has NO quorum, stalled", "EV_0")
	if n := strings.Count(out.String(), "Error trying to connect"); n != 1 {
		t.Fatalf("a message repeated 5 times at once was logged %d times:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "NO quorum") {
		t.Fatalf("another message was not logged:\n%s", out.String())
	}
	l.last["Error trying to connect to route (attempt %d): %v"].at = time.Now().Add(-repeatEvery)
	l.Errorf("Error trying to connect to route (attempt %d): %v", 9, "refused")
	if !strings.Contains(out.String(), "attempt 9") || !strings.Contains(out.String(), "repeats_left_out=4") {
		t.Fatalf("after repeatEvery the message was not logged with the count left out:\n%s", out.String())
	}
}
