package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hedge-analytics/hedge/warehouse"
)

const lakeUsage = `usage: hedge lake files (--data DIR | --cluster DIR) --project N
       hedge lake move [--data DIR]`

// lakeCommand runs hedge lake files or hedge lake move.
func lakeCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "move" {
		return lakeMoveCommand(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "files" {
		fmt.Fprintln(stderr, lakeUsage)
		return 2
	}
	return lakeFilesCommand(args[1:], stdout, stderr)
}

// lakeFilesCommand runs hedge lake files: the paths of a project's current parts, one
// a line, for scripts and other engines (DuckDB's read_parquet, Spark, Trino). It reads
// the listing the running (or last) hedge keeps in the lake directory, so it needs no
// access to the DuckDB file, which a running hedge holds; the parts it lists stay
// readable for the grace after a compaction replaces them.
func lakeFilesCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lake files", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "./hedge-data", "data directory of the hedge whose lake to list")
	clusterDir := fs.String("cluster", "", "directory of a cluster (hedge cluster up --dir): list the lake of its warehouse node instead")
	project := fs.Int64("project", 0, "the project (team) id")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *project <= 0 {
		fmt.Fprintln(stderr, lakeUsage)
		return 2
	}
	dir := *data
	if *clusterDir != "" {
		c, err := readCluster(*clusterDir)
		if err != nil {
			fmt.Fprintln(stderr, "hedge lake:", err)
			return 1
		}
		dir = ""
		for _, n := range c.Nodes {
			if n.Warehouse {
				dir = n.DataDir
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, lakeDir)); err != nil {
		fmt.Fprintf(stderr, "hedge lake: %s holds no lake (is it the data directory of a hedge serve --storage lake?): %v\n", dir, err)
		return 1
	}
	files, err := warehouse.LakeFiles(filepath.Join(dir, lakeDir), *project)
	if err != nil {
		fmt.Fprintln(stderr, "hedge lake:", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return 0
}

// lakeMoveCommand runs hedge lake move: the events of the DuckDB file's events table
// move into the lake, a part per project and day, for a data directory that hedge
// serve --storage lake is to serve (which reads the table's events as well, so the
// move is optional: it makes them readable without hedge, and the table small). hedge
// must be stopped: the move opens the DuckDB file.
func lakeMoveCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lake move", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "./hedge-data", "data directory of a stopped hedge")
	memory := fs.String("duckdb-memory-limit", "1GB", "DuckDB's memory_limit while it moves: a day of events is copied, and deleted, at once")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, lakeUsage)
		return 2
	}
	ctx := context.Background()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(*data, databaseFile), LakeDir: filepath.Join(*data, lakeDir), MemoryLimit: *memory})
	if err != nil {
		fmt.Fprintln(stderr, "hedge lake:", err)
		return 1
	}
	w.StartBackfill()
	begin := time.Now()
	var events int64
	err = w.MoveToLake(ctx, func(team int64, day time.Time, rows int64) {
		events += rows
		fmt.Fprintf(stdout, "project %d, %s: %d events\n", team, day.Format(time.DateOnly), rows)
	})
	if err = errors.Join(err, w.Close()); err != nil {
		fmt.Fprintln(stderr, "hedge lake:", err)
		return 1
	}
	fmt.Fprintf(stdout, "moved %d events in %s\n", events, time.Since(begin).Round(time.Millisecond))
	return 0
}
