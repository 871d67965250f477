package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

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
