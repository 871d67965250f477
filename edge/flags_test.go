package edge_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/warehouse"
)

// The capture listener's flag routes against a real warehouse, flag store and
// management API (newCaptureEnv): /flags/ and /decide/, remote config, and the SDK
// routes it forwards. Flags are made through the flags.Store the management API uses
// (or through its HTTP API); stored persons and groups by ingesting events, as SDKs
// make them.

func ptr[T any](v T) *T { return &v }

// project is a project of the env's organization, made through the management API.
type project struct {
	id    int64
	token string
}

// newProject makes a project; timezone "" is the default (UTC).
func (env *captureEnv) newProject(t *testing.T, timezone string) project {
	t.Helper()
	body := map[string]any{"name": "flags " + uuid.NewString()[:8]}
	if timezone != "" {
		body["timezone"] = timezone
	}
	a := env.manage(t, "POST", "/api/organizations/"+env.organization+"/projects/", body)
	if a.status != 201 {
		t.Fatalf("creating a project: %d %s", a.status, a.body)
	}
	var p struct {
		ID       int64  `json:"id"`
		APIToken string `json:"api_token"`
	}
	if err := json.Unmarshal([]byte(a.body), &p); err != nil || p.ID == 0 || p.APIToken == "" {
		t.Fatalf("created project %s (%v)", a.body, err)
	}
	return project{id: p.ID, token: p.APIToken}
}

// manage sends a request to the management API with the bootstrap's personal API key;
// body, when not nil, is sent as JSON.
func (env *captureEnv) manage(t *testing.T, method, path string, body any) answer {
	t.Helper()
	var text []byte
	if body != nil {
		var err error
		if text, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	admin := &captureEnv{url: env.adminURL}
	return admin.send(t, method, path, text, map[string]string{
		"Authorization": "Bearer " + env.personalKey, "Content-Type": "application/json"})
}

// ingest sends events (JSON objects) to /batch/ for the project of token; they are
// committed when it answers.
func (env *captureEnv) ingest(t *testing.T, token string, events ...string) {
	t.Helper()
	body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, token, strings.Join(events, ","))
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 {
		t.Fatalf("ingesting: %d %s", a.status, a.body)
	}
}

// createFlag makes a flag through the store, as the management API does.
func (env *captureEnv) createFlag(t *testing.T, team int64, key, filters string, change ...func(*flags.FlagChange)) *flags.Flag {
	t.Helper()
	ch := flags.FlagChange{Key: &key}
	if filters != "" {
		ch.Filters = json.RawMessage(filters)
	}
	for _, c := range change {
		c(&ch)
	}
	f, err := env.flags.CreateFlag(context.Background(), team, 0, ch)
	if err != nil {
		t.Fatalf("creating flag %s: %v", key, err)
	}
	return f
}

func (env *captureEnv) updateFlag(t *testing.T, team, id int64, ch flags.FlagChange) *flags.Flag {
	t.Helper()
	f, ok, err := env.flags.UpdateFlag(context.Background(), team, id, 0, ch)
	if err != nil || !ok {
		t.Fatalf("updating flag %d: %v %v", id, ok, err)
	}
	return f
}

// Filters of the flags the tests make.
const (
	everyone = `{"groups":[{"properties":[],"rollout_percentage":100}]}`
	half     = `{"groups":[{"properties":[],"rollout_percentage":50}]}`
)

// personFlag is the filters of a flag on one person property.
func personFlag(key, operator string, value any) string {
	v, _ := json.Marshal(value)
	return fmt.Sprintf(`{"groups":[{"properties":[{"key":%q,"type":"person","operator":%q,"value":%s}],"rollout_percentage":100}]}`, key, operator, v)
}

// flagsAnswer is a v2 answer.
type flagsAnswer struct {
	Flags       map[string]flagDetails `json:"flags"`
	Errors      bool                   `json:"errorsWhileComputingFlags"`
	RequestID   string                 `json:"requestId"`
	EvaluatedAt int64                  `json:"evaluatedAt"`
}

type flagDetails struct {
	Key     string  `json:"key"`
	Enabled bool    `json:"enabled"`
	Variant *string `json:"variant"`
	Reason  struct {
		Code           string `json:"code"`
		ConditionIndex *int   `json:"condition_index"`
		Description    string `json:"description"`
	} `json:"reason"`
	Metadata struct {
		ID            int64   `json:"id"`
		Version       int     `json:"version"`
		Description   *string `json:"description"`
		Payload       *string `json:"payload"`
		HasExperiment bool    `json:"has_experiment"`
	} `json:"metadata"`
	Failed bool `json:"failed"`
}

// value is the flag's value as SDKs read it: its variant, else whether it is enabled.
func (d flagDetails) value() string {
	if d.Variant != nil {
		return *d.Variant
	}
	return strconv.FormatBool(d.Enabled)
}

// summary is the answer's flags as "key=value" in key order, each failed one marked
// "!", and "errors" last when errorsWhileComputingFlags.
func (a flagsAnswer) summary() string {
	var parts []string
	for key, d := range a.Flags {
		part := key + "=" + d.value()
		if d.Failed {
			part += "!"
		}
		parts = append(parts, part)
	}
	slices.Sort(parts)
	if a.Errors {
		parts = append(parts, "errors")
	}
	return strings.Join(parts, " ")
}

// sortedWords is a summary written in any order, in the order summary writes it.
func sortedWords(s string) string {
	words := strings.Fields(s)
	errors := slices.Contains(words, "errors")
	words = slices.DeleteFunc(words, func(w string) bool { return w == "errors" })
	slices.Sort(words)
	if errors {
		words = append(words, "errors")
	}
	return strings.Join(words, " ")
}

// flagsFor POSTs body (JSON) to path (/flags/?v=2 when empty) and decodes the v2 answer.
func (env *captureEnv) flagsFor(t *testing.T, path string, body any, headers map[string]string) flagsAnswer {
	t.Helper()
	if path == "" {
		path = "/flags/?v=2"
	}
	text, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	a := env.send(t, "POST", path, text, headers)
	return decodeFlags(t, a)
}

func decodeFlags(t *testing.T, a answer) flagsAnswer {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("answered %d %s", a.status, a.body)
	}
	var got flagsAnswer
	if err := json.Unmarshal([]byte(a.body), &got); err != nil || got.Flags == nil {
		t.Fatalf("answered %s (%v)", a.body, err)
	}
	return got
}

// canonical is JSON text re-encoded with sorted keys and numbers as written.
func canonical(t *testing.T, text string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, text)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// normalized is an answer's body, canonical, after checking that its requestId is a
// UUID and its evaluatedAt a time in milliseconds since since, which it replaces with
// "UUID" and "MS".
func normalized(t *testing.T, body string, since time.Time) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, body)
	}
	id, _ := m["requestId"].(string)
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("requestId %v is not a UUID", m["requestId"])
	}
	ms, err := m["evaluatedAt"].(json.Number).Int64()
	if err != nil || ms < since.UnixMilli() || ms > time.Now().UnixMilli() {
		t.Fatalf("evaluatedAt %v is not the time of the answer in milliseconds", m["evaluatedAt"])
	}
	m["requestId"], m["evaluatedAt"] = "UUID", "MS"
	out, _ := json.Marshal(m)
	return string(out)
}

// The remote config fields that /flags/ answers with config, and /array/<token>/config:
// what posthog-js reads on load. hedge records no sessions and has no surveys, heatmaps,
// site apps or toolbar, so it says so; hasFeatureFlags is whether the project has an
// active flag.
func configFields(hasFlags bool) string {
	return fmt.Sprintf(`"supportedCompression":["gzip","gzip-js"],"hasFeatureFlags":%v,"capturePerformance":false,`+
		`"autocaptureExceptions":false,"sessionRecording":false,"heatmaps":false,"isAuthenticated":false,`+
		`"toolbarParams":{},"siteApps":[]`, hasFlags)
}

