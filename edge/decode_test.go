package edge

import (
	"strings"
	"testing"
	"time"
)

func TestDistinctIDText(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := distinctIDText([]byte(raw)); got != want {
			t.Fatalf("distinctIDText(%s) = %q, want %q", raw, got, want)
		}
	}
	f(`"user-1"`, "user-1")
	f(`"a\"b"`, `a"b`)
	f(`"\u00e9t\u00e9"`, "été")
	f(`12345`, "12345")
	f(`-1.5`, "-1.5")
	f(`""`, "")
	f(`null`, "")
	f(``, "")
	f(`{"a":1}`, "")
	f(`true`, "")
	f(`"`+strings.Repeat("x", 250)+`"`, strings.Repeat("x", 200))
	f(`"`+strings.Repeat("é", 250)+`"`, strings.Repeat("é", 200)) // characters, not bytes
}

func TestEventTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f := func(raw string, want time.Time) {
		t.Helper()
		if got := eventTime([]byte(raw), now); !got.Equal(want) {
			t.Fatalf("eventTime(%s) = %v, want %v", raw, got, want)
		}
	}
	f(`"2026-11-22T03:39:11.125Z"`, time.Date(2026, 11, 22, 3, 39, 11, 125_000_000, time.UTC))
	f(`"2026-11-22T03:39:11.393078295Z"`, time.Date(2026, 11, 22, 3, 39, 11, 393078295, time.UTC)) // posthog-go
	f(`"2026-11-22T04:39:11+01:00"`, time.Date(2026, 11, 22, 3, 39, 11, 0, time.UTC))
	f(`"2023-01-15T10:00:00Z"`, time.Date(2023, 1, 15, 10, 0, 0, 0, time.UTC)) // historical
	f(`"not a time"`, now)
	f(``, now)
	f(`null`, now)
	f(`"2026-11-23T10:59:00Z"`, time.Date(2026, 11, 23, 10, 59, 0, 0, time.UTC)) // 22h59m ahead: kept
	f(`"2026-11-23T11:01:00Z"`, now)                                             // over 23h ahead: now
}
