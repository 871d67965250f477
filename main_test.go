package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsEnvironment(t *testing.T) {
	newFlags := func() (*flag.FlagSet, *string, *time.Duration) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		addr := fs.String("admin-addr", "127.0.0.1:8000", "")
		timeout := fs.Duration("shutdown-timeout", time.Second, "")
		return fs, addr, timeout
	}

	t.Setenv("HEDGE_ADMIN_ADDR", "0.0.0.0:9000")
	t.Setenv("HEDGE_SHUTDOWN_TIMEOUT", "7s")
	fs, addr, timeout := newFlags()
	if err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if *addr != "0.0.0.0:9000" || *timeout != 7*time.Second {
		t.Fatalf("environment not applied: %s %v", *addr, *timeout)
	}

	fs, addr, _ = newFlags()
	if err := parseFlags(fs, []string{"--admin-addr", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if *addr != "127.0.0.1:1" {
		t.Fatalf("the flag must win over the environment, got %s", *addr)
	}

	t.Setenv("HEDGE_SHUTDOWN_TIMEOUT", "soon")
	fs, _, _ = newFlags()
	if err := parseFlags(fs, nil); err == nil || !strings.Contains(err.Error(), "HEDGE_SHUTDOWN_TIMEOUT") {
		t.Fatalf("a bad environment value must be refused naming the variable, got %v", err)
	}

	fs, _, _ = newFlags()
	if err := parseFlags(fs, []string{"stray"}); err == nil {
		t.Fatal("a stray argument was accepted")
	}
}

func TestCommands(t *testing.T) {
	f := func(args []string, code int, stdout string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if got := run(args, strings.NewReader(""), &out, &errOut); got != code || !strings.Contains(out.String(), stdout) {
			t.Fatalf("hedge %v: exit %d stdout %q stderr %q; want exit %d and %q", args, got, out.String(), errOut.String(), code, stdout)
		}
	}
	f([]string{"version"}, 0, "DuckDB v1.5.6")
	f([]string{"help"}, 0, "hedge serve")
	f(nil, 2, "")
	f([]string{"frobnicate"}, 2, "")
	f([]string{"serve", "--no-such-flag"}, 2, "")
	f([]string{"serve", "--trusted-proxies", "10.0.0.0/8,proxy.example"}, 2, "")
	f([]string{"serve", "--log", "kafka"}, 2, "")
	f([]string{"serve", "--warehouse=false"}, 2, "") // an edge-only node needs a cluster
	f([]string{"serve", "--log", "direct", "--log-cluster", "127.0.0.1:6222", "--log-routes", "127.0.0.1:6222"}, 2, "")
	f([]string{"serve", "--log-cluster", "127.0.0.1:6222"}, 2, "") // no routes
	f([]string{"cluster"}, 2, "")
	f([]string{"cluster", "sideways"}, 2, "")
	f([]string{"cluster", "up", "extra"}, 2, "")
	f([]string{"cluster", "down", "--dir", t.TempDir()}, 1, "") // no cluster.json there
}