// TestFlagsAnswerShapes: each endpoint, v and config answer in the shape PostHog gives
// them, exactly.
func TestFlagsAnswerShapes(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	beta := env.createFlag(t, p.id, "beta", `{"groups":[{"properties":[],"rollout_percentage":100}],"payloads":{"true":{"a":1}}}`)
	multi := env.createFlag(t, p.id, "multi", `{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"test","rollout_percentage":100}]},`+
		`"payloads":{"test":[1,2]}}`)
	off := env.createFlag(t, p.id, "off", personFlag("email", "exact", "a@x.com"))
	env.createFlag(t, p.id, "inactive", everyone, func(ch *flags.FlagChange) { ch.Active = ptr(false) })
	env.createFlag(t, p.id, "gone", everyone, func(ch *flags.FlagChange) { ch.Deleted = ptr(true) })
	// A flag updated twice answers its version, 3.
	env.updateFlag(t, p.id, off.ID, flags.FlagChange{Name: ptr("Off")})
	env.updateFlag(t, p.id, off.ID, flags.FlagChange{Name: ptr("Off!")})

	// v2: every evaluated flag, enabled or not; inactive and deleted flags are absent.
	// A payload is the stored JSON text; a boolean match answers the "true" payload.
	v2Flags := fmt.Sprintf(`"flags":{`+
		`"beta":{"key":"beta","enabled":true,"variant":null,"reason":{"code":"condition_match","condition_index":0,"description":"Matched condition set 1"},`+
		`"metadata":{"id":%d,"version":1,"description":null,"payload":"{\"a\": 1}","has_experiment":false}},`+
		`"multi":{"key":"multi","enabled":true,"variant":"test","reason":{"code":"condition_match","condition_index":0,"description":"Matched condition set 1"},`+
		`"metadata":{"id":%d,"version":1,"description":null,"payload":"[1, 2]","has_experiment":false}},`+
		`"off":{"key":"off","enabled":false,"variant":null,"reason":{"code":"no_condition_match","condition_index":0,"description":"No matching condition set"},`+
		`"metadata":{"id":%d,"version":3,"description":null,"payload":null,"has_experiment":false}}}`, beta.ID, multi.ID, off.ID)
	const answered = `"errorsWhileComputingFlags":false,"requestId":"UUID","evaluatedAt":"MS"`
	legacyValues := `"featureFlags":{"beta":true,"multi":"test","off":false},"featureFlagPayloads":{"beta":"{\"a\": 1}","multi":"[1, 2]"}`
	config := configFields(true)

	body := []byte(fmt.Sprintf(`{"token":%q,"distinct_id":"user-1"}`, p.token))
	f := func(method, path string, want string) {
		t.Helper()
		since := time.Now()
		a := env.send(t, method, path, body, nil)
		if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: %d %s (%s)", method, path, a.status, a.body, a.header.Get("Content-Type"))
		}
		if got, want := normalized(t, a.body, since), canonical(t, want); got != want {
			t.Fatalf("%s %s answered\n%s\nwant\n%s", method, path, got, want)
		}
	}
	// /flags/: v2 when v >= 2; neither v nor config is v2 with the config; v missing or
	// 1 with config is the legacy shape, disabled flags false; config adds its fields.
	f("POST", "/flags/?v=2", `{`+v2Flags+`,`+answered+`}`)
	f("POST", "/flags/?v=3", `{`+v2Flags+`,`+answered+`}`)
	f("POST", "/flags/", `{`+v2Flags+`,`+answered+`,`+config+`}`)
	f("POST", "/flags", `{`+v2Flags+`,`+answered+`,`+config+`}`)
	f("POST", "/flags/?v=2&config=true", `{`+v2Flags+`,`+answered+`,`+config+`}`)
	f("POST", "/flags/?v=1&config=true", `{`+legacyValues+`,`+answered+`,`+config+`}`)
	f("POST", "/flags/?config=true", `{`+legacyValues+`,`+answered+`,`+config+`}`)
	f("POST", "/flags/?v=1", `{`+legacyValues+`,`+answered+`}`)
	// /decide/ always answers the config: v missing or 1, the enabled keys; 2, the
	// enabled flags' values; 3, the legacy shape; 4 and later, v2.
	f("POST", "/decide/", `{"featureFlags":["beta","multi"],`+answered+`,`+config+`}`)
	f("POST", "/decide/?v=1", `{"featureFlags":["beta","multi"],`+answered+`,`+config+`}`)
	f("POST", "/decide/?v=2", `{"featureFlags":{"beta":true,"multi":"test"},`+answered+`,`+config+`}`)
	f("POST", "/decide/?v=3", `{`+legacyValues+`,`+answered+`,`+config+`}`)
	f("POST", "/decide/?v=4", `{`+v2Flags+`,`+answered+`,`+config+`}`)
	f("POST", "/decide", `{"featureFlags":["beta","multi"],`+answered+`,`+config+`}`)

	// disable_flags: no flag is evaluated; the config still is.
	body = []byte(fmt.Sprintf(`{"token":%q,"distinct_id":"user-1","disable_flags":true}`, p.token))
	f("POST", "/flags/", `{"flags":{},`+answered+`,`+config+`}`)
	f("POST", "/flags/?v=2", `{"flags":{},`+answered+`}`)
	f("POST", "/decide/?v=3", `{"featureFlags":{},"featureFlagPayloads":{},`+answered+`,`+config+`}`)

	// GET evaluates nothing and knows no project: the answer of a caller without flags.
	body = nil
	f("GET", "/flags/", `{"flags":{},`+answered+`,`+configFields(false)+`}`)
	f("GET", "/flags/?v=2", `{"flags":{},`+answered+`}`)
	f("GET", "/decide/", `{"featureFlags":[],`+answered+`,`+configFields(false)+`}`)

	// Every answer has its own request id.
	a1 := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "u"}, nil)
	a2 := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "u"}, nil)
	if a1.RequestID == a2.RequestID {
		t.Fatalf("two answers with request id %s", a1.RequestID)
	}
}

