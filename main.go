// Command hedge is a self-hosted, PostHog-compatible product-analytics backend in one
// binary: an ingestion listener that the official PostHog SDKs send to unchanged, an
// embedded DuckDB warehouse, and PostHog's management API.
//
//	hedge serve [flags]                  run both listeners over one DuckDB file
//	hedge passwd --email EMAIL [--data]  set a user's console password, read from stdin
//	hedge cluster up|down --dir DIR      start or stop a three-node cluster on loopback
//	hedge lake files --project N         print the paths of a project's Parquet parts
//	hedge lake move [--data DIR]         move a stopped hedge's events table into the lake
//	hedge version                        print hedge's and DuckDB's versions
//
// Every flag of serve can also be set with an environment variable: --admin-addr is
// HEDGE_ADMIN_ADDR. A flag on the command line wins over the environment.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hedge-analytics/hedge/warehouse"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command in args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCommand(args[1:], stderr)
	case "passwd":
		return passwdCommand(args[1:], stdin, stderr)
	case "cluster":
		return clusterCommand(args[1:], stdout, stderr)
	case "lake":
		return lakeCommand(args[1:], stdout, stderr)
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
  hedge serve [flags]                   run the management and capture listeners over one DuckDB file
  hedge passwd --email EMAIL [--data]   set a user's password for the web console, read from stdin
  hedge cluster up|down [--dir DIR]     start (or start again) or stop a three-node cluster on loopback
  hedge lake files [--data DIR | --cluster DIR] --project N
                                        print the paths of a project's current Parquet parts (--storage lake)
  hedge lake move [--data DIR]          move the events of a stopped hedge's DuckDB file into the lake
  hedge version                         print hedge's and DuckDB's versions

Run "hedge serve -h" for the flags; each has a HEDGE_* environment variable.
`)
}
