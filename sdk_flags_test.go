package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/posthog/posthog-go"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/warehouse"
)

// TestFlagSDKs runs the real posthog-node, posthog-js (in jsdom, both bundles) and
// posthog-go against a live `hedge serve` with flags of every kind, created through
// the management API: remote evaluation (/flags/), local evaluation (the definitions
// from /flags/definitions), and the browser's remote config. Every answer an SDK gives
// must equal hedge's own /flags/?v=2 answer for the same distinct id and properties;
// every request an SDK makes must succeed; and the $feature_flag_called events and
// $feature/<key> properties they send must be stored.
func TestFlagSDKs(t *testing.T) {
	requireSDKs(t)
	hedge, boot, dataDir := startServing(t)
	env := &flagsEnv{hedge: hedge, boot: boot}
	env.setup(t)

	subjects := newFlagSubjects()
	subjects.RemoteConfigFlag, subjects.RemoteConfigFlagID = "remote-settings", env.ids["remote-settings"]
	subjectsFile := filepath.Join(t.TempDir(), "subjects.json")
	if text, err := json.Marshal(subjects); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(subjectsFile, text, 0o600); err != nil {
		t.Fatal(err)
	}

	// The Node runs and posthog-go at once: each waits on hedge more than on a core.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := [][]string{{"node", "remote"}, {"node", "local"}, {"js", "no-external"}, {"js", "default"}}
	manifests := make([]flagsManifest, len(runs))
	runErrs := make([]error, len(runs))
	var wg sync.WaitGroup
	took := make([]time.Duration, len(runs)+1)
	for i, args := range runs {
		wg.Go(func() {
			start := time.Now()
			manifests[i], runErrs[i] = runFlagsScript(ctx, env, subjectsFile, args)
			took[i] = time.Since(start)
		})
	}
	start := time.Now()
	goAnswers, goRequests, goProblems := runPostHogGo(t, env, subjects)
	took[len(runs)] = time.Since(start)
	wg.Wait()
	for i, args := range runs {
		t.Logf("node flags.mjs %s took %v", strings.Join(args, " "), took[i].Round(time.Millisecond))
	}
	t.Logf("posthog-go took %v", took[len(runs)].Round(time.Millisecond))
	for i, err := range runErrs {
		if err != nil {
			t.Fatalf("node flags.mjs %s: %v", strings.Join(runs[i], " "), err)
		}
	}

	// Every request of every SDK succeeded.
	var all flagsManifest
	for _, m := range manifests {
		all.Requests = append(all.Requests, m.Requests...)
		all.Answers = append(all.Answers, m.Answers...)
		all.Browsers = append(all.Browsers, m.Browsers...)
		all.Captures = append(all.Captures, m.Captures...)
		for _, e := range m.Errors {
			t.Errorf("node: %s", e)
		}
	}
	all.Requests = append(all.Requests, goRequests...)
	all.Answers = append(all.Answers, goAnswers...)
	for _, p := range goProblems {
		t.Errorf("posthog-go: %s", p)
	}
	requestsBySDK := map[string]map[string]int{} // sdk -> "METHOD path" -> count
	notModified := map[string]int{}              // sdk -> definitions answered 304
	failed := 0
	for _, r := range all.Requests {
		if r.Status == http.StatusNotModified && requestPath(r.URL) == "/flags/definitions" {
			notModified[r.SDK]++
		}
		if r.Status == 0 || r.Status >= 400 {
			if failed++; failed <= 20 {
				t.Errorf("%s: %s %s answered %d %s", r.SDK, r.Method, r.URL, r.Status, r.Error)
			}
		}
		if requestsBySDK[r.SDK] == nil {
			requestsBySDK[r.SDK] = map[string]int{}
		}
		requestsBySDK[r.SDK][r.Method+" "+requestPath(r.URL)]++
	}
	if failed > 0 {
		t.Errorf("%d of %d requests failed", failed, len(all.Requests))
	}
	for _, sdk := range []string{"node-remote", "node-local", "js-no-external", "js-default", "go-remote", "go-local"} {
		t.Logf("%s requests: %v", sdk, requestsBySDK[sdk])
	}
	// Local evaluation downloaded the definitions through the capture listener, and
	// each bundle loaded the remote config its own way.
	for sdk, want := range map[string]string{
		"node-local":     "GET /flags/definitions",
		"go-local":       "GET /flags/definitions",
		"js-no-external": "GET /array/" + boot.ProjectAPIKey + "/config",
		"js-default":     "GET /array/" + boot.ProjectAPIKey + "/config.js",
	} {
		if requestsBySDK[sdk][want] == 0 {
			t.Errorf("%s did not request %s: %v", sdk, want, requestsBySDK[sdk])
		}
	}
	for _, sdk := range []string{"node-local", "go-local"} {
		if notModified[sdk] == 0 {
			t.Errorf("%s reloaded the definitions with their ETag, and none was answered 304", sdk)
		}
	}
	for _, sdk := range []string{"js-no-external", "js-default"} {
		if n := requestsBySDK[sdk]["POST /flags/"]; n < 2*subjects.browserCount(strings.TrimPrefix(sdk, "js-")) {
			t.Errorf("%s asked /flags/ %d times: want a load and a reload after identify per browser", sdk, n)
		}
	}

	// hedge's own answer for each subject the SDKs evaluated.
	expected := env.hedgeAnswers(t, subjects.all())
	// flags.mjs asked for the browsers' as it read theirs.
	for _, b := range all.Browsers {
		expected[b.ID] = parseHedgeFlags(t, b.ID, b.Hedge)
	}
	checkFlagAnswers(t, subjects, all, expected)

	if code := hedge.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("hedge exited %d:\n%s", code, hedge.log())
	}
	checkFlagEvents(t, dataDir, boot, subjects, all, expected)
}

