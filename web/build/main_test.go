package main

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestBundleIsCurrent fails while the committed web/dist is not what go run ./web/build
// makes of web/src, so a change to the console cannot ship without its bundle. It
// needs the console's npm packages; make test installs them and sets
// HEDGE_REQUIRE_BROWSER_TESTS, under which their absence fails instead of skipping.
func TestBundleIsCurrent(t *testing.T) {
	if _, err := os.Stat(filepath.Join("..", "node_modules", "preact")); err != nil {
		if os.Getenv("HEDGE_REQUIRE_BROWSER_TESTS") != "" {
			t.Fatalf("the console's packages are not installed (npm ci --prefix web): %v", err)
		}
		t.Skip("the console's packages are not installed (npm ci --prefix web)")
	}
	want, err := bundle("..")
	if err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join("..", "dist")
	got := map[string][]byte{}
	err = filepath.WalkDir(dist, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dist, path)
		got[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("web/dist/%s is stale or missing: run go run ./web/build", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("web/dist/%s is not part of the bundle: run go run ./web/build", name)
		}
	}
	// The budgets the console is held to, gzipped: what its first load fetches (the
	// entry script, the styles and the chunks the entry imports at once), and
	// everything, every screen's chunk included.
	first := map[string]bool{}
	for _, tag := range firstLoad.FindAllSubmatch(want["index.html"], -1) {
		first[string(tag[1])] = true
	}
	for queue := slices.Collect(maps.Keys(first)); len(queue) > 0; queue = queue[1:] {
		for _, m := range staticImport.FindAllSubmatch(want[queue[0]], -1) {
			if name := "assets/" + string(m[1]); !first[name] {
				first[name] = true
				queue = append(queue, name)
			}
		}
	}
	var firstTotal, total int
	for name, b := range want {
		if name == "index.html" {
			continue
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write(b)
		w.Close()
		total += z.Len()
		if first[name] {
			firstTotal += z.Len()
		}
	}
	t.Logf("console: %d bytes gzipped at first load (%d files), %d in all", firstTotal, len(first), total)
	if len(first) < 2 {
		t.Fatalf("the shell names %d of the bundle's files, want the entry script and the styles at least", len(first))
	}
	if firstTotal > 40<<10 {
		t.Errorf("the console's first load is %d bytes gzipped, over its budget of 40 KB", firstTotal)
	}
	if total > 100<<10 {
		t.Errorf("the console is %d bytes gzipped in all, over its budget of 100 KB", total)
	}
}

// firstLoad finds the files the shell loads; staticImport the chunks a script imports
// at once (esbuild's minified `from"./chunk-X.js"`), not those it imports when a screen
// is shown (`import("./x.js")`).
var (
	firstLoad    = regexp.MustCompile(`(?:src|href)="/(assets/[^"]+)"`)
	staticImport = regexp.MustCompile(`from"\./([^"]+\.js)"`)
)
