package admin

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/warehouse"
)

const s3Export = `{"name":"nightly","model":"persons","interval":"day","team_id":1,
	"destination":{"type":"S3","config":{"bucket_name":"bkt","region":"eu-west-1","prefix":"hedge/",
		"aws_access_key_id":"AKIA-SECRET-ID","aws_secret_access_key":"very-secret-key"}},
	"start_at":"2026-01-01T00:00:00Z","end_at":"2027-01-01T00:00:00+01:00",
	"filters":[{"key":"$browser","value":"Chrome","type":"event"}]}`

func TestBatchExports(t *testing.T) {
	env := serveAPI(t, nil)
	_, memberKey := env.member(t, "member@example.com", levelMember, "batch_export:write")
	_, readKey := env.member(t, "reader@example.com", levelMember, "batch_export:read")
	otherOrg, outsiderKey := env.addUser(t, "outsider@example.com", uuid.Nil, levelOwner, "*")
	second := strconv.Itoa(int(env.must(t, 201, "POST", env.orgPath("projects/"), env.owner, `{"name":"Second"}`)["id"].(float64)))
	orgExports := "/api/organizations/{org}/batch_exports/"
	projectExports := "/api/projects/1/batch_exports/"

	created := env.must(t, 201, "POST", env.orgPath("batch_exports/"), memberKey, s3Export)
	id := created["id"].(string)
	text := mustText(t, created)
	for _, want := range []string{`"team_id":1`, `"name":"nightly"`, `"model":"persons"`, `"interval":"day"`, `"paused":false`,
		`"last_paused_at":null`, `"start_at":"2026-01-01T00:00:00Z"`, `"end_at":"2026-12-31T23:00:00Z"`,
		`"destination":{"config":{"bucket_name":"bkt","prefix":"hedge/","region":"eu-west-1"},"type":"S3"}`,
		`"hogql_query":null`, `"filters":[{"key":"$browser","type":"event","value":"Chrome"}]`, `"latest_runs":[]`} {
		if !strings.Contains(text, want) {
			t.Fatalf("created export lacks %s: %s", want, text)
		}
	}
	parquet := env.must(t, 201, "POST", "/api/projects/"+second+"/batch_exports/", memberKey,
		`{"name":"hourly","interval":"every 5 minutes","paused":true,"destination":{"type":"Parquet","config":{"path":"exports"}}}`)
	if parquet["team_id"] != float64(2) || parquet["model"] != "events" || parquet["paused"] != true || parquet["last_paused_at"] == nil {
		t.Fatalf("created paused under a project: %v", parquet)
	}
	parquetID := parquet["id"].(string)
	secrets := []string{"AKIA-SECRET-ID", "very-secret-key", "aws_secret_access_key", "aws_access_key_id"}

	env.run(t, []scenario{
		{name: "the organization's exports, newest first", method: "GET", path: orgExports, key: readKey, status: 200,
			want: []string{`"count":2`, `"results":[{"id":"` + parquetID + `"`}, notWant: secrets},
		{name: "a project's exports", method: "GET", path: projectExports, key: readKey, status: 200,
			want: []string{`"count":1`, `"id":"` + id + `"`}, notWant: secrets},
		{name: "retrieve under the organization", method: "GET", path: orgExports + id + "/", key: readKey, status: 200,
			want: []string{`"id":"` + id + `"`, `"bucket_name":"bkt"`}, notWant: secrets},
		{name: "retrieve under its project", method: "GET", path: projectExports + id + "/", key: readKey, status: 200},
		{name: "not under another project", method: "GET", path: "/api/projects/" + second + "/batch_exports/" + id + "/", key: readKey, status: 404,
			want: []string{`{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}`}},
		{name: "another tenant's organization", method: "GET", path: orgExports, key: outsiderKey, status: 404},
		{name: "another tenant's project", method: "GET", path: projectExports + id + "/", key: outsiderKey, status: 404,
			want: []string{`"detail":"Project not found."`}},
		{name: "read is not write", method: "POST", path: orgExports, key: readKey, body: s3Export, status: 403},

		{name: "team_id required under an organization", method: "POST", path: orgExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400,
			want: []string{`"code":"required"`, `"attr":"team_id"`}},
		{name: "a team of another organization", method: "POST", path: orgExports, key: env.owner,
			body:   `{"team_id":` + firstProjectOf(t, env, otherOrg, outsiderKey) + `,"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"detail":"Project does not exist on this organization."`, `"attr":"team_id"`}},
		{name: "name required", method: "POST", path: projectExports, key: memberKey,
			body: `{"interval":"hour","destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400,
			want: []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"name"}`}},
		{name: "interval required", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400, want: []string{`"attr":"interval"`}},
		{name: "an unknown interval", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"every minute","destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400,
			want: []string{`{"type":"validation_error","code":"invalid_choice","detail":"\"every minute\" is not a valid choice.","attr":"interval"}`}},
		{name: "an unknown model", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","model":"sessions","interval":"hour","destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400,
			want: []string{`"code":"invalid_choice"`, `"attr":"model"`}},
		{name: "destination required", method: "POST", path: projectExports, key: memberKey, body: `{"name":"x","interval":"hour"}`,
			status: 400, want: []string{`"code":"required"`, `"attr":"destination"`}},
		{name: "a destination hedge does not export to", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"Snowflake","config":{}}}`, status: 400,
			want: []string{`"code":"invalid_choice"`, `"attr":"destination"`, `Snowflake`}},
		{name: "a Parquet destination needs a path", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{}}}`, status: 400,
			want: []string{`"code":"required"`, `"attr":"destination__config"`, `path`}},
		{name: "an S3 destination needs a bucket", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"region":"r"}}}`, status: 400,
			want: []string{`"attr":"destination__config"`, `bucket_name`}},
		{name: "S3 uploads Parquet files", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"bucket_name":"bkt","region":"r","file_format":"JSONLines"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`}},
		{name: "a config of the wrong type", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"S3","config":"b"}}`, status: 400,
			want: []string{`{"type":"validation_error","code":"not_a_dict","detail":"Expected a dictionary of items but got type \"str\".","attr":"destination__config"}`}},
		{name: "a timestamp that is not one", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","start_at":"yesterday","destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"attr":"start_at"`}},
		{name: "end before start", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","start_at":"2026-02-01","end_at":"2026-01-01","destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"attr":"end_at"`}},
		{name: "filters are a list", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","filters":{},"destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"attr":"filters"`}},
		{name: "filters are event property filters", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","filters":[{"key":"email","value":"a","type":"person"}],"destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"attr":"filters"`, `event properties`}},
		{name: "a custom hogql_query is refused, not ignored", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","hogql_query":"SELECT event FROM events","destination":{"type":"Parquet","config":{"path":"p"}}}`,
			status: 400, want: []string{`"attr":"hogql_query"`}},
		{name: "a Parquet path stays in the project's directory", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"../elsewhere"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `must not contain`}},
		{name: "a Parquet path names no partition of its own", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"exports/team_id=2"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `must not name a directory with`}},
		{name: "an absolute Parquet path needs an allowed root", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"/etc/cron.d"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `--export-roots`}},
		{name: "an S3 endpoint on this host's network is refused", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"bucket":"bkt","region":"r","aws_access_key_id":"k","aws_secret_access_key":"s",
				"endpoint_url":"http://169.254.169.254"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `--export-allow-private-endpoints`}},
		{name: "an S3 endpoint is a base URL", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"bucket":"bkt","region":"r","aws_access_key_id":"k","aws_secret_access_key":"s",
				"endpoint_url":"ftp://s3.example.com/x"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `endpoint_url`}},
		{name: "a bucket name S3 accepts", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"bucket":"b","region":"r","aws_access_key_id":"k","aws_secret_access_key":"s"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `is not a bucket name S3 accepts`}},
		{name: "compression is one Parquet knows", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"p","compression":"rar"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `compression`}},
		{name: "include_events is a list of names", method: "POST", path: projectExports, key: memberKey,
			body:   `{"name":"x","interval":"hour","destination":{"type":"Parquet","config":{"path":"p","include_events":"$pageview"}}}`,
			status: 400, want: []string{`"attr":"destination__config"`, `include_events`}},
		{name: "bucket is read as bucket_name", method: "POST", path: projectExports, key: memberKey,
			body: `{"name":"x","interval":"hour","destination":{"type":"S3","config":{"bucket":"bkt","region":"r","aws_access_key_id":"k","aws_secret_access_key":"s",
				"endpoint_url":"https://s3.example.com"}}}`,
			status: 201, want: []string{`"bucket_name":"bkt"`, `"endpoint_url":"https://s3.example.com"`}, notWant: []string{`"bucket":`}},

		{name: "update merges the config and keeps the secrets", method: "PATCH", path: orgExports + id + "/", key: memberKey,
			body: `{"name":"renamed","interval":"hour","destination":{"config":{"prefix":"new/"}},"filters":null,"end_at":null}`, status: 200,
			want: []string{`"name":"renamed"`, `"interval":"hour"`, `"prefix":"new/"`, `"bucket_name":"bkt"`, `"filters":null`, `"end_at":null`,
				`"start_at":"2026-01-01T00:00:00Z"`, `"model":"persons"`}, notWant: secrets},
		{name: "the destination type cannot change", method: "PATCH", path: orgExports + id + "/", key: memberKey,
			body: `{"destination":{"type":"Parquet","config":{"path":"p"}}}`, status: 400,
			want: []string{`"detail":"The type of a batch export's destination cannot be changed."`, `"attr":"destination"`}},
		{name: "an update is validated", method: "PATCH", path: projectExports + id + "/", key: memberKey, body: `{"interval":"monthly"}`,
			status: 400, want: []string{`"attr":"interval"`}},
	})
	var stored string
	if err := env.warehouse.DB().QueryRow(`SELECT destination_config FROM meta.batch_exports WHERE id = ?`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored, `"aws_secret_access_key":"very-secret-key"`) || !strings.Contains(stored, `"prefix":"new/"`) {
		t.Fatalf("the stored destination keeps the secrets for the runner: %s", stored)
	}

	env.run(t, []scenario{
		{name: "delete", method: "DELETE", path: projectExports + id + "/", key: memberKey, status: 204},
		{name: "gone from retrieve", method: "GET", path: orgExports + id + "/", key: readKey, status: 404},
		{name: "gone from lists", method: "GET", path: orgExports, key: readKey, status: 200, want: []string{`"count":2`}, notWant: []string{id}},
		{name: "deleted exports do not pause", method: "POST", path: orgExports + id + "/pause/", key: memberKey, status: 404},
		{name: "deleted again", method: "DELETE", path: projectExports + id + "/", key: memberKey, status: 404},
	})
	var deleted bool
	if err := env.warehouse.DB().QueryRow(`SELECT deleted FROM meta.batch_exports WHERE id = ?`, id).Scan(&deleted); err != nil || !deleted {
		t.Fatalf("the delete is soft: deleted=%v %v", deleted, err)
	}
}

