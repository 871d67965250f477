// Package web is hedge's console: a single-page app over the management API, written
// in JSX under src/ and bundled by the build program (go run ./web/build, esbuild
// from Go) into dist/, which is committed and embedded here, so building hedge needs
// neither Node nor npm. The management listener serves it (package admin).
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Shell is the console's one HTML page, which every console path answers with; it
// loads the hashed assets below.
func Shell() []byte {
	b, err := dist.ReadFile("dist/index.html")
	if err != nil {
		panic("web: the embedded bundle has no index.html: " + err.Error()) // a build without go run ./web/build
	}
	return b
}

// Assets are the bundle's files, served under /assets/. Their names carry a hash of
// their content, so a name's content never changes and may be cached for ever.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist/assets")
	if err != nil {
		panic("web: the embedded bundle has no assets: " + err.Error())
	}
	return sub
}
