// Package testlog is the logger of hedge's tests: silent, so that a test run prints
// only its failures, unless HEDGE_TEST_LOG is set, when every package under test logs
// at debug level to stderr.
package testlog

import (
	"log/slog"
	"os"
)

// New is a logger that discards everything unless HEDGE_TEST_LOG is set.
func New() *slog.Logger {
	if os.Getenv("HEDGE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