// TestFlagsWhichFlags: which flags a request evaluates: the keys it asks for (and what
// they depend on), survey flags alone, the runtime it declares or shows, its
// evaluation contexts.
func TestFlagsWhichFlags(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	base := env.createFlag(t, p.id, "base", everyone)
	env.createFlag(t, p.id, "needs-base", fmt.Sprintf(`{"groups":[{"properties":[{"key":"%d","type":"flag","operator":"flag_evaluates_to","value":true}]}]}`, base.ID))
	env.createFlag(t, p.id, "survey-targeting-abc", everyone)
	env.createFlag(t, p.id, "rt-client", everyone, func(ch *flags.FlagChange) { ch.EvaluationRuntime = ptr("client") })
	env.createFlag(t, p.id, "rt-server", everyone, func(ch *flags.FlagChange) { ch.EvaluationRuntime = ptr("server") })
	env.createFlag(t, p.id, "tag-web", everyone, func(ch *flags.FlagChange) { ch.EvaluationTags = []string{"web"} })
	env.createFlag(t, p.id, "tag-app", everyone, func(ch *flags.FlagChange) { ch.EvaluationTags = []string{"app", "docs"} })

	// Flags for every runtime and without tags answer every request below that does not
	// ask for keys.
	const always = "base=true needs-base=true survey-targeting-abc=true"
	f := func(name, path string, fields map[string]any, headers map[string]string, want string) {
		t.Helper()
		body := map[string]any{"token": p.token, "distinct_id": "user-1"}
		for k, v := range fields {
			body[k] = v
		}
		if got := env.flagsFor(t, path, body, headers).summary(); got != sortedWords(want) {
			t.Fatalf("%s: answered %q, want %q", name, got, want)
		}
	}
	// Go's client says "Go-http-client/1.1", which shows no runtime: flags for "client" or
	// "server" only are left out.
	f("no runtime known", "", nil, nil, always+" tag-app=true tag-web=true")

	// Keys asked for, and the flags they depend on; keys of no flag are ignored.
	f("flag_keys", "", map[string]any{"flag_keys": []string{"needs-base", "nothing"}}, nil, "base=true needs-base=true")
	f("flag_keys_to_evaluate", "", map[string]any{"flag_keys_to_evaluate": []string{"tag-web"}}, nil, "tag-web=true")
	f("only survey flags", "/flags/?v=2&only_evaluate_survey_feature_flags=true", nil, nil, "survey-targeting-abc=true")
	f("only survey flags false", "/flags/?v=2&only_evaluate_survey_feature_flags=false", nil, nil, always+" tag-app=true tag-web=true")

	// The runtime: evaluation_runtime when sent (any case; a value that is no runtime is
	// "all"), else what the User-Agent says, else a browser's headers (Origin, Referer,
	// Sec-Fetch-*). "all" keeps every flag; client and server keep theirs and the
	// flags of every runtime.
	const client, server = always + " rt-client=true tag-app=true tag-web=true", always + " rt-server=true tag-app=true tag-web=true"
	const all = always + " rt-client=true rt-server=true tag-app=true tag-web=true"
	browser := map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"}
	f("browser", "", nil, browser, client)
	f("posthog-node, with undici's sec-fetch-mode", "", nil, map[string]string{"User-Agent": "posthog-node/5.70.0", "Sec-Fetch-Mode": "cors"}, server)
	f("posthog-go", "", nil, map[string]string{"User-Agent": "posthog-go/1.23.1"}, server)
	f("posthog-python", "", nil, map[string]string{"User-Agent": "posthog-python/6.0.0"}, server)
	f("python-requests", "", nil, map[string]string{"User-Agent": "python-requests/2.32.3"}, server)
	f("curl", "", nil, map[string]string{"User-Agent": "curl/8.5.0"}, server)
	f("posthog-android", "", nil, map[string]string{"User-Agent": "posthog-android/3.8.0"}, client)
	f("posthog-ios", "", nil, map[string]string{"User-Agent": "posthog-ios/3.19.0"}, client)
	f("Origin", "", nil, map[string]string{"Origin": "https://app.example.com"}, client)
	f("Referer", "", nil, map[string]string{"Referer": "https://app.example.com/page"}, client)
	f("Sec-Fetch-Mode (posthog-js under node)", "", nil, map[string]string{"User-Agent": "node", "Sec-Fetch-Mode": "cors"}, client)
	f("declared server, from a browser", "", map[string]any{"evaluation_runtime": "server"}, browser, server)
	f("declared CLIENT", "", map[string]any{"evaluation_runtime": "CLIENT"}, nil, client)
	f("declared all, from a browser", "", map[string]any{"evaluation_runtime": "all"}, browser, all)
	f("declared all", "", map[string]any{"evaluation_runtime": "all"}, nil, all)
	f("declared something else", "", map[string]any{"evaluation_runtime": "edge"}, map[string]string{"User-Agent": "posthog-node/5.70.0"}, all)

	// Evaluation contexts (or evaluation_environments): flags without tags, and those
	// with one of the contexts.
	f("evaluation_contexts", "", map[string]any{"evaluation_contexts": []string{"web"}}, nil, always+" tag-web=true")
	f("evaluation_contexts, two", "", map[string]any{"evaluation_contexts": []string{"docs", "web"}}, nil, always+" tag-app=true tag-web=true")
	f("evaluation_environments", "", map[string]any{"evaluation_environments": []string{"app"}}, nil, always+" tag-app=true")
	f("evaluation_contexts empty", "", map[string]any{"evaluation_contexts": []string{}}, nil, always+" tag-app=true tag-web=true")
}

// TestFlagsRequestFields: the body fields' aliases and the forms of a distinct id.
func TestFlagsRequestFields(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	// A group type, from the groups of an ordinary event.
	env.ingest(t, p.token, `{"event":"e","distinct_id":"setup","properties":{"$groups":{"company":"acme"}}}`)
	env.createFlag(t, p.id, "id", personFlag("distinct_id", "exact", "user-2"))
	env.createFlag(t, p.id, "plan", personFlag("plan", "exact", "pro"))
	env.createFlag(t, p.id, "acme", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"$group_key","type":"group","group_type_index":0,"operator":"exact","value":"acme"}]}]}`)
	env.createFlag(t, p.id, "big-company", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"size","type":"group","group_type_index":0,"operator":"gt","value":"10"}]}]}`)
	// At 50%, "cont" is on for anon-1 and off for user-2; "dev" on for device-1 and off
	// for device-2 (the shared evaluation cases show their hashes).
	env.createFlag(t, p.id, "cont", half, func(ch *flags.FlagChange) { ch.EnsureExperienceContinuity = ptr(true) })
	env.createFlag(t, p.id, "dev", half, func(ch *flags.FlagChange) { ch.BucketingIdentifier = ptr("device_id") })

	const nobody = "acme=false big-company=false cont=false dev=false id=true plan=false"
	f := func(name, body, want string) {
		t.Helper()
		a := env.send(t, "POST", "/flags/?v=2", []byte(strings.ReplaceAll(body, "TOKEN", p.token)), nil)
		if got := decodeFlags(t, a).summary(); got != sortedWords(want) {
			t.Fatalf("%s: answered %q, want %q", name, got, want)
		}
	}
	f("token", `{"token":"TOKEN","distinct_id":"user-2"}`, nobody)
	f("api_key (posthog-go)", `{"api_key":"TOKEN","distinct_id":"user-2"}`, nobody)
	f("$token", `{"$token":"TOKEN","distinct_id":"user-2"}`, nobody)
	f("$distinct_id", `{"token":"TOKEN","$distinct_id":"user-2"}`, nobody)
	f("person_properties", `{"token":"TOKEN","distinct_id":"user-2","person_properties":{"plan":"pro"}}`,
		"acme=false big-company=false cont=false dev=false id=true plan=true")
	f("$properties", `{"token":"TOKEN","distinct_id":"user-2","$properties":{"plan":"pro"}}`,
		"acme=false big-company=false cont=false dev=false id=true plan=true")
	f("groups", `{"token":"TOKEN","distinct_id":"user-2","groups":{"company":"acme"}}`,
		"acme=true big-company=false cont=false dev=false id=true plan=false")
	f("$groups", `{"token":"TOKEN","distinct_id":"user-2","$groups":{"company":"acme"}}`,
		"acme=true big-company=false cont=false dev=false id=true plan=false")
	f("a group key that is a number", `{"token":"TOKEN","distinct_id":"user-2","groups":{"company":42}}`, nobody)
	f("group_properties", `{"token":"TOKEN","distinct_id":"user-2","groups":{"company":"x"},"group_properties":{"company":{"size":50}}}`,
		"acme=false big-company=true cont=false dev=false id=true plan=false")
	f("$group_properties", `{"token":"TOKEN","distinct_id":"user-2","groups":{"company":"x"},"$group_properties":{"company":{"size":50}}}`,
		"acme=false big-company=true cont=false dev=false id=true plan=false")
	f("device_id", `{"token":"TOKEN","distinct_id":"user-2","device_id":"device-1"}`,
		"acme=false big-company=false cont=false dev=true id=true plan=false")
	f("$device_id (posthog-js)", `{"token":"TOKEN","distinct_id":"user-2","$device_id":"device-1"}`,
		"acme=false big-company=false cont=false dev=true id=true plan=false")
	f("$device_id of the person properties (posthog-node)", `{"token":"TOKEN","distinct_id":"user-2","person_properties":{"$device_id":"device-1"}}`,
		"acme=false big-company=false cont=false dev=true id=true plan=false")
	f("device_id before the person's", `{"token":"TOKEN","distinct_id":"user-2","device_id":"device-2","person_properties":{"$device_id":"device-1"}}`, nobody)
	// The anonymous id, under either name; each in a project of its own, since the first
	// request that sends one stores it for user-2.
	for _, field := range []string{"$anon_distinct_id", "anon_distinct_id"} {
		q := env.newProject(t, "")
		env.createFlag(t, q.id, "cont", half, func(ch *flags.FlagChange) { ch.EnsureExperienceContinuity = ptr(true) })
		if got := env.flagsFor(t, "", map[string]any{"token": q.token, "distinct_id": "user-2", field: "anon-1"}, nil).summary(); got != "cont=true" {
			t.Fatalf("%s: answered %q", field, got)
		}
	}

	// A distinct id may be a number (its text), empty, or longer than 200 characters
	// (cut to its first 200).
	p2 := env.newProject(t, "")
	long := strings.Repeat("é", 200)
	env.createFlag(t, p2.id, "is-42", personFlag("distinct_id", "exact", "42"))
	env.createFlag(t, p2.id, "is-4_5", personFlag("distinct_id", "exact", "4.5"))
	env.createFlag(t, p2.id, "is-empty", personFlag("distinct_id", "exact", ""))
	env.createFlag(t, p2.id, "is-long", personFlag("distinct_id", "exact", long))
	// An empty identifier hashes to 0, within every rollout, even 0%.
	env.createFlag(t, p2.id, "zero", `{"groups":[{"properties":[],"rollout_percentage":0}]}`)
	g := func(id, want string) {
		t.Helper()
		body := fmt.Sprintf(`{"token":%q,"distinct_id":%s}`, p2.token, id)
		if got := decodeFlags(t, env.send(t, "POST", "/flags/?v=2", []byte(body), nil)).summary(); got != sortedWords(want) {
			t.Fatalf("distinct_id %s: answered %q, want %q", id, got, want)
		}
	}
	g(`42`, "is-4_5=false is-42=true is-empty=false is-long=false zero=false")
	g(`"42"`, "is-4_5=false is-42=true is-empty=false is-long=false zero=false")
	g(`4.5`, "is-4_5=true is-42=false is-empty=false is-long=false zero=false")
	g(`""`, "is-4_5=false is-42=false is-empty=true is-long=false zero=true")
	g(strconv.Quote(long+"ééé"), "is-4_5=false is-42=false is-empty=false is-long=true zero=false")
	g(strconv.Quote(long), "is-4_5=false is-42=false is-empty=false is-long=true zero=false")

	// NaN and Infinity (JSON5, and Python's json.dumps) are null, outside strings.
	p3 := env.newProject(t, "")
	for _, key := range []string{"nan", "inf", "minus-inf"} {
		env.createFlag(t, p3.id, key, personFlag(key, "exact", "null")) // null's text is "null"
	}
	env.createFlag(t, p3.id, "text", personFlag("text", "exact", `"NaN" Infinity`))
	f = func(name, body, want string) {
		t.Helper()
		a := env.send(t, "POST", "/flags/?v=2", []byte(strings.ReplaceAll(body, "TOKEN", p3.token)), nil)
		if got := decodeFlags(t, a).summary(); got != sortedWords(want) {
			t.Fatalf("%s: answered %q, want %q", name, got, want)
		}
	}
	f("NaN and Infinity", `{"token":"TOKEN","distinct_id":"u","person_properties":{"nan":NaN,"inf":Infinity,"minus-inf":-Infinity,"text":"\"NaN\" Infinity"}}`,
		"inf=true minus-inf=true nan=true text=true")
	f("numbers", `{"token":"TOKEN","distinct_id":"u","person_properties":{"nan":1,"inf":2.5,"minus-inf":-1}}`,
		"inf=false minus-inf=false nan=false text=false")
}

