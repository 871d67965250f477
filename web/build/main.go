// Command build bundles the console (web/src) into web/dist with esbuild: the entry
// script, the chunks of the screens it loads when first shown (web/src/lazy.jsx) and
// what they share, and one CSS file, each named by its content's hash, and the HTML
// shell that loads the entry and the styles. Run it from the repository root after changing web/src:
//
//	npm ci --prefix web && go run ./web/build
//
// The output is committed; TestBundleIsCurrent fails while it differs from what this
// program would write.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

func main() {
	log.SetFlags(0)
	files, err := bundle("web")
	if err != nil {
		log.Fatal(err)
	}
	if err := write(filepath.Join("web", "dist"), files); err != nil {
		log.Fatal(err)
	}
	for _, name := range sortedNames(files) {
		fmt.Printf("%-40s %7d bytes\n", name, len(files[name]))
	}
}

// bundle builds the console from dir/src and returns dist's files by their path under
// dist (index.html, assets/...). The same inputs and esbuild version give the same
// bytes: names are content hashes and nothing depends on the clock or the machine.
func bundle(dir string) (map[string][]byte, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "preact")); err != nil {
		return nil, fmt.Errorf("cannot bundle the console: its packages are not installed (npm ci --prefix %s): %w", dir, err)
	}
	outdir := filepath.Join(root, "dist", "assets")
	result := api.Build(api.BuildOptions{
		AbsWorkingDir:     root,
		EntryPoints:       []string{filepath.Join("src", "main.jsx")},
		Bundle:            true,
		Write:             false,
		Outdir:            outdir,
		EntryNames:        "[name]-[hash]",
		ChunkNames:        "[name]-[hash]",
		AssetNames:        "[name]-[hash]",
		Splitting:         true,
		Format:            api.FormatESModule,
		Target:            api.ES2020,
		JSX:               api.JSXAutomatic,
		JSXImportSource:   "preact",
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		LegalComments:     api.LegalCommentsEndOfFile,
		Charset:           api.CharsetUTF8,
		LogLevel:          api.LogLevelSilent,
	})
	if len(result.Errors) > 0 {
		msgs := api.FormatMessages(result.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return nil, errors.New("cannot bundle the console:\n" + strings.Join(msgs, ""))
	}
	files := map[string][]byte{}
	var script, style string
	for _, f := range result.OutputFiles {
		name, err := filepath.Rel(filepath.Join(root, "dist"), f.Path)
		if err != nil {
			return nil, fmt.Errorf("cannot place %s: %w", f.Path, err)
		}
		name = filepath.ToSlash(name)
		files[name] = f.Contents
		// The entry point is main-<hash>.js; the other scripts are the chunks it imports.
		switch {
		case filepath.Ext(name) == ".js" && strings.HasPrefix(filepath.Base(name), "main-"):
			script = "/" + name
		case filepath.Ext(name) == ".css":
			style = "/" + name
		}
	}
	if script == "" || style == "" {
		return nil, fmt.Errorf("cannot bundle the console: esbuild wrote no script or no style sheet")
	}
	var shell bytes.Buffer
	if err := shellTemplate.Execute(&shell, struct{ Script, Style string }{script, style}); err != nil {
		return nil, fmt.Errorf("cannot write the console's shell: %w", err)
	}
	files["index.html"] = shell.Bytes()
	return files, nil
}

// shellTemplate is the console's page. The theme is chosen by the script before the
// first paint of the app, from the stored choice or prefers-color-scheme; no inline
// script, so the Content-Security-Policy can say script-src 'self'.
var shellTemplate = template.Must(template.New("index.html").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>hedge</title>
<link rel="stylesheet" href="{{.Style}}">
<script type="module" src="{{.Script}}"></script>
</head>
<body>
<noscript>The hedge console needs JavaScript. The API under /api/ works without it.</noscript>
<div id="app"></div>
</body>
</html>
`))

// write replaces dir's contents with files.
func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cannot clear %s: %w", dir, err)
	}
	for name, b := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("cannot create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
	}
	return nil
}

func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
