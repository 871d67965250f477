// Command hedge is a self-hosted, PostHog-compatible product-analytics backend in one
// binary: an ingestion listener that the official PostHog SDKs send to unchanged, an
// embedded DuckDB warehouse, and PostHog's management API.
//
//	hedge serve [flags]   run both listeners over one DuckDB file
//	hedge version         print hedge's and DuckDB's versions
//
// Every flag of serve can also be set with an environment variable: --admin-addr is
// HEDGE_ADMIN_ADDR. A flag on the command line wins over the environment.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hedge-analytics/hedge/warehouse"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command in args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCommand(args[1:], stderr)
	case "version":
		duckdbVersion, err := warehouse.DuckDBVersion()
		if err != nil {
			fmt.Fprintln(stderr, "hedge:", err)
			return 1
		}
		fmt.Fprintf(stdout, "hedge %s\nDuckDB %s\n", version, duckdbVersion)
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "hedge: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `hedge: a PostHog-compatible product-analytics backend in one binary.

Usage:
  hedge serve [flags]   run the management and capture listeners over one DuckDB file
  hedge version         print hedge's and DuckDB's versions

Run "hedge serve -h" for the flags; each has a HEDGE_* environment variable.
`)
}

// envName is the environment variable that stands in for a flag: --admin-addr is
// HEDGE_ADMIN_ADDR.
func envName(flagName string) string {
	return "HEDGE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args into fs, then fills every flag not given on the command line
// from its environment variable, so the command line wins.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hedge %s [flags]\n\nFlags (environment variable in brackets):\n", fs.Name())
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(fs.Output(), "  --%s [%s]\n    \t%s (default %q)\n", f.Name, envName(f.Name), f.Usage, f.DefValue)
		})
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		value, ok := os.LookupEnv(envName(f.Name))
		if given[f.Name] || !ok || err != nil {
			return
		}
		if setErr := fs.Set(f.Name, value); setErr != nil {
			err = fmt.Errorf("invalid value %q for %s: %w", value, envName(f.Name), setErr)
		}
	})
	return err
}