// TestFlagsStoredProperties: a person's and a group's stored properties, as ingested
// events left them, are what flags read, overridden by the request's.
func TestFlagsStoredProperties(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.ingest(t, p.token,
		`{"event":"$set","distinct_id":"stored","properties":{"$set":{"email":"a@x.com","plan":"free"}}}`,
		// An anonymous user with a property, who then identifies: both ids are one person.
		`{"event":"$pageview","distinct_id":"anon-1","properties":{"$set":{"first_page":"/pricing"}}}`,
		`{"event":"$identify","distinct_id":"known-1","properties":{"$anon_distinct_id":"anon-1","$set":{"plan":"pro"}}}`,
		// Groups: a project's group types are indexed in the order they are first seen.
		`{"event":"$groupidentify","distinct_id":"stored","properties":{"$group_type":"company","$group_key":"acme","$group_set":{"size":50,"tier":"gold"}}}`,
		`{"event":"$groupidentify","distinct_id":"stored","properties":{"$group_type":"team","$group_key":"blue","$group_set":{"size":3}}}`,
	)
	env.createFlag(t, p.id, "email-a", personFlag("email", "exact", "a@x.com"))
	env.createFlag(t, p.id, "email-b", personFlag("email", "exact", "b@x.com"))
	env.createFlag(t, p.id, "pro", personFlag("plan", "exact", "pro"))
	env.createFlag(t, p.id, "pricing", personFlag("first_page", "exact", "/pricing"))
	env.createFlag(t, p.id, "gold", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"tier","type":"group","group_type_index":0,"operator":"exact","value":"gold"}]}]}`)
	env.createFlag(t, p.id, "big-team", `{"aggregation_group_type_index":1,"groups":[{"properties":[{"key":"size","type":"group","group_type_index":1,"operator":"gt","value":"10"}]}]}`)
	env.createFlag(t, p.id, "acme", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"$group_key","type":"group","group_type_index":0,"operator":"exact","value":"acme"}]}]}`)

	f := func(name string, body map[string]any, want string) {
		t.Helper()
		body["token"] = p.token
		if got := env.flagsFor(t, "", body, nil).summary(); got != sortedWords(want) {
			t.Fatalf("%s: answered %q, want %q", name, got, want)
		}
	}
	const groupsOff = "acme=false big-team=false gold=false"
	f("stored", map[string]any{"distinct_id": "stored"}, groupsOff+" email-a=true email-b=false pricing=false pro=false")
	f("the request's properties win", map[string]any{"distinct_id": "stored", "person_properties": map[string]any{"email": "b@x.com"}},
		groupsOff+" email-a=false email-b=true pricing=false pro=false")
	f("the request's properties alone", map[string]any{"distinct_id": "nobody", "person_properties": map[string]any{"email": "a@x.com"}},
		groupsOff+" email-a=true email-b=false pricing=false pro=false")
	// After $identify the anonymous id is the identified person: each id reads what was
	// set through the other.
	f("the anonymous id after $identify", map[string]any{"distinct_id": "anon-1"}, groupsOff+" email-a=false email-b=false pricing=true pro=true")
	f("the identified id", map[string]any{"distinct_id": "known-1"}, groupsOff+" email-a=false email-b=false pricing=true pro=true")
	// A group's stored properties, its key as $group_key, and the request's group
	// properties, which win.
	f("stored group", map[string]any{"distinct_id": "x", "groups": map[string]any{"company": "acme", "team": "blue"}},
		"acme=true big-team=false gold=true email-a=false email-b=false pricing=false pro=false")
	f("group properties sent win", map[string]any{"distinct_id": "x", "groups": map[string]any{"company": "acme", "team": "blue"},
		"group_properties": map[string]any{"company": map[string]any{"tier": "silver"}, "team": map[string]any{"size": 20}}},
		"acme=true big-team=true gold=false email-a=false email-b=false pricing=false pro=false")
	f("another group of the type", map[string]any{"distinct_id": "x", "groups": map[string]any{"company": "initech"}},
		groupsOff+" email-a=false email-b=false pricing=false pro=false")
	f("a type the project does not have", map[string]any{"distinct_id": "x", "groups": map[string]any{"planet": "earth"}},
		groupsOff+" email-a=false email-b=false pricing=false pro=false")

	// A group flag without the group in the request: no_group_type.
	got := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "x"}, nil)
	if r := got.Flags["gold"].Reason; r.Code != "no_group_type" || r.Description != "No group type" {
		t.Fatalf("a group flag without its group: %+v", r)
	}

	// A property set later is read at once: the answer after the commit sees it.
	env.ingest(t, p.token, `{"event":"$set","distinct_id":"stored","properties":{"$set":{"email":"b@x.com"}}}`)
	f("after a later $set", map[string]any{"distinct_id": "stored"}, groupsOff+" email-a=false email-b=true pricing=false pro=false")
}