// firstProjectOf is the id of the first project of another organization.
func firstProjectOf(t *testing.T, env *testEnv, org uuid.UUID, key string) string {
	t.Helper()
	if _, _, err := insertProject(t.Context(), env.warehouse.DB(), org, "Theirs"); err != nil {
		t.Fatal(err)
	}
	list := env.must(t, 200, "GET", "/api/organizations/"+org.String()+"/projects/", key, "")
	return strconv.Itoa(int(list["results"].([]any)[0].(map[string]any)["id"].(float64)))
}

// Pause and unpause answer 200 with no body; pausing a paused export or
// unpausing an active one changes nothing; last_paused_at is set by a real pause and
// kept by unpause.
func TestBatchExportPause(t *testing.T) {
	env := serveAPI(t, nil)
	_, key := env.member(t, "member@example.com", levelMember, "batch_export:write")
	for _, base := range []string{env.orgPath("batch_exports/"), "/api/projects/1/batch_exports/"} {
		created := env.must(t, 201, "POST", base, key, exportBody(env))
		path := base + created["id"].(string) + "/"
		state := func() (bool, any) {
			r := env.must(t, 200, "GET", path, key, "")
			return r["paused"].(bool), r["last_paused_at"]
		}
		action := func(name string) {
			t.Helper()
			// PostHog's clients send the export's fields as the body; they are not read.
			status, _, text := env.call(t, "POST", path+name+"/", key, `{"name":"ignored","paused":false}`)
			if status != 200 || text != "" {
				t.Fatalf("%s: %d %q, want 200 and no body", name, status, text)
			}
		}

		action("unpause") // already active: nothing changes
		if paused, at := state(); paused || at != nil {
			t.Fatalf("unpause of an active export: paused=%v last_paused_at=%v", paused, at)
		}
		action("pause")
		paused, pausedAt := state()
		if !paused || pausedAt == nil {
			t.Fatalf("pause: paused=%v last_paused_at=%v", paused, pausedAt)
		}
		time.Sleep(5 * time.Millisecond)
		action("pause") // already paused: last_paused_at stays
		if paused, at := state(); !paused || at != pausedAt {
			t.Fatalf("pause of a paused export: paused=%v last_paused_at=%v, was %v", paused, at, pausedAt)
		}
		action("unpause")
		if paused, at := state(); paused || at != pausedAt {
			t.Fatalf("unpause: paused=%v last_paused_at=%v, want it kept at %v", paused, at, pausedAt)
		}
		time.Sleep(5 * time.Millisecond)
		// PATCH paused does what pause does.
		patched := env.must(t, 200, "PATCH", path, key, `{"paused":true}`)
		if patched["paused"] != true || patched["last_paused_at"] == pausedAt {
			t.Fatalf("PATCH paused: %v", patched)
		}
		env.must(t, 404, "POST", base+uuid.NewString()+"/pause/", key, "")
		env.must(t, 404, "POST", base+"nope/unpause/", key, "")
	}
}