// flagsEnv is the running hedge and the flags created in it.
type flagsEnv struct {
	hedge *process
	boot  admin.Bootstrap
	ids   map[string]int64 // flag key -> id
}

// manage calls the management API with the bootstrap personal key and decodes a JSON
// object answer; any status but want fails the test.
func (env *flagsEnv) manage(t *testing.T, method, path string, want int, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, env.hedge.adminURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.boot.PersonalAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, text)
	}
	var m map[string]any
	if err := json.Unmarshal(text, &m); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, text)
	}
	return m
}

// The flags: one of every kind the SDKs handle differently. payloadFlags are the ones
// with payloads.
var (
	flagKeys = []string{"half", "multi", "email-acme", "plan-paid", "age-over-30", "beta-set", "enterprise-cohort",
		"company", "blue", "inactive", "needs-half", "continuity", "remote-settings",
		"email-regex", "plan-is-not", "version-semver", "signup-before", "variant-override"}
	payloadFlags = []string{"multi", "blue", "plan-paid", "remote-settings"}
	// remoteSettings is the payload of the remote configuration flag, which the server
	// SDKs also read with their personal key (getRemoteConfigPayload).
	remoteSettings = map[string]any{"theme": "dark", "limit": 10.0}
)

// setup creates the company group type (by a $groupidentify, which also stores the
// group acme with industry "tech"), a cohort and the flags, and waits until the
// definitions the SDKs download hold all of them.
func (env *flagsEnv) setup(t *testing.T) {
	t.Helper()
	batch := fmt.Sprintf(`{"api_key":%q,"batch":[{"event":"$groupidentify","distinct_id":"setup","properties":`+
		`{"$group_type":"company","$group_key":"acme","$group_set":{"industry":"tech","employees":120}}}]}`, env.boot.ProjectAPIKey)
	resp, err := http.Post(env.hedge.captureURL+"/batch/", "application/json", strings.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("$groupidentify: %d", resp.StatusCode)
	}

	project := fmt.Sprintf("/api/projects/%d", env.boot.ProjectID)
	cohort := env.manage(t, "POST", project+"/cohorts/", 201, `{"name":"Enterprise","filters":{"properties":{"type":"OR","values":[`+
		`{"type":"AND","values":[{"key":"plan","type":"person","operator":"exact","value":["enterprise"]}]},`+
		`{"type":"AND","values":[{"key":"email","type":"person","operator":"icontains","value":"@bigco.com"}]}]}}}`)["id"]
	env.ids = map[string]int64{}
	create := func(key, body string) {
		env.ids[key] = int64(env.manage(t, "POST", project+"/feature_flags/", 201, body)["id"].(float64))
	}
	person := func(key, props string, rollout any) string {
		return fmt.Sprintf(`{"key":%q,"filters":{"groups":[{"properties":[%s],"rollout_percentage":%v}]}}`, key, props, rollout)
	}
	create("half", person("half", "", 50))
	create("multi", `{"key":"multi","filters":{"groups":[{"properties":[],"rollout_percentage":100}],"multivariate":{"variants":[`+
		`{"key":"control","rollout_percentage":34},{"key":"test","rollout_percentage":33},{"key":"wide","rollout_percentage":33}]},`+
		`"payloads":{"control":{"layout":"classic"},"test":"\"plain text\"","wide":[1,2,3]}}}`)
	create("email-acme", person("email-acme", `{"key":"email","type":"person","operator":"icontains","value":"@ACME.com"}`, 100))
	create("plan-paid", `{"key":"plan-paid","filters":{"groups":[{"properties":[{"key":"plan","type":"person","operator":"exact",`+
		`"value":["pro","enterprise"]}],"rollout_percentage":80}],"payloads":{"true":{"seats":5}}}}`)
	create("age-over-30", person("age-over-30", `{"key":"age","type":"person","operator":"gt","value":"30"}`, "null"))
	create("beta-set", person("beta-set", `{"key":"beta","type":"person","operator":"is_set","value":"is_set"}`, 100))
	create("enterprise-cohort", person("enterprise-cohort", fmt.Sprintf(`{"key":"id","type":"cohort","value":%v}`, cohort), 100))
	create("company", `{"key":"company","filters":{"aggregation_group_type_index":0,"groups":[{"properties":[`+
		`{"key":"industry","type":"group","group_type_index":0,"operator":"exact","value":"tech"}],"rollout_percentage":60}]}}`)
	create("blue", `{"key":"blue","filters":{"groups":[{"properties":[],"rollout_percentage":100}],"payloads":{"true":{"color":"blue"}}}}`)
	create("inactive", `{"key":"inactive","active":false,"filters":{"groups":[{"properties":[],"rollout_percentage":100}]}}`)
	create("needs-half", person("needs-half", fmt.Sprintf(`{"key":"%d","type":"flag","operator":"flag_evaluates_to","value":true}`, env.ids["half"]), 100))
	create("continuity", `{"key":"continuity","ensure_experience_continuity":true,"filters":{"groups":[{"properties":[],"rollout_percentage":50}]}}`)
	create("remote-settings", `{"key":"remote-settings","is_remote_configuration":true,"filters":{"groups":[{"properties":[],"rollout_percentage":100}],`+
		`"payloads":{"true":{"theme":"dark","limit":10}}}}`)

	// More of the matcher, where the SDKs decide locally when they can: a regex, is_not
	// with a list, semver, a date, and a condition that names its variant.
	create("email-regex", person("email-regex", `{"key":"email","type":"person","operator":"regex","value":"^user[0-9]*[13579]@(acme|example)\\.com$"}`, 100))
	create("plan-is-not", person("plan-is-not", `{"key":"plan","type":"person","operator":"is_not","value":["free","team"]}`, 100))
	create("version-semver", person("version-semver", `{"key":"app_version","type":"person","operator":"semver_gte","value":"1.2.0"}`, 100))
	create("signup-before", person("signup-before", `{"key":"signup","type":"person","operator":"is_date_before","value":"2024-01-01"}`, 100))
	create("variant-override", `{"key":"variant-override","filters":{"groups":[`+
		`{"properties":[{"key":"plan","type":"person","operator":"exact","value":["pro"]}],"rollout_percentage":100,"variant":"b"},`+
		`{"properties":[],"rollout_percentage":70}],"multivariate":{"variants":[{"key":"a","rollout_percentage":50},{"key":"b","rollout_percentage":50}]}}}`)

	// The group type is the Writer's once the $groupidentify is committed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := request(t, "GET", env.hedge.captureURL+"/flags/definitions?send_cohorts&token="+env.boot.ProjectAPIKey, env.boot.PersonalAPIKey, "")
		var defs struct {
			Flags            []struct{ Key string }
			GroupTypeMapping map[string]string `json:"group_type_mapping"`
		}
		json.Unmarshal([]byte(body), &defs)
		if status == 200 && len(defs.Flags) == len(flagKeys) && defs.GroupTypeMapping["0"] == "company" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the definitions do not have every flag and the company group type: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flagSubject is one evaluation: a distinct id and what the SDK is told of it.
type flagSubject struct {
	DistinctID       string                    `json:"distinct_id"`
	PersonProperties map[string]any            `json:"person_properties,omitempty"`
	Groups           map[string]string         `json:"groups,omitempty"`
	GroupProperties  map[string]map[string]any `json:"group_properties,omitempty"`
	Bundle           string                    `json:"bundle,omitempty"`
	ID               string                    `json:"id,omitempty"` // a browser's identity
}

// flagSubjects is what each SDK evaluates, written for flags.mjs.
type flagSubjects struct {
	Flags              []string      `json:"flags"`
	PayloadFlags       []string      `json:"payload_flags"`
	RemoteConfigFlag   string        `json:"remote_config_flag"`
	RemoteConfigFlagID int64         `json:"remote_config_flag_id"`
	NodeRemote         []flagSubject `json:"node_remote"`
	NodeLocal          []flagSubject `json:"node_local"`
	GoRemote           []flagSubject `json:"-"`
	GoLocal            []flagSubject `json:"-"`
	Browsers           []flagSubject `json:"browsers"`
}

// subjectsPerSDK is how many distinct ids each server SDK evaluates in each mode.
const subjectsPerSDK = 200

// newFlagSubjects spreads the properties the flags look at over the subjects: each
// property present or missing (a missing one makes SDKs ask the server), matching or
// not; the company group sent with its properties, without them (hedge has the stored
// ones) or not at all. Values avoid the documented SDK-local divergences: exact
// values in lowercase, as the flags have them (posthog-go compares case-sensitively),
// and a numeric age as a JSON number (node compares strings as strings).
func newFlagSubjects() *flagSubjects {
	s := &flagSubjects{Flags: flagKeys, PayloadFlags: payloadFlags}
	subject := func(id string, i int) flagSubject {
		p := map[string]any{}
		switch i % 4 {
		case 0:
			p["email"] = fmt.Sprintf("user%d@acme.com", i)
		case 1:
			p["email"] = fmt.Sprintf("user%d@example.com", i)
		case 2:
			p["email"] = fmt.Sprintf("user%d@BigCo.com", i)
		}
		if plan := []string{"free", "pro", "enterprise", "", "team"}[i%5]; plan != "" {
			p["plan"] = plan
		}
		if i%3 != 0 {
			p["age"] = 18 + (i*7)%40
		}
		if i%7 == 0 {
			p["beta"] = true
		}
		if v := []string{"1.10.0", "1.2.0", "v1.1.9", "2.0.0-beta", "", "1.2"}[i%6]; v != "" {
			p["app_version"] = v
		}
		if d := []string{"2023-06-01", "2024-06-01T10:00:00Z", "2023-11-15T08:00:00Z", ""}[i%4]; d != "" {
			p["signup"] = d
		}
		sub := flagSubject{DistinctID: id, PersonProperties: p}
		switch i % 6 {
		case 0:
			sub.Groups = map[string]string{"company": "acme"} // stored: industry tech
		case 1:
			sub.Groups = map[string]string{"company": fmt.Sprintf("tech-%d", i)}
			sub.GroupProperties = map[string]map[string]any{"company": {"industry": "tech"}}
		case 2:
			sub.Groups = map[string]string{"company": fmt.Sprintf("shop-%d", i)}
			sub.GroupProperties = map[string]map[string]any{"company": {"industry": "retail"}}
		case 3:
			sub.Groups = map[string]string{"company": "acme"}
			sub.GroupProperties = map[string]map[string]any{"company": {"industry": "retail"}} // wins over the stored
		}
		return sub
	}
	for i := range subjectsPerSDK {
		s.NodeRemote = append(s.NodeRemote, subject(fmt.Sprintf("node-remote-%d", i), i))
		s.NodeLocal = append(s.NodeLocal, subject(fmt.Sprintf("node-local-%d", i), i))
		s.GoRemote = append(s.GoRemote, subject(fmt.Sprintf("go-remote-%d", i), i))
		s.GoLocal = append(s.GoLocal, subject(fmt.Sprintf("go-local-%d", i), i))
	}
	// Browsers identify with person properties only (posthog-js sends those it set).
	for i, bundle := range []string{"no-external", "no-external", "no-external", "default", "default"} {
		p := subject("", i).PersonProperties
		s.Browsers = append(s.Browsers, flagSubject{Bundle: bundle, ID: fmt.Sprintf("js-%s-user-%d", bundle, i), PersonProperties: p})
	}
	return s
}

func (s *flagSubjects) all() []flagSubject {
	return slices.Concat(s.NodeRemote, s.NodeLocal, s.GoRemote, s.GoLocal)
}

func (s *flagSubjects) browserCount(bundle string) int {
	n := 0
	for _, b := range s.Browsers {
		if b.Bundle == bundle {
			n++
		}
	}
	return n
}

// flagsManifest is what flags.mjs prints (and what the posthog-go run adds to it).
type flagsManifest struct {
	Requests []sdkRequest `json:"requests"`
	Answers  []sdkAnswer  `json:"answers"`
	Browsers []struct {
		Bundle string          `json:"bundle"`
		Phase  string          `json:"phase"`
		ID     string          `json:"id"`
		Anon   string          `json:"anon"`
		Hedge  json.RawMessage `json:"hedge"` // hedge's /flags/?v=2 answer for what it sent
	} `json:"browsers"`
	Captures []struct {
		UUID string `json:"uuid"`
		ID   string `json:"id"`
	} `json:"captures"`
	Errors []string `json:"errors"`
}

type sdkRequest struct {
	SDK    string `json:"sdk"`
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
	Error  string `json:"error"`
}

// sdkAnswer is one answer of an SDK: a flag's value (true, false, a variant, or nil
// for none) or payload, or all of them (Flags, Payloads).
type sdkAnswer struct {
	SDK      string         `json:"sdk"`
	Call     string         `json:"call"`
	ID       string         `json:"id"`
	Key      string         `json:"key"`
	Value    any            `json:"value"`
	Payload  any            `json:"payload"`
	Flags    map[string]any `json:"flags"`
	Payloads map[string]any `json:"payloads"`
}

func runFlagsScript(ctx context.Context, env *flagsEnv, subjectsFile string, args []string) (flagsManifest, error) {
	var m flagsManifest
	err := runNode(ctx, []string{"HEDGE_CAPTURE_URL=" + env.hedge.captureURL, "HEDGE_PROJECT_KEY=" + env.boot.ProjectAPIKey,
		"HEDGE_PERSONAL_KEY=" + env.boot.PersonalAPIKey, "HEDGE_FLAG_SUBJECTS=" + subjectsFile}, &m, append([]string{"flags.mjs"}, args...)...)
	return m, err
}

// requestPath is a URL's path, the query left out.
func requestPath(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		url = url[i+3:]
		if j := strings.IndexByte(url, '/'); j >= 0 {
			url = url[j:]
		}
	}
	path, _, _ := strings.Cut(url, "?")
	return path
}