// TestFlagsDeviceID: a flag that buckets by device id hashes the device id sent
// (device_id, $device_id, or the person properties' $device_id), whoever sends it, and
// without one its person conditions are out of rollout.
func TestFlagsDeviceID(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "device", half, func(ch *flags.FlagChange) { ch.BucketingIdentifier = ptr("device_id") })
	ask := func(body map[string]any) flagDetails {
		t.Helper()
		body["token"] = p.token
		return env.flagsFor(t, "", body, nil).Flags["device"]
	}
	outcomes := map[bool]int{}
	for i := range 20 {
		device := fmt.Sprintf("device-%d", i)
		want := ask(map[string]any{"distinct_id": "user-0", "device_id": device}).Enabled
		outcomes[want]++
		for _, body := range []map[string]any{
			{"distinct_id": fmt.Sprintf("user-%d", i+1), "device_id": device},
			{"distinct_id": "someone", "$device_id": device},
			{"distinct_id": "someone", "person_properties": map[string]any{"$device_id": device}},
		} {
			if got := ask(body).Enabled; got != want {
				t.Fatalf("%s: %v for %v, %v for user-0", device, got, body, want)
			}
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("20 device ids in a 50%% rollout: %v (is the device id hashed?)", outcomes)
	}
	if d := ask(map[string]any{"distinct_id": "user-0"}); d.Enabled || d.Reason.Code != "out_of_rollout_bound" {
		t.Fatalf("without a device id: %v %s", d.Enabled, d.Reason.Code)
	}
}

// TestFlagsExperienceContinuity: a user keeps the variant they had as an anonymous
// user once they identify, for flags with experience continuity: the first request
// that sends both ids stores the anonymous id for both, and later requests of either id
// hash it, with or without the anonymous id.
func TestFlagsExperienceContinuity(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	variants := `{"groups":[{"properties":[]}],"multivariate":{"variants":[{"key":"control","rollout_percentage":50},{"key":"test","rollout_percentage":50}]}}`
	env.createFlag(t, p.id, "kept", variants, func(ch *flags.FlagChange) { ch.EnsureExperienceContinuity = ptr(true) })
	env.createFlag(t, p.id, "rehashed", variants)
	ask := func(distinctID, anonID string) (kept, rehashed string) {
		t.Helper()
		body := map[string]any{"token": p.token, "distinct_id": distinctID}
		if anonID != "" {
			body["$anon_distinct_id"] = anonID
		}
		a := env.flagsFor(t, "", body, nil)
		if a.Errors {
			t.Fatalf("errors while computing: %+v", a.Flags)
		}
		return a.Flags["kept"].value(), a.Flags["rehashed"].value()
	}
	changed := 0
	for i := range 30 {
		anon, user := fmt.Sprintf("anon-%d", i), fmt.Sprintf("user-%d", i)
		before, rehashedBefore := ask(anon, "")
		after, rehashedAfter := ask(user, anon) // the request after identify
		if after != before {
			t.Fatalf("%s identified as %s: %s, was %s", anon, user, after, before)
		}
		if rehashedAfter != rehashedBefore {
			changed++
		}
		for _, q := range [][2]string{{user, ""}, {anon, ""}, {user, "another-anon"}} {
			if got, _ := ask(q[0], q[1]); got != before {
				t.Fatalf("%s (anon %q) later: %s, want %s", q[0], q[1], got, before)
			}
		}
		var rows string
		err := env.warehouse.DB().QueryRow(`SELECT string_agg(distinct_id || '=' || hash_key, ',' ORDER BY distinct_id)
			FROM meta.feature_flag_hash_key_overrides WHERE team_id = ? AND feature_flag_key = 'kept' AND (distinct_id = ? OR distinct_id = ?)`,
			p.id, anon, user).Scan(&rows)
		if err != nil || rows != anon+"="+anon+","+user+"="+anon {
			t.Fatalf("stored identifiers %q (%v)", rows, err)
		}
	}
	// The same ids without continuity: for about half of them the variant changes.
	if changed == 0 {
		t.Fatal("no user changed variant on a flag without continuity: the test shows nothing")
	}
	// Only flags with continuity store identifiers.
	if n := env.count(t, `SELECT count(*) FROM meta.feature_flag_hash_key_overrides WHERE team_id = ? AND feature_flag_key <> 'kept'`, p.id); n != 0 {
		t.Fatalf("%d identifiers stored for other flags", n)
	}
}

// TestFlagsLongIDs: a /flags/ request's $anon_distinct_id and device ids are cut to
// 200 characters as distinct_id is: a flag answers for a longer one as for its first
// 200 characters, and experience continuity stores no longer id.
func TestFlagsLongIDs(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "kept", half, func(ch *flags.FlagChange) { ch.EnsureExperienceContinuity = ptr(true) })
	env.createFlag(t, p.id, "device", half, func(ch *flags.FlagChange) { ch.BucketingIdentifier = ptr("device_id") })
	ask := func(body map[string]any) map[string]flagDetails {
		t.Helper()
		body["token"] = p.token
		return env.flagsFor(t, "", body, nil).Flags
	}
	outcomes := map[bool]int{}
	for i := range 16 {
		long := fmt.Sprintf("%d-%s", i, strings.Repeat("x", 5000))
		cut := long[:200]
		for _, sc := range []struct {
			name      string
			key       string
			long, cut map[string]any
		}{
			{"$anon_distinct_id", "kept", map[string]any{"distinct_id": fmt.Sprint("user-", i), "$anon_distinct_id": long},
				map[string]any{"distinct_id": cut}},
			{"device_id", "device", map[string]any{"distinct_id": "u", "device_id": long}, map[string]any{"distinct_id": "u", "device_id": cut}},
			{"$device_id", "device", map[string]any{"distinct_id": "u", "$device_id": long}, map[string]any{"distinct_id": "u", "$device_id": cut}},
			{"person_properties.$device_id", "device", map[string]any{"distinct_id": "u", "person_properties": map[string]any{"$device_id": long}},
				map[string]any{"distinct_id": "u", "device_id": cut}},
		} {
			got, want := ask(sc.long)[sc.key], ask(sc.cut)[sc.key]
			if got.Enabled != want.Enabled || got.Reason.Code != want.Reason.Code {
				t.Fatalf("%s of %d characters: %v (%s), its first 200: %v (%s)", sc.name, len(long), got.Enabled, got.Reason.Code, want.Enabled, want.Reason.Code)
			}
			outcomes[want.Enabled]++
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("ids in a 50%% rollout: %v (are they hashed?)", outcomes)
	}
	if n := env.count(t, `SELECT count(*) FROM meta.feature_flag_hash_key_overrides WHERE team_id = ?`, p.id); n != 2*16 {
		t.Fatalf("%d continuity rows stored, want 2 for each of 16 identifies", n)
	}
	if n := env.count(t, `SELECT count(*) FROM meta.feature_flag_hash_key_overrides WHERE length(distinct_id) > 200 OR length(hash_key) > 200`); n != 0 {
		t.Fatalf("%d continuity rows hold an id longer than 200 characters", n)
	}
}

