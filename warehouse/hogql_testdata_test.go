package warehouse

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateHogQLTestdata = flag.Bool("update-hogql-testdata", false,
	"rewrite the parsed queries of hogql/testdata with this DuckDB's parse of their queries")

// TestHogQLTestdata: package hogql's tests check parsed queries without DuckDB; each
// file of hogql/testdata holds a query and the parse json_serialize_sql makes of it,
// which must be this DuckDB's. After a DuckDB upgrade that parses differently, run
//
//	go test ./warehouse -run TestHogQLTestdata -update-hogql-testdata
//
// and then hogql's tests, whose expected outcomes say what the checker must decide. A
// new case is a file holding {"query": "..."} and the same command.
func TestHogQLTestdata(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := filepath.Glob(filepath.Join("hogql", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Query      string          `json:"query"`
			Serialized json.RawMessage `json:"serialized"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var serialized string
		if err := db.QueryRowContext(context.Background(), `SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, c.Query).Scan(&serialized); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var stored, parsed bytes.Buffer
		if err := json.Compact(&parsed, []byte(serialized)); err != nil {
			t.Fatalf("%s: DuckDB's parse is not JSON: %v", file, err)
		}
		if c.Serialized != nil {
			if err := json.Compact(&stored, c.Serialized); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		}
		if bytes.Equal(stored.Bytes(), parsed.Bytes()) {
			continue
		}
		if !*updateHogQLTestdata {
			t.Errorf("%s: the stored parse is not DuckDB's: run with -update-hogql-testdata", file)
			continue
		}
		c.Serialized = json.RawMessage(serialized)
		var out bytes.Buffer
		encoder := json.NewEncoder(&out)
		encoder.SetEscapeHTML(false) // the text as DuckDB writes it: -> stays ->
		encoder.SetIndent("", "\t")
		if err := encoder.Encode(c); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
