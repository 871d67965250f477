package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/warehouse"
)

// passwdCommand sets the password a user signs in to the web console with, on a data
// directory that no hedge is serving: hedge passwd --email EMAIL [--data DIR], the
// password read from the first line of standard input (so it stays out of the process
// list and the shell's history). The user's sessions end.
func passwdCommand(args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "./hedge-data", "data directory: the DuckDB file and bootstrap.json")
	email := fs.String("email", "", "e-mail of the user whose password is set")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "hedge passwd:", err)
		return 2
	}
	if *email == "" {
		fmt.Fprintln(stderr, "hedge passwd: --email is required")
		return 2
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "hedge passwd: cannot read the password from standard input:", err)
		return 1
	}
	password := strings.TrimRight(line, "\r\n")
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	wh, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(*dataDir, databaseFile), Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "hedge passwd:", err)
		return 1
	}
	defer wh.Close()
	if err := admin.SetPassword(ctx, wh.DB(), *email, password); err != nil {
		fmt.Fprintln(stderr, "hedge passwd:", err)
		return 1
	}
	fmt.Fprintf(stderr, "hedge passwd: the password of %s is set\n", strings.ToLower(*email))
	return 0
}