// TestFlagsEncodings: /flags/ bodies in every encoding SDKs send them, and the request
// posthog-js 1.449.2 was recorded sending.
func TestFlagsEncodings(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "email-b", personFlag("email", "exact", "b@x.com"))
	plain := []byte(fmt.Sprintf(`{"token":%q,"distinct_id":"u","person_properties":{"email":"b@x.com"}}`, p.token))
	b64 := base64.StdEncoding.EncodeToString(plain)
	const form = "application/x-www-form-urlencoded"
	for _, sc := range []struct {
		name    string
		path    string
		body    []byte
		headers map[string]string
	}{
		{"JSON (posthog-node, posthog-go)", "/flags/?v=2", plain, map[string]string{"Content-Type": "application/json"}},
		{"JSON without a Content-Type", "/flags/?v=2", plain, nil},
		{"JSON with a charset", "/flags/?v=2", plain, map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{"gzip with Content-Encoding", "/flags/?v=2", gzipped(t, plain), map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/json"}},
		{"gzip as text/plain, announced nowhere (posthog-js)", "/flags/?v=2", gzipped(t, plain), map[string]string{"Content-Type": "text/plain"}},
		{"?compression=gzip-js", "/flags/?v=2&compression=gzip-js", gzipped(t, plain), map[string]string{"Content-Type": "text/plain"}},
		{"?compression=gzip", "/flags/?v=2&compression=gzip", gzipped(t, plain), nil},
		{"form data= base64, ?compression=base64 (posthog-js)", "/flags/?v=2&compression=base64",
			[]byte(url.Values{"data": {b64}}.Encode()), map[string]string{"Content-Type": form}},
		{"form data= base64 without ?compression", "/flags/?v=2", []byte(url.Values{"data": {b64}}.Encode()), map[string]string{"Content-Type": form}},
		{"base64 that is not a form", "/flags/?v=2", []byte(b64), map[string]string{"Content-Type": "text/plain"}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			got := decodeFlags(t, env.send(t, "POST", sc.path, sc.body, sc.headers))
			if got.summary() != "email-b=true" {
				t.Fatalf("answered %q", got.summary())
			}
		})
	}

	t.Run("posthog-js sample", func(t *testing.T) {
		text, err := os.ReadFile("testdata/flags/js-flags-request.json")
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Request struct {
				Path    string            `json:"path"`
				Headers map[string]string `json:"headers"`
			} `json:"request"`
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(text, &s); err != nil {
			t.Fatal(err)
		}
		q := env.newProject(t, "")
		env.ingest(t, q.token, `{"event":"$groupidentify","distinct_id":"r4-js-user","properties":{"$group_type":"company","$group_key":"r4-acme","$group_set":{}}}`)
		// What the sample's body says: person properties (posthog-js's own, and those it
		// keeps from $set), a group and its properties, the anonymous id, the device id.
		env.createFlag(t, q.id, "web", personFlag("$lib", "exact", "web"))
		env.createFlag(t, q.id, "utm", personFlag("$initial_utm_source", "exact", "sdkprobe"))
		env.createFlag(t, q.id, "responded", personFlag("$survey_responded/0190f0f0-0000-7000-8000-00000000beef", "exact", "true"))
		env.createFlag(t, q.id, "big-company", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"employees","type":"group","group_type_index":0,"operator":"gt","value":"40"}]}]}`)
		env.createFlag(t, q.id, "r4-acme", `{"aggregation_group_type_index":0,"groups":[{"properties":[{"key":"$group_key","type":"group","group_type_index":0,"operator":"exact","value":"r4-acme"}]}]}`)
		env.createFlag(t, q.id, "is-user", personFlag("distinct_id", "exact", "r4-js-user"))
		env.createFlag(t, q.id, "no-utm-medium", personFlag("$initial_utm_medium", "is_not_set", "is_not_set"))
		body := bytes.ReplaceAll(s.Body, []byte(`"phc_test"`), []byte(strconv.Quote(q.token)))
		headers := map[string]string{"Content-Type": s.Request.Headers["content-type"], "User-Agent": s.Request.Headers["user-agent"],
			"Sec-Fetch-Mode": s.Request.Headers["sec-fetch-mode"]}
		got := decodeFlags(t, env.send(t, "POST", s.Request.Path+"?v=2", gzipped(t, body), headers))
		// $initial_utm_medium was sent as null: it is set (is_not_set is false).
		if want := "big-company=true is-user=true no-utm-medium=false r4-acme=true responded=true utm=true web=true"; got.summary() != want {
			t.Fatalf("answered %q, want %q", got.summary(), want)
		}
	})
}

// TestFlagsErrors: what a request that cannot be answered gets, as PostHog answers it:
// the token's refusals in its JSON shape, the others as text.
func TestFlagsErrors(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "beta", everyone)
	const (
		noToken        = `{"type":"authentication_error","code":"not_authenticated","detail":"No API token provided. Please include a valid API token in your request.","attr":null}`
		badToken       = `{"type":"authentication_error","code":"authentication_failed","detail":"The provided API key is invalid or has expired. Please check your API key and try again.","attr":null}`
		noDistinctID   = `The distinct_id field is missing from the request. Please include a valid identifier.`
		undecodable    = `Failed to decode request: ` // a reason follows
		ctJSON, ctText = "application/json", "text/plain; charset=utf-8"
		unsupportedCT  = `Failed to decode request: unsupported content type: application/xml`
	)
	tok := p.token
	for _, sc := range []struct {
		name        string
		body        string
		headers     map[string]string
		status      int
		want        string // the body exactly, or its start when it ends with ": "
		contentType string
	}{
		{"no token", `{"distinct_id":"u"}`, nil, 401, noToken, ctJSON},
		{"an empty token", `{"token":"","distinct_id":"u"}`, nil, 401, noToken, ctJSON},
		{"a token that is null", `{"token":null,"distinct_id":"u"}`, nil, 401, noToken, ctJSON},
		{"unknown token", `{"token":"phc_nobody","distinct_id":"u"}`, nil, 401, badToken, ctJSON},
		{"a personal API key", `{"token":"` + env.personalKey + `","distinct_id":"u"}`, nil, 401, badToken, ctJSON},
		{"the token is checked before the distinct id", `{"token":"phc_nobody"}`, nil, 401, badToken, ctJSON},
		{"no distinct_id", `{"token":"` + tok + `"}`, nil, 400, noDistinctID, ctText},
		{"distinct_id null", `{"token":"` + tok + `","distinct_id":null}`, nil, 400, noDistinctID, ctText},
		{"not JSON", `hello there`, nil, 400, undecodable, ctText},
		{"truncated JSON", `{"token":"` + tok + `","distinct_id":`, nil, 400, undecodable, ctText},
		{"a JSON array", `[{"token":"` + tok + `","distinct_id":"u"}]`, nil, 400, undecodable, ctText},
		{"a distinct_id that is an object", `{"token":"` + tok + `","distinct_id":{"id":1}}`, nil, 400, undecodable, ctText},
		{"a distinct_id that is a boolean, no token", `{"$distinct_id":true}`, nil, 400, undecodable, ctText},
		{"NaN in a body that is not JSON", `{"token":"` + tok + `","distinct_id":"u","x":NaN`, nil, 400, undecodable, ctText},
		{"a field of the wrong type", `{"token":"` + tok + `","distinct_id":"u","groups":[1]}`, nil, 400, undecodable, ctText},
		{"an empty body", ``, nil, 400, undecodable, ctText},
		{"corrupt gzip", "\x1f\x8b\x08garbage", map[string]string{"Content-Encoding": "gzip"}, 400, undecodable, ctText},
		{"corrupt base64 form", `data=%%%%`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 400, undecodable, ctText},
		{"another content type", `{"token":"` + tok + `","distinct_id":"u"}`, map[string]string{"Content-Type": "application/xml"}, 400, unsupportedCT, ctText},
	} {
		t.Run(sc.name, func(t *testing.T) {
			for _, path := range []string{"/flags/?v=2", "/decide/?v=3"} {
				a := env.send(t, "POST", path, []byte(sc.body), sc.headers)
				matches := a.body == sc.want || strings.HasSuffix(sc.want, ": ") && strings.HasPrefix(a.body, sc.want) && len(a.body) > len(sc.want)
				if a.status != sc.status || !matches {
					t.Fatalf("%s: %d %q, want %d %q", path, a.status, a.body, sc.status, sc.want)
				}
				if ct := a.header.Get("Content-Type"); ct != sc.contentType {
					t.Fatalf("%s: answered as %q, want %q", path, ct, sc.contentType)
				}
				if a.header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatalf("%s: an error without CORS headers: %v", path, a.header)
				}
			}
		})
	}
}

// TestFlagsMethods: POST evaluates; GET answers as for a caller without flags; HEAD
// answers 200; OPTIONS is a CORS preflight; other methods are refused. Every answer
// lets the calling origin read it.
func TestFlagsMethods(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	const allow = "GET, POST, OPTIONS, HEAD"
	for _, path := range []string{"/flags/", "/flags", "/decide/", "/decide"} {
		a := env.send(t, "OPTIONS", path, nil, map[string]string{
			"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
		h := a.header
		if a.status != 204 || a.body != "" || h.Get("Allow") != allow || h.Get("Access-Control-Allow-Methods") != allow ||
			h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || h.Get("Access-Control-Allow-Credentials") != "true" ||
			h.Get("Access-Control-Allow-Headers") != "content-type" {
			t.Fatalf("OPTIONS %s: %d %q %v", path, a.status, a.body, h)
		}
		if a := env.send(t, "HEAD", path, nil, nil); a.status != 200 || a.body != "" {
			t.Fatalf("HEAD %s: %d %q", path, a.status, a.body)
		}
		for _, method := range []string{"PUT", "DELETE", "PATCH"} {
			a := env.send(t, method, path, []byte(`{}`), nil)
			if a.status != 405 || a.header.Get("Allow") != allow {
				t.Fatalf("%s %s: %d, Allow %q", method, path, a.status, a.header.Get("Allow"))
			}
		}
	}
	p := env.newProject(t, "")
	a := env.send(t, "POST", "/flags/?v=2", fmt.Appendf(nil, `{"token":%q,"distinct_id":"u"}`, p.token), map[string]string{"Origin": "https://shop.example.org"})
	if a.status != 200 || a.header.Get("Access-Control-Allow-Origin") != "https://shop.example.org" || a.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("POST from an origin: %d %v", a.status, a.header)
	}
	if a := env.send(t, "GET", "/flags/?v=2", nil, nil); a.status != 200 || a.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET: %d %v", a.status, a.header)
	}
}

// A /flags/ body is limited as a capture body is: smaller than 2 MB.
func TestFlagsBodyLimit(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	env.createFlag(t, p.id, "beta", everyone)
	body := func(size int) []byte {
		b := fmt.Sprintf(`{"token":%q,"distinct_id":"u","person_properties":{"pad":""}}`, p.token)
		return []byte(strings.Replace(b, `"pad":""`, `"pad":"`+strings.Repeat("x", size-len(b))+`"`, 1))
	}
	if got := decodeFlags(t, env.send(t, "POST", "/flags/?v=2", body(2<<20-1), nil)).summary(); got != "beta=true" {
		t.Fatalf("2 MB - 1 byte: %q", got)
	}
	a := env.send(t, "POST", "/flags/?v=2", body(2<<20), nil)
	if a.status != 413 || a.body != `{"type":"client_error","code":"request_too_large","detail":"Request too large.","attr":null}` {
		t.Fatalf("2 MB: %d %s", a.status, a.body)
	}
}

// TestRemoteConfig: /array/<token>/config and config.js, posthog-js's remote config:
// hasFeatureFlags says whether the project has an active flag (posthog-js asks /flags/
// on load only then).
func TestRemoteConfig(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	config := func(hasFlags bool) string {
		return fmt.Sprintf(`{"token":%q,%s}`, p.token, configFields(hasFlags))
	}
	script := func(hasFlags bool) string {
		return "(function() {\n  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n  window._POSTHOG_REMOTE_CONFIG[\"" + p.token +
			"\"] = {\n    config: " + config(hasFlags) + ",\n    siteApps: []\n  };\n})();\n"
	}
	check := func(hasFlags bool) {
		t.Helper()
		a := env.send(t, "GET", "/array/"+p.token+"/config", nil, nil)
		if a.status != 200 || a.header.Get("Content-Type") != "application/json" || a.body != config(hasFlags) {
			t.Fatalf("config: %d %s %s, want %s", a.status, a.header.Get("Content-Type"), a.body, config(hasFlags))
		}
		a = env.send(t, "GET", "/array/"+p.token+"/config.js", nil, map[string]string{"Origin": "https://app.example.com"})
		if a.status != 200 || a.header.Get("Content-Type") != "application/javascript" || a.body != script(hasFlags) ||
			a.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
			t.Fatalf("config.js: %d %s %v\n%s\nwant\n%s", a.status, a.header.Get("Content-Type"), a.header, a.body, script(hasFlags))
		}
	}
	check(false)
	f := env.createFlag(t, p.id, "off", everyone, func(ch *flags.FlagChange) { ch.Active = ptr(false) })
	check(false) // an inactive flag is not one
	env.updateFlag(t, p.id, f.ID, flags.FlagChange{Active: ptr(true)})
	check(true)
	env.updateFlag(t, p.id, f.ID, flags.FlagChange{Deleted: ptr(true)})
	check(false)

	for _, path := range []string{"/array/phc_nobody/config", "/array/phc_nobody/config.js"} {
		if a := env.send(t, "GET", path, nil, nil); a.status != 404 {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
	}
	if a := env.send(t, "POST", "/array/"+p.token+"/config", nil, nil); a.status != 405 {
		t.Fatalf("POST config: %d %s", a.status, a.body)
	}
	if a := env.send(t, "GET", "/array/"+p.token+"/other", nil, nil); a.status != 404 {
		t.Fatalf("another /array/ path: %d %s", a.status, a.body)
	}
}

// TestFlagsSDKRoutes: the management API's routes that server SDKs call on the host
// they send events to, through the capture listener: flag definitions (with a personal
// API key, and ETags) and a remote configuration flag's payload.
func TestFlagsSDKRoutes(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	// Made through the management API over HTTP.
	create := func(body map[string]any) {
		t.Helper()
		if a := env.manage(t, "POST", fmt.Sprintf("/api/projects/%d/feature_flags/", p.id), body); a.status != 201 {
			t.Fatalf("creating a flag: %d %s", a.status, a.body)
		}
	}
	create(map[string]any{"key": "beta", "filters": map[string]any{"groups": []any{map[string]any{"properties": []any{}, "rollout_percentage": 30}}}})
	create(map[string]any{"key": "paused", "active": false})
	create(map[string]any{"key": "settings", "is_remote_configuration": true,
		"filters": map[string]any{"groups": []any{map[string]any{"properties": []any{}}}, "payloads": map[string]any{"true": map[string]any{"color": "blue"}}}})
	bearer := map[string]string{"Authorization": "Bearer " + env.personalKey}

	keys := func(a answer) string {
		t.Helper()
		var body struct {
			Flags []struct {
				Key    string `json:"key"`
				Active bool   `json:"active"`
			} `json:"flags"`
		}
		if err := json.Unmarshal([]byte(a.body), &body); err != nil {
			t.Fatalf("definitions %s: %v", a.body, err)
		}
		var list []string
		for _, f := range body.Flags {
			list = append(list, fmt.Sprintf("%s:%v", f.Key, f.Active))
		}
		slices.Sort(list)
		return strings.Join(list, " ")
	}
	definitions := "/flags/definitions?token=" + p.token + "&send_cohorts"
	a := env.send(t, "GET", definitions, nil, bearer)
	etag := a.header.Get("ETag")
	if a.status != 200 || !strings.HasPrefix(etag, `W/"`) || keys(a) != "beta:true paused:false settings:true" {
		t.Fatalf("definitions: %d, ETag %q: %s", a.status, etag, a.body)
	}
	// The older path answers the same.
	if b := env.send(t, "GET", "/api/feature_flag/local_evaluation?token="+p.token+"&send_cohorts", nil, bearer); b.status != 200 || b.body != a.body {
		t.Fatalf("local_evaluation: %d %s", b.status, b.body)
	}
	notModified := map[string]string{"Authorization": bearer["Authorization"], "If-None-Match": etag}
	if b := env.send(t, "GET", definitions, nil, notModified); b.status != 304 || b.body != "" {
		t.Fatalf("If-None-Match: %d %q", b.status, b.body)
	}
	// A change makes a new ETag.
	create(map[string]any{"key": "gamma"})
	if b := env.send(t, "GET", definitions, nil, notModified); b.status != 200 || b.header.Get("ETag") == etag || keys(b) != "beta:true gamma:true paused:false settings:true" {
		t.Fatalf("after a change: %d, ETag %q: %s", b.status, b.header.Get("ETag"), b.body)
	}
	if b := env.send(t, "GET", definitions, nil, nil); b.status != 401 ||
		b.body != `{"type":"authentication_error","code":"not_authenticated","detail":"Authentication credentials were not provided.","attr":null}` {
		t.Fatalf("no key: %d %s", b.status, b.body)
	}
	if b := env.send(t, "GET", definitions, nil, map[string]string{"Authorization": "Bearer phx_nobody"}); b.status != 401 {
		t.Fatalf("an unknown key: %d %s", b.status, b.body)
	}
	if b := env.send(t, "GET", "/flags/definitions?token=phc_nobody", nil, bearer); b.status != 401 {
		t.Fatalf("an unknown token: %d %s", b.status, b.body)
	}

	// A remote configuration flag's payload: its stored JSON text, as a JSON string.
	remote := "/api/projects/@current/feature_flags/settings/remote_config?token=" + p.token
	if b := env.send(t, "GET", remote, nil, bearer); b.status != 200 || b.body != `"{\"color\": \"blue\"}"` {
		t.Fatalf("remote config: %d %s", b.status, b.body)
	}
	if b := env.send(t, "GET", "/api/projects/@current/feature_flags/beta/remote_config?token="+p.token, nil, bearer); b.status != 404 {
		t.Fatalf("remote config of a flag that is not one: %d %s", b.status, b.body)
	}
	if b := env.send(t, "GET", remote, nil, nil); b.status != 401 {
		t.Fatalf("remote config without a key: %d %s", b.status, b.body)
	}
	// Other management routes are not served on the capture listener.
	if b := env.send(t, "GET", fmt.Sprintf("/api/projects/%d/feature_flags/", p.id), nil, bearer); b.status != 404 {
		t.Fatalf("the management API through the capture listener: %d %s", b.status, b.body)
	}
}

