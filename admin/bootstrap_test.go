package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/hedge-analytics/hedge/warehouse"
)

func openWarehouse(t *testing.T, dir string) *warehouse.Warehouse {
	t.Helper()
	wh, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(dir, "hedge.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	return wh
}

func countOrganizations(t *testing.T, wh *warehouse.Warehouse) int {
	t.Helper()
	var n int
	if err := wh.DB().QueryRow(`SELECT count(*) FROM meta.organizations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBootstrapOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wh := openWarehouse(t, dir)
	in := Bootstrap{UserEmail: "Admin@Example.com", AdminURL: "http://127.0.0.1:8000", CaptureURL: "http://127.0.0.1:8001"}
	boot, err := BootstrapIfEmpty(ctx, wh.DB(), dir, in)
	if err != nil || boot == nil {
		t.Fatalf("first bootstrap: %v, %v", boot, err)
	}

	path := filepath.Join(dir, BootstrapFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", BootstrapFile, info.Mode().Perm())
	}
	text, _ := os.ReadFile(path)
	var fields map[string]any
	if err := json.Unmarshal(text, &fields); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"admin_password", "admin_url", "capture_url", "organization_id", "personal_api_key", "project_api_key", "project_id", "user_email"}
	if !slices.Equal(keys, want) {
		t.Fatalf("%s keys %v, want exactly %v", BootstrapFile, keys, want)
	}
	if fields["admin_url"] != in.AdminURL || fields["capture_url"] != in.CaptureURL || fields["user_email"] != in.UserEmail {
		t.Fatalf("%s = %s", BootstrapFile, text)
	}

	// The owner is the user, with the e-mail stored lower-cased, and the key has scope *.
	var level int
	var scopes string
	err = wh.DB().QueryRow(`
		SELECT m.level, k.scopes FROM meta.users u
		JOIN meta.memberships m ON m.user_id = u.id JOIN meta.personal_api_keys k ON k.user_id = u.id
		WHERE u.email = 'admin@example.com' AND k.secure_value = ?`, hashKey(boot.PersonalAPIKey)).Scan(&level, &scopes)
	if err != nil || level != levelOwner || scopes != `["*"]` {
		t.Fatalf("owner level %d scopes %s err %v", level, scopes, err)
	}
	// The key itself is stored nowhere.
	var leaks int
	wh.DB().QueryRow(`SELECT count(*) FROM meta.personal_api_keys WHERE secure_value = ? OR mask_value = ?`,
		boot.PersonalAPIKey, boot.PersonalAPIKey).Scan(&leaks)
	if leaks != 0 {
		t.Fatal("the personal API key is stored in clear")
	}

	again, err := BootstrapIfEmpty(ctx, wh.DB(), dir, in)
	if err != nil || again != nil {
		t.Fatalf("second bootstrap: %v, %v; want nothing", again, err)
	}
	if n := countOrganizations(t, wh); n != 1 {
		t.Fatalf("%d organizations after two bootstraps", n)
	}
	if after, _ := os.ReadFile(path); string(after) != string(text) {
		t.Fatal("second bootstrap rewrote bootstrap.json")
	}
}

// A crash between writing bootstrap.json.tmp and renaming it is settled by the next start.
func TestBootstrapPendingFile(t *testing.T) {
	ctx := context.Background()

	t.Run("rows committed: the file is kept", func(t *testing.T) {
		dir := t.TempDir()
		wh := openWarehouse(t, dir)
		boot, err := BootstrapIfEmpty(ctx, wh.DB(), dir, Bootstrap{UserEmail: "admin@localhost"})
		if err != nil {
			t.Fatal(err)
		}
		final := filepath.Join(dir, BootstrapFile)
		if err := os.Rename(final, final+".tmp"); err != nil { // as if the rename never happened
			t.Fatal(err)
		}
		if again, err := BootstrapIfEmpty(ctx, wh.DB(), dir, Bootstrap{UserEmail: "admin@localhost"}); err != nil || again != nil {
			t.Fatalf("bootstrap after crash: %v, %v", again, err)
		}
		text, err := os.ReadFile(final)
		if err != nil {
			t.Fatalf("bootstrap.json not recovered: %v", err)
		}
		var got Bootstrap
		json.Unmarshal(text, &got)
		if got.PersonalAPIKey != boot.PersonalAPIKey {
			t.Fatal("recovered bootstrap.json holds another key")
		}
	})

	t.Run("rows not committed: the file is dropped and bootstrap runs", func(t *testing.T) {
		dir := t.TempDir()
		wh := openWarehouse(t, dir)
		stale := `{"organization_id":"01a201d2-b1cc-7a98-8270-ae81839d0552","personal_api_key":"phx_stale"}`
		if err := os.WriteFile(filepath.Join(dir, BootstrapFile+".tmp"), []byte(stale), 0o600); err != nil {
			t.Fatal(err)
		}
		boot, err := BootstrapIfEmpty(ctx, wh.DB(), dir, Bootstrap{UserEmail: "admin@localhost"})
		if err != nil || boot == nil {
			t.Fatalf("bootstrap: %v, %v", boot, err)
		}
		if _, err := os.Stat(filepath.Join(dir, BootstrapFile+".tmp")); !os.IsNotExist(err) {
			t.Fatal("stale bootstrap.json.tmp left behind")
		}
		if n := countOrganizations(t, wh); n != 1 {
			t.Fatalf("%d organizations", n)
		}
	})
}

func TestBootstrapRejectsBadEmail(t *testing.T) {
	dir := t.TempDir()
	wh := openWarehouse(t, dir)
	if _, err := BootstrapIfEmpty(context.Background(), wh.DB(), dir, Bootstrap{UserEmail: "not an e-mail"}); err == nil {
		t.Fatal("bootstrap accepted an invalid e-mail")
	}
	if n := countOrganizations(t, wh); n != 0 {
		t.Fatalf("%d organizations after a refused bootstrap", n)
	}
}

// As in PostHog, the bootstrap project and the default project of a new organization
// start with their primary dashboard, "My App Dashboard".
func TestBootstrapPrimaryDashboard(t *testing.T) {
	env := serveAPI(t, nil)
	second := env.must(t, 201, "POST", "/api/organizations/", env.owner, `{"name":"Second"}`)
	secondProject := int(second["teams"].([]any)[0].(map[string]any)["id"].(float64))
	for _, c := range []struct {
		organization string
		project      int
	}{{env.org.String(), int(env.boot.ProjectID)}, {second["id"].(string), secondProject}} {
		project := env.must(t, 200, "GET", fmt.Sprintf("/api/organizations/%s/projects/%d/", c.organization, c.project), env.owner, "")
		primary, ok := project["primary_dashboard"].(float64)
		if !ok {
			t.Fatalf("project %d: primary_dashboard %v", c.project, project["primary_dashboard"])
		}
		dashboard := env.must(t, 200, "GET", fmt.Sprintf("/api/projects/%d/dashboards/%d/", c.project, int(primary)), env.owner, "")
		if dashboard["name"] != "My App Dashboard" || dashboard["pinned"] != true || len(dashboard["tiles"].([]any)) != 5 {
			t.Fatalf("project %d: primary dashboard %v", c.project, dashboard)
		}
	}
}
