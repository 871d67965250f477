package main

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
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
	var total int
	for name, b := range want {
		if name == "index.html" {
			continue
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write(b)
		w.Close()
		total += z.Len()
	}
	t.Logf("console bundle: %d bytes gzipped", total)
	// The budget the console is held to: everything it loads, gzipped.
	if total > 60<<10 {
		t.Errorf("the console is %d bytes gzipped, over its budget of 60 KB", total)
	}
}