// TestFlagsDegrade: flags never fail the request: a flag that cannot be evaluated, or a
// read that fails, answers 200 with errorsWhileComputingFlags, and what can be
// answered is.
func TestFlagsDegrade(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	ctx := context.Background()
	db := env.warehouse.DB()
	exec := func(query string) {
		t.Helper()
		if _, err := db.Exec(query); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a flag whose cohort was deleted", func(t *testing.T) {
		p := env.newProject(t, "")
		cohort, err := env.flags.CreateCohort(ctx, p.id, 0, flags.CohortChange{Name: ptr("emails"),
			Filters: json.RawMessage(`{"properties":{"type":"AND","values":[{"type":"AND","values":[{"key":"email","type":"person","operator":"is_set","value":"is_set"}]}]}}`)})
		if err != nil {
			t.Fatal(err)
		}
		env.createFlag(t, p.id, "in-cohort", fmt.Sprintf(`{"groups":[{"properties":[{"key":"id","type":"cohort","value":%d}]}]}`, cohort.ID))
		env.createFlag(t, p.id, "fine", everyone)
		body := map[string]any{"token": p.token, "distinct_id": "u", "person_properties": map[string]any{"email": "a@x.com"}}
		if got := env.flagsFor(t, "", body, nil).summary(); got != "fine=true in-cohort=true" {
			t.Fatalf("before: %q", got)
		}
		if a := env.manage(t, "PATCH", fmt.Sprintf("/api/projects/%d/cohorts/%d/", p.id, cohort.ID), map[string]any{"deleted": true}); a.status != 200 {
			t.Fatalf("deleting the cohort: %d %s", a.status, a.body)
		}
		got := env.flagsFor(t, "", body, nil)
		if got.summary() != "fine=true in-cohort=false! errors" {
			t.Fatalf("after: %q", got.summary())
		}
		r := got.Flags["in-cohort"].Reason
		if r.Code != "dependency_not_found_cohort" || r.ConditionIndex != nil || r.Description != "Cohort dependency not found" {
			t.Fatalf("the failed flag's reason: %+v", r)
		}
	})

	t.Run("the stored identifiers cannot be read", func(t *testing.T) {
		p := env.newProject(t, "")
		env.createFlag(t, p.id, "kept", everyone, func(ch *flags.FlagChange) { ch.EnsureExperienceContinuity = ptr(true) })
		env.createFlag(t, p.id, "plain", everyone)
		body := map[string]any{"token": p.token, "distinct_id": "user", "$anon_distinct_id": "anon"}
		exec(`ALTER TABLE meta.feature_flag_hash_key_overrides RENAME TO feature_flag_hash_key_overrides_away`)
		got := env.flagsFor(t, "", body, nil)
		exec(`ALTER TABLE meta.feature_flag_hash_key_overrides_away RENAME TO feature_flag_hash_key_overrides`)
		if got.summary() != "kept=false! plain=true errors" {
			t.Fatalf("answered %q", got.summary())
		}
		r := got.Flags["kept"].Reason
		if r.Code != "hash_key_override_error" || r.ConditionIndex != nil || r.Description != "Failed to fetch hash key override for experience continuity" {
			t.Fatalf("the failed flag's reason: %+v", r)
		}
		if got := env.flagsFor(t, "", body, nil).summary(); got != "kept=true plain=true" {
			t.Fatalf("once the table is back: %q", got)
		}
	})

	t.Run("the definitions cannot be read", func(t *testing.T) {
		p := env.newProject(t, "")
		env.createFlag(t, p.id, "beta", everyone) // and the definitions are not read until asked for
		exec(`ALTER TABLE meta.feature_flags RENAME TO feature_flags_away`)
		since := time.Now()
		a := env.send(t, "POST", "/flags/", fmt.Appendf(nil, `{"token":%q,"distinct_id":"u"}`, p.token), nil)
		config := env.send(t, "GET", "/array/"+p.token+"/config", nil, nil)
		exec(`ALTER TABLE meta.feature_flags_away RENAME TO feature_flags`)
		// Not knowing whether there are flags, the config says there are: posthog-js then
		// asks, and its answer says what is known.
		want := canonical(t, `{"flags":{},"errorsWhileComputingFlags":true,"requestId":"UUID","evaluatedAt":"MS",`+configFields(true)+`}`)
		if a.status != 200 || normalized(t, a.body, since) != want {
			t.Fatalf("answered %d %s, want %s", a.status, a.body, want)
		}
		if config.status != 200 || !strings.Contains(config.body, `"hasFeatureFlags":true`) {
			t.Fatalf("config: %d %s", config.status, config.body)
		}
		if got := env.flagsFor(t, "", map[string]any{"token": p.token, "distinct_id": "u"}, nil).summary(); got != "beta=true" {
			t.Fatalf("once the table is back: %q", got)
		}
	})
}