// goRecorder is posthog-go's Transport, Logger and Callback: it records every request's
// status, and every error the client logs or reports.
type goRecorder struct {
	sdk      string
	mu       sync.Mutex
	requests []sdkRequest
	problems []string
}

func (r *goRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	rec := sdkRequest{SDK: r.sdk, Method: req.Method, URL: req.URL.String()}
	if err != nil {
		rec.Error = err.Error()
	} else {
		rec.Status = resp.StatusCode
	}
	r.mu.Lock()
	r.requests = append(r.requests, rec)
	r.mu.Unlock()
	return resp, err
}

// count is how many requests to path were answered.
func (r *goRecorder) count(method, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.requests {
		if q.Method == method && requestPath(q.URL) == path {
			n++
		}
	}
	return n
}

func (r *goRecorder) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, r.sdk+": "+fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *goRecorder) Debugf(string, ...any) {}
func (r *goRecorder) Logf(string, ...any)   {}
func (r *goRecorder) Warnf(format string, args ...any) {
	// A flag local evaluation cannot decide is what the remote fallback is for.
	if !strings.HasPrefix(format, "Unable to compute flag locally") {
		r.problem("warning: "+format, args...)
	}
}
func (r *goRecorder) Errorf(format string, args ...any)       { r.problem("error: "+format, args...) }
func (r *goRecorder) Success(posthog.APIMessage)              {}
func (r *goRecorder) Failure(_ posthog.APIMessage, err error) { r.problem("failed to send: %v", err) }
func (r *goRecorder) client(t *testing.T, env *flagsEnv, personalKey string) posthog.Client {
	c, err := posthog.NewWithConfig(env.boot.ProjectAPIKey, posthog.Config{
		Endpoint:       env.hedge.captureURL,
		PersonalApiKey: personalKey,
		// 3 s by default: longer, as make test shares the cores with other tests, and
		// a request that times out fails the test.
		FeatureFlagRequestTimeout: 10 * time.Second,
		Interval:                  100 * time.Millisecond,
		Transport:                 r,
		Logger:                    r,
		Callback:                  r,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runPostHogGo evaluates the Go subjects with posthog-go: remotely, and locally with
// the personal key (alone, and falling back to /flags/).
func runPostHogGo(t *testing.T, env *flagsEnv, subjects *flagSubjects) ([]sdkAnswer, []sdkRequest, []string) {
	var mu sync.Mutex
	var answers []sdkAnswer
	add := func(a sdkAnswer) {
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	payload := func(text string) any {
		if text == "" {
			return nil
		}
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return "not JSON: " + text
		}
		return v
	}
	each := func(list []flagSubject, fn func(int, flagSubject)) {
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					fn(i, list[i])
				}
			})
		}
		for i := range list {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	props := func(s flagSubject) (posthog.Groups, posthog.Properties, map[string]posthog.Properties) {
		var groups posthog.Groups
		if s.Groups != nil {
			groups = posthog.NewGroups()
			for k, v := range s.Groups {
				groups.Set(k, v)
			}
		}
		var gp map[string]posthog.Properties
		for k, v := range s.GroupProperties {
			if gp == nil {
				gp = map[string]posthog.Properties{}
			}
			gp[k] = posthog.Properties(v)
		}
		return groups, posthog.Properties(s.PersonProperties), gp
	}
	single := func(key string, s flagSubject) posthog.FeatureFlagPayload {
		groups, person, gp := props(s)
		return posthog.FeatureFlagPayload{Key: key, DistinctId: s.DistinctID, Groups: groups, PersonProperties: person, GroupProperties: gp}
	}
	every := func(s flagSubject) posthog.FeatureFlagPayloadNoKey {
		groups, person, gp := props(s)
		return posthog.FeatureFlagPayloadNoKey{DistinctId: s.DistinctID, Groups: groups, PersonProperties: person, GroupProperties: gp}
	}
	// value records the answer of call, a read of one flag's value, as rec's SDK.
	value := func(rec *goRecorder, call, key string, s flagSubject, v any, err error) {
		if err != nil {
			rec.problem("%s(%s, %s): %v", call, key, s.DistinctID, err)
		}
		add(sdkAnswer{SDK: rec.sdk, Call: call, ID: s.DistinctID, Key: key, Value: v})
	}
	// payloadsAndAll reads the subject's payloads one by one, then all its flags at once,
	// as rec's SDK.
	payloadsAndAll := func(client posthog.Client, rec *goRecorder, s flagSubject) {
		for _, key := range payloadFlags {
			p, err := client.GetFeatureFlagPayload(single(key, s))
			if err != nil {
				rec.problem("GetFeatureFlagPayload(%s, %s): %v", key, s.DistinctID, err)
			}
			add(sdkAnswer{SDK: rec.sdk, Call: "GetFeatureFlagPayload", ID: s.DistinctID, Key: key, Payload: payload(p)})
		}
		all, err := client.GetAllFlags(every(s))
		if err != nil {
			rec.problem("GetAllFlags(%s): %v", s.DistinctID, err)
		}
		add(sdkAnswer{SDK: rec.sdk, Call: "GetAllFlags", ID: s.DistinctID, Flags: all})
	}

	remoteRec := &goRecorder{sdk: "go-remote"}
	remote := remoteRec.client(t, env, "")
	each(subjects.GoRemote, func(i int, s flagSubject) {
		// Every flag of every subject comes in GetAllFlags; the single reads, one request
		// each, take half the flags of each subject (IsFeatureEnabled a quarter).
		for j, key := range flagKeys {
			if (i+j)%2 == 0 {
				v, err := remote.GetFeatureFlag(single(key, s))
				value(remoteRec, "GetFeatureFlag", key, s, v, err)
			}
			if (i+j)%4 == 1 {
				v, err := remote.IsFeatureEnabled(single(key, s))
				value(remoteRec, "IsFeatureEnabled", key, s, v, err)
			}
		}
		payloadsAndAll(remote, remoteRec, s)
	})
	if err := remote.Close(); err != nil {
		remoteRec.problem("close: %v", err)
	}

	localRec := &goRecorder{sdk: "go-local"}
	local := localRec.client(t, env, env.boot.PersonalAPIKey)
	noEvents := false
	each(subjects.GoLocal, func(_ int, s flagSubject) {
		only := every(s)
		only.OnlyEvaluateLocally = true
		all, err := local.GetAllFlags(only)
		if err != nil {
			localRec.problem("GetAllFlags(%s, only locally): %v", s.DistinctID, err)
		}
		add(sdkAnswer{SDK: "go-local-only", Call: "GetAllFlags", ID: s.DistinctID, Flags: all})
		for _, key := range flagKeys {
			c := single(key, s)
			c.OnlyEvaluateLocally, c.SendFeatureFlagEvents = true, &noEvents
			// An error is a flag local evaluation cannot decide.
			if v, err := local.GetFeatureFlag(c); err == nil {
				add(sdkAnswer{SDK: "go-local-only", Call: "GetFeatureFlag", ID: s.DistinctID, Key: key, Value: v})
			}
			v, err := local.GetFeatureFlag(single(key, s))
			value(localRec, "GetFeatureFlag", key, s, v, err)
		}
		payloadsAndAll(local, localRec, s)
	})
	// A reload sends the definitions' ETag back: nothing changed, so hedge answers 304.
	if err := local.ReloadFeatureFlags(); err != nil {
		localRec.problem("ReloadFeatureFlags: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); localRec.count("GET", "/flags/definitions") < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for _, key := range []string{"remote-settings", fmt.Sprint(env.ids["remote-settings"])} {
		p, err := local.GetRemoteConfigPayload(key)
		if err != nil {
			localRec.problem("GetRemoteConfigPayload(%s): %v", key, err)
		}
		add(sdkAnswer{SDK: "go-local", Call: "GetRemoteConfigPayload", Key: key, Payload: payload(p)})
	}
	if err := local.Close(); err != nil {
		localRec.problem("close: %v", err)
	}
	return answers, slices.Concat(remoteRec.requests, localRec.requests), slices.Concat(remoteRec.problems, localRec.problems)
}

// hedgeFlag is a flag in hedge's /flags/?v=2 answer: its value (a variant, true or
// false) and its payload, decoded (nil for none).
type hedgeFlag struct {
	value   any
	payload any
}

// hedgeAnswers asks hedge's /flags/?v=2 for each subject, as the server SDKs do.
func (env *flagsEnv) hedgeAnswers(t *testing.T, subjects []flagSubject) map[string]map[string]hedgeFlag {
	t.Helper()
	answers := map[string]map[string]hedgeFlag{}
	for _, s := range subjects {
		id := s.DistinctID
		body := map[string]any{"token": env.boot.ProjectAPIKey, "distinct_id": id, "geoip_disable": true}
		if s.PersonProperties != nil {
			body["person_properties"] = s.PersonProperties
		}
		if s.Groups != nil {
			body["groups"] = s.Groups
		}
		if s.GroupProperties != nil {
			body["group_properties"] = s.GroupProperties
		}
		text, _ := json.Marshal(body)
		resp, err := http.Post(env.hedge.captureURL+"/flags/?v=2", "application/json", bytes.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/flags/ for %s: %d %s", id, resp.StatusCode, out)
		}
		answers[id] = parseHedgeFlags(t, id, out)
	}
	return answers
}

// parseHedgeFlags reads hedge's /flags/?v=2 answer for id.
func parseHedgeFlags(t *testing.T, id string, text []byte) map[string]hedgeFlag {
	t.Helper()
	var answer struct {
		Flags map[string]struct {
			Enabled  bool
			Variant  *string
			Metadata struct{ Payload *string }
		}
		Errors bool `json:"errorsWhileComputingFlags"`
	}
	if err := json.Unmarshal(text, &answer); err != nil || answer.Errors || answer.Flags == nil {
		t.Fatalf("/flags/ for %s: %v %s", id, err, text)
	}
	flags := map[string]hedgeFlag{}
	for key, f := range answer.Flags {
		h := hedgeFlag{value: f.Enabled}
		if f.Enabled && f.Variant != nil {
			h.value = *f.Variant
		}
		if f.Metadata.Payload != nil {
			if err := json.Unmarshal([]byte(*f.Metadata.Payload), &h.payload); err != nil {
				t.Fatalf("/flags/ for %s: payload of %s is not JSON: %s", id, key, *f.Metadata.Payload)
			}
		}
		flags[key] = h
	}
	// Inactive flags are not evaluated (SDKs answer false or nothing); every other
	// one is.
	for _, key := range flagKeys {
		if _, ok := flags[key]; ok == (key == "inactive") {
			t.Fatalf("/flags/ for %s: flag %s present %v: %s", id, key, ok, text)
		} else if !ok {
			flags[key] = hedgeFlag{value: false}
		}
	}
	return flags
}

// flagValue is an SDK's answer for comparison: nil (no answer, as for a flag the server
// did not evaluate) counts as false.
func flagValue(v any) any {
	if v == nil {
		return false
	}
	return v
}

// localRule says whether an SDK's local evaluation must decide a flag for a subject
// ("must"), cannot ("never"), or may either way ("maybe"), from what the definitions
// hold and what the SDKs do: a missing property, an experience continuity flag, a
// group flag without its group's properties are inconclusive; posthog-go compares gt
// only between JSON numbers (the API stores the value "30" as text), and cannot
// evaluate a group flag for a caller without the group, where posthog-node answers
// false, as the server does.
func localRule(sdk, key string, s flagSubject) string {
	has := func(p string) string {
		if _, ok := s.PersonProperties[p]; ok {
			return "must"
		}
		return "never"
	}
	switch key {
	case "half", "multi", "blue", "inactive", "needs-half", "remote-settings":
		return "must"
	case "email-acme":
		return has("email")
	case "plan-paid":
		return has("plan")
	case "beta-set":
		return has("beta")
	case "age-over-30":
		if sdk == "go" {
			return "never"
		}
		return has("age")
	case "enterprise-cohort":
		// OR of plan exact enterprise and email icontains @bigco.com, each in an AND
		// group: posthog-go's AND group answers false for a missing property, so it
		// decides; for posthog-node one missing is inconclusive unless the other matches.
		if sdk == "go" || has("plan") == "must" && has("email") == "must" {
			return "must"
		}
		if has("plan") == "never" && has("email") == "never" {
			return "never"
		}
		return "maybe"
	case "company":
		if _, ok := s.Groups["company"]; !ok {
			if sdk == "go" {
				return "never"
			}
			return "must"
		}
		if _, ok := s.GroupProperties["company"]["industry"]; ok {
			return "must"
		}
		return "never"
	case "email-regex", "plan-is-not", "version-semver", "signup-before", "variant-override":
		return "maybe" // what each SDK decides locally differs by operator and version
	}
	return "never" // continuity
}

func checkFlagAnswers(t *testing.T, subjects *flagSubjects, all flagsManifest, expected map[string]map[string]hedgeFlag) {
	t.Helper()
	bySubject := map[string]flagSubject{}
	for _, s := range subjects.all() {
		bySubject[s.DistinctID] = s
	}
	disagreements := 0
	disagree := func(format string, args ...any) {
		disagreements++
		if disagreements <= 30 {
			t.Errorf(format, args...)
		}
	}
	ids := map[string]map[string]bool{}       // sdk -> distinct ids compared
	localCount := map[string]map[string]int{} // sdk -> flag -> local answers
	compared := 0
	for _, a := range all.Answers {
		if a.Call == "getRemoteConfigPayload" || a.Call == "GetRemoteConfigPayload" {
			compared++
			if !reflect.DeepEqual(a.Payload, remoteSettings) {
				disagree("%s %s(%s) = %#v, want %#v", a.SDK, a.Call, a.Key, a.Payload, remoteSettings)
			}
			continue
		}
		want, ok := expected[a.ID]
		if !ok {
			t.Fatalf("%s %s: hedge was not asked about %s", a.SDK, a.Call, a.ID)
		}
		if ids[a.SDK] == nil {
			ids[a.SDK] = map[string]bool{}
		}
		ids[a.SDK][a.ID] = true
		switch {
		case a.Call == "getFeatureFlagPayload" || a.Call == "GetFeatureFlagPayload":
			compared++
			if !reflect.DeepEqual(a.Payload, want[a.Key].payload) {
				disagree("%s %s(%s, %s) = %#v, hedge's /flags/ says %#v", a.SDK, a.Call, a.Key, a.ID, a.Payload, want[a.Key].payload)
			}
		case a.Flags != nil || a.Call == "getAllFlags" || a.Call == "GetAllFlags" || a.Call == "getAllFlagsAndPayloads":
			onlyLocal := strings.HasSuffix(a.SDK, "-local-only")
			for _, key := range flagKeys {
				got, present := a.Flags[key]
				if onlyLocal {
					if !present {
						continue
					}
					countLocal(localCount, a.SDK, key)
				}
				compared++
				if flagValue(got) != want[key].value {
					disagree("%s %s(%s)[%s] = %#v, hedge's /flags/ says %#v", a.SDK, a.Call, a.ID, key, got, want[key].value)
				}
				if a.Payloads != nil && want[key].value != false {
					if p := a.Payloads[key]; !reflect.DeepEqual(p, want[key].payload) {
						disagree("%s %s(%s) payload of %s = %#v, hedge's /flags/ says %#v", a.SDK, a.Call, a.ID, key, p, want[key].payload)
					}
				}
			}
			if onlyLocal {
				sdk := strings.TrimSuffix(a.SDK, "-local-only")
				for _, key := range flagKeys {
					_, present := a.Flags[key]
					switch rule := localRule(sdk, key, bySubject[a.ID]); {
					case rule == "must" && !present:
						t.Errorf("%s %s(%s): %s not evaluated locally, but the definitions decide it", a.SDK, a.Call, a.ID, key)
					case rule == "never" && present:
						t.Errorf("%s %s(%s): %s evaluated locally to %v, but it cannot be", a.SDK, a.Call, a.ID, key, a.Flags[key])
					}
				}
			}
		default: // one flag's value
			compared++
			wantValue := want[a.Key].value
			if a.Call == "isFeatureEnabled" {
				wantValue = wantValue != false
			}
			if flagValue(a.Value) != wantValue {
				disagree("%s %s(%s, %s) = %#v, hedge's /flags/ says %#v", a.SDK, a.Call, a.Key, a.ID, a.Value, wantValue)
			}
			if strings.HasSuffix(a.SDK, "-local-only") {
				countLocal(localCount, a.SDK, a.Key)
				if a.SDK == "node-local-only" && wantValue != false && !reflect.DeepEqual(a.Payload, want[a.Key].payload) {
					disagree("%s %s(%s, %s) payload %#v, hedge's /flags/ says %#v", a.SDK, a.Call, a.Key, a.ID, a.Payload, want[a.Key].payload)
				}
			}
		}
	}
	if disagreements > 0 {
		t.Errorf("%d disagreements with hedge's /flags/ in all", disagreements)
	}
	for _, sdk := range []string{"node-remote", "node-local", "node-local-only", "js-no-external", "js-default", "go-remote", "go-local", "go-local-only"} {
		want := subjectsPerSDK
		if strings.HasPrefix(sdk, "js-") {
			want = 2 * subjects.browserCount(strings.TrimPrefix(sdk, "js-"))
		}
		if len(ids[sdk]) != want {
			t.Errorf("%s answered for %d distinct ids, want %d", sdk, len(ids[sdk]), want)
		}
	}
	t.Logf("%d answers compared with hedge's /flags/; distinct ids per SDK: node-remote %d, node-local %d, go-remote %d, go-local %d, js %d",
		compared, len(ids["node-remote"]), len(ids["node-local"]), len(ids["go-remote"]), len(ids["go-local"]),
		len(ids["js-no-external"])+len(ids["js-default"]))
	t.Logf("locally evaluated answers by flag: %v", localCount)

	// A browser keeps its experience continuity flag's value across identify, and its
	// flags changed with the person properties identify set.
	values := map[string]any{} // id + "/" + key -> value
	for _, a := range all.Answers {
		if strings.HasPrefix(a.SDK, "js-") && a.Call == "getFeatureFlag" {
			values[a.ID+"/"+a.Key] = flagValue(a.Value)
		}
	}
	changed := false
	for _, b := range all.Browsers {
		if b.Phase != "identified" {
			continue
		}
		if values[b.ID+"/continuity"] != values[b.Anon+"/continuity"] {
			t.Errorf("browser %s: continuity %v after identify, %v before", b.ID, values[b.ID+"/continuity"], values[b.Anon+"/continuity"])
		}
		changed = changed || values[b.ID+"/email-acme"] != values[b.Anon+"/email-acme"]
	}
	if !changed {
		t.Error("no browser's email-acme changed with identify: the flags were not reloaded with the person properties")
	}
}

func countLocal(m map[string]map[string]int, sdk, key string) {
	if m[sdk] == nil {
		m[sdk] = map[string]int{}
	}
	m[sdk][key]++
}

// checkFlagEvents checks, in the database of the stopped hedge, that every flag value
// an SDK read was reported by a $feature_flag_called event with that response, and
// that the events posthog-node captured with sendFeatureFlags carry every flag.
func checkFlagEvents(t *testing.T, dataDir string, boot admin.Bootstrap, subjects *flagSubjects, all flagsManifest, expected map[string]map[string]hedgeFlag) {
	t.Helper()
	db := openDatabase(t, dataDir)
	rows, err := db.Query(`SELECT distinct_id, `+warehouse.PropertiesText+` FROM events WHERE event = '$feature_flag_called' AND team_id = ?`, boot.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	type called struct {
		response         any
		locallyEvaluated any
	}
	events := map[string][]called{} // distinct id + "/" + flag -> events
	n := 0
	for rows.Next() {
		var id, properties string
		if err := rows.Scan(&id, &properties); err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(properties), &p); err != nil {
			t.Fatal(err)
		}
		key, _ := p["$feature_flag"].(string)
		events[id+"/"+key] = append(events[id+"/"+key], called{p["$feature_flag_response"], p["locally_evaluated"]})
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	bySubject := map[string]flagSubject{}
	for _, s := range subjects.all() {
		bySubject[s.DistinctID] = s
	}
	checked, missing := 0, 0
	for _, a := range all.Answers {
		if a.Call != "getFeatureFlag" && a.Call != "GetFeatureFlag" || strings.HasSuffix(a.SDK, "-local-only") {
			continue
		}
		checked++
		found := false
		for _, e := range events[a.ID+"/"+a.Key] {
			// posthog-go reports a flag /flags/ did not answer (the inactive one) as
			// false and sends no response; posthog-node sends and answers none.
			if flagValue(e.response) == flagValue(a.Value) {
				found = true
				// posthog-node says whether it evaluated locally; it must have where it could.
				if a.SDK == "node-local" && localRule("node", a.Key, bySubject[a.ID]) == "must" && e.locallyEvaluated != true {
					t.Errorf("node-local %s for %s: locally_evaluated %v", a.Key, a.ID, e.locallyEvaluated)
				}
			}
		}
		if !found {
			missing++
			if missing <= 10 {
				t.Errorf("%s %s(%s, %s) = %#v: no $feature_flag_called with that response (events %v)", a.SDK, a.Call, a.Key, a.ID, a.Value, events[a.ID+"/"+a.Key])
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d flag reads without their $feature_flag_called event", missing)
	}

	for _, c := range all.Captures {
		var properties string
		if err := db.QueryRow(`SELECT `+warehouse.PropertiesText+` FROM events WHERE uuid = ? AND team_id = ?`, c.UUID, boot.ProjectID).Scan(&properties); err != nil {
			t.Fatalf("the event captured with sendFeatureFlags for %s: %v", c.ID, err)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(properties), &p); err != nil {
			t.Fatal(err)
		}
		var active []any
		for _, key := range flagKeys {
			want := expected[c.ID][key]
			if got := flagValue(p["$feature/"+key]); got != want.value {
				t.Errorf("sendFeatureFlags event of %s: $feature/%s = %#v, hedge's /flags/ says %#v", c.ID, key, p["$feature/"+key], want.value)
			}
			if want.value != false {
				active = append(active, key)
			}
		}
		sort.Slice(active, func(i, j int) bool { return active[i].(string) < active[j].(string) })
		if got, _ := p["$active_feature_flags"].([]any); !reflect.DeepEqual(got, active) {
			t.Errorf("sendFeatureFlags event of %s: $active_feature_flags %v, want %v", c.ID, got, active)
		}
	}
	t.Logf("%d $feature_flag_called events stored; %d flag reads matched to theirs; %d sendFeatureFlags events checked", n, checked, len(all.Captures))
}