// The stored credentials of an S3 destination sign uploads to its endpoint only: a
// PATCH that changes endpoint_url must send them again, or anyone allowed to edit the
// export could aim the next signed upload at a server of their own.
func TestBatchExportEndpointChangeNeedsCredentials(t *testing.T) {
	env := serveAPI(t, nil)
	_, key := env.member(t, "member@example.com", levelMember, "batch_export:write")
	created := env.must(t, 201, "POST", "/api/projects/1/batch_exports/", key, `{"name":"s3","interval":"hour",
		"destination":{"type":"S3","config":{"bucket_name":"bkt","region":"r","endpoint_url":"https://s3.example.com",
			"aws_access_key_id":"AKIA-STORED","aws_secret_access_key":"stored-secret"}}}`)
	path := "/api/projects/1/batch_exports/" + created["id"].(string) + "/"
	keyRequired := []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"destination__config__aws_access_key_id"}`}
	secretRequired := []string{`{"type":"validation_error","code":"required","detail":"This field is required.","attr":"destination__config__aws_secret_access_key"}`}
	env.run(t, []scenario{
		{name: "a new endpoint without the credentials", method: "PATCH", path: path, key: key,
			body: `{"destination":{"config":{"endpoint_url":"https://attacker.example.net"}}}`, status: 400, want: keyRequired},
		{name: "a new endpoint with one of them", method: "PATCH", path: path, key: key,
			body: `{"destination":{"config":{"endpoint_url":"https://attacker.example.net","aws_access_key_id":"AKIA-NEW"}}}`, status: 400, want: secretRequired},
		{name: "the endpoint removed (AWS) without the credentials", method: "PATCH", path: path, key: key,
			body: `{"destination":{"config":{"endpoint_url":null}}}`, status: 400, want: keyRequired},
		{name: "the same endpoint sent again", method: "PATCH", path: path, key: key,
			body: `{"destination":{"config":{"endpoint_url":"https://s3.example.com","bucket_name":"bkt2"}}}`, status: 200,
			want: []string{`"endpoint_url":"https://s3.example.com"`, `"bucket_name":"bkt2"`}},
		{name: "a new endpoint with both", method: "PATCH", path: path, key: key,
			body:   `{"destination":{"config":{"endpoint_url":"https://s3.example.org","aws_access_key_id":"AKIA-NEW","aws_secret_access_key":"new-secret"}}}`,
			status: 200, want: []string{`"endpoint_url":"https://s3.example.org"`}, notWant: []string{"AKIA", "secret"}},
	})
	var stored string
	if err := env.warehouse.DB().QueryRow(`SELECT destination_config FROM meta.batch_exports WHERE id = ?`, created["id"]).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored, `"aws_access_key_id":"AKIA-NEW"`) || !strings.Contains(stored, `"endpoint_url":"https://s3.example.org"`) {
		t.Fatalf("stored: %s", stored)
	}
}

// A backfill covers at most batchexport.MaxBackfillWindows windows, refused whole
// with a 400 that names the field to change, however early start_at is; one within
// the cap answers at once, having queued no more than a first batch of its runs.
// Meanwhile another tenant's events commit: no backfill fills DuckDB's memory.
func TestBatchExportBackfillBounds(t *testing.T) {
	env := serveAPI(t, nil)
	id := env.must(t, 201, "POST", env.project+"/batch_exports/", env.owner,
		`{"name":"often","interval":"every 5 minutes","destination":{"type":"Parquet","config":{"path":"often"}}}`)["id"].(string)
	path := env.project + "/batch_exports/" + id + "/"
	otherOrg, _ := env.addUser(t, "other@example.com", uuid.Nil, levelOwner, "*")
	otherTeam, _, err := insertProject(t.Context(), env.warehouse.DB(), otherOrg, "Theirs")
	if err != nil {
		t.Fatal(err)
	}
	stop, ingested := make(chan struct{}), make(chan error, 1)
	go func() {
		var failure error
		for n := 0; ; n++ {
			select {
			case <-stop:
				ingested <- failure
				return
			case <-time.After(10 * time.Millisecond):
			}
			batch := &warehouse.Batch{Lane: warehouse.LaneRealtime}
			for i := range 50 {
				batch.Events = append(batch.Events, warehouse.Event{UUID: uuid.Must(uuid.NewV7()), TeamID: otherTeam, Name: "$pageview",
					DistinctID: fmt.Sprint(i), Timestamp: time.Now(), Properties: `{"n": 1}`})
			}
			if err := env.warehouse.Writer().Submit(batch); err != nil && failure == nil {
				failure = fmt.Errorf("commit %d of the other tenant's events: %w", n, err)
			}
		}
	}()

	now := time.Now().UTC()
	span := func(from, to time.Time) string {
		return fmt.Sprintf(`{"start_at": %q, "end_at": %q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	const tooMany = `"type":"validation_error","code":"invalid_input"`
	env.run(t, []scenario{
		{name: "more than a year of 5-minute windows", method: "POST", path: path + "backfills/", key: env.owner,
			body: span(now.Add(-400*24*time.Hour), now), status: 400, want: []string{tooMany, `"attr":"start_at"`, `at most 105408`}},
		{name: "from year 1", method: "POST", path: path + "backfill/", key: env.owner,
			body: span(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), now), status: 400, want: []string{tooMany, `"attr":"start_at"`}},
	})
	year := env.must(t, 201, "POST", path+"backfills/", env.owner, span(now.Add(-365*24*time.Hour), now))
	if total := int(year["total_runs"].(float64)); total < 365*288 || total > 365*288+1 || year["status"] != "Running" {
		t.Fatalf("a year's backfill: %v", year)
	}
	var runs int
	if err := env.warehouse.DB().QueryRow(`SELECT count(*) FROM meta.batch_export_runs WHERE backfill_id = ?`, year["id"]).Scan(&runs); err != nil || runs != batchexport.DefaultMaxQueuedRuns {
		t.Fatalf("a year's backfill queued %d runs at once (%v), want its first batch of %d", runs, err, batchexport.DefaultMaxQueuedRuns)
	}

	// An unpause that would backfill a pause of years is refused before it unpauses.
	if _, err := env.warehouse.DB().Exec(`UPDATE meta.batch_exports SET paused = true, last_paused_at = ? WHERE id = ?`,
		now.Add(-2*365*24*time.Hour), id); err != nil {
		t.Fatal(err)
	}
	env.run(t, []scenario{
		{name: "unpause with a backfill of years", method: "POST", path: path + "unpause/", key: env.owner, body: `{"backfill": true}`,
			status: 400, want: []string{tooMany, `"attr":"backfill"`}},
		{name: "still paused", method: "GET", path: path, key: env.owner, status: 200, want: []string{`"paused":true`}},
	})
	close(stop)
	if err := <-ingested; err != nil {
		t.Fatal(err)
	}
}