// TestFlagCalledEvents: the events SDKs send about flags ($feature_flag_called, and
// $feature/<key> on other events) are ordinary events: a trend broken down by
// $feature_flag_response counts each value's calls.
func TestFlagCalledEvents(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	p := env.newProject(t, "")
	called := func(user string, response any) string {
		r, _ := json.Marshal(response)
		return fmt.Sprintf(`{"event":"$feature_flag_called","distinct_id":%q,"properties":{"$feature_flag":"exp","$feature_flag_response":%s,`+
			`"$feature_flag_id":1,"$feature_flag_version":2,"$feature_flag_reason":"Matched condition set 1","$feature/exp":%s}}`, user, r, r)
	}
	env.ingest(t, p.token,
		called("u1", "test"), called("u2", "test"), called("u3", "test"), called("u4", "control"), called("u5", "control"),
		called("u6", true), called("u7", false),
		`{"event":"$pageview","distinct_id":"u1","properties":{"$feature/exp":"test","$active_feature_flags":["exp"]}}`,
	)
	trend := func(event, breakdown string) map[string]float64 {
		t.Helper()
		tq := warehouse.TrendsQuery{Series: []warehouse.TrendsSeries{{Kind: "EventsNode", Event: &event}},
			BreakdownFilter: &warehouse.BreakdownFilter{Breakdown: breakdown, BreakdownType: "event"}}
		tq.DateRange.DateFrom = "-1d"
		result, err := env.warehouse.Queries().Trends(context.Background(), warehouse.Scope{Team: p.id}, tq, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]float64{}
		for _, line := range result.Results {
			counts[fmt.Sprint(line.BreakdownValue)] = line.Count
		}
		return counts
	}
	if got := fmt.Sprint(trend("$feature_flag_called", "$feature_flag_response")); got != "map[control:2 false:1 test:3 true:1]" {
		t.Fatalf("calls by response: %s", got)
	}
	if got := fmt.Sprint(trend("$pageview", "$feature/exp")); got != "map[test:1]" {
		t.Fatalf("pageviews by $feature/exp: %s", got)
	}
}
