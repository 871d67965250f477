package admin

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/hedge-analytics/hedge/schemas"
)

// documentedOperations reads "METHOD /path" pairs out of schemas/openapi.yaml: path
// keys sit at two spaces of indent under `paths:`, their methods at four.
func documentedOperations(t *testing.T) map[string]bool {
	t.Helper()
	pathKey := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodKey := regexp.MustCompile(`^    (get|put|post|patch|delete|options|head):(\s.*)?$`)
	ops := map[string]bool{}
	var path string
	inPaths := false
	scanner := bufio.NewScanner(bytes.NewReader(schemas.OpenAPI))
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, " ") && line != "" {
			inPaths = line == "paths:"
			continue
		}
		if !inPaths {
			continue
		}
		if m := pathKey.FindStringSubmatch(line); m != nil {
			path = m[1]
		} else if m := methodKey.FindStringSubmatch(line); m != nil && path != "" {
			ops[strings.ToUpper(m[1])+" "+path] = true
		}
	}
	if len(ops) == 0 {
		t.Fatal("no operations found in schemas/openapi.yaml")
	}
	return ops
}

var routeParam = regexp.MustCompile(`:(\w+)`)

// Every route the management API registers is documented in schemas/openapi.yaml.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	env := newTestEnv(t, "")
	documented := documentedOperations(t)
	for _, route := range env.api.app.GetRoutes(true) {
		if route.Method == "HEAD" { // Fiber adds HEAD to every GET
			continue
		}
		op := route.Method + " " + routeParam.ReplaceAllString(route.Path, "{$1}")
		if !documented[op] {
			t.Errorf("%s is served but missing from schemas/openapi.yaml", op)
		}
	}
}
