package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
)

// The flags scenarios' project: 50 flags created through the management API, half
// with property conditions (icontains, exact lists, numbers, is_set, regex, semver, a
// cohort, multivariate flags with payloads, partial rollouts) and half plain rollouts
// and variants;
// persons ingested through /batch/ first, so that /flags/ reads stored properties as
// well as answering unknown ids; and /flags/?v=2 bodies shaped like posthog-js's.
//
// What an answer must hold is derived from what the bench sent, never written down:
// its count is the project's flags that a browser's request evaluates (listed through
// the management API), and each flag whose conditions read only properties the bench
// stored, at a 100% rollout, has its value computed from the person's properties by
// the flag's expect (beside its filters, so that they read as one rule).

// flagsUserAgent is a browser's: posthog-js's requests come from one, and /flags/
// evaluates the flags of the client runtime for them.
const flagsUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// flagsKeyPrefix starts the keys of the bench's flags and the name of its cohort.
const flagsKeyPrefix = "bench-"

// flagsBodies is how many prebuilt /flags/ bodies a project has: enough that the
// distinct ids vary, few enough to build in milliseconds.
const flagsBodies = 1024

// Shares of the /flags/ bodies: of distinct ids with a stored person (the others are
// visitors unknown to hedge, as on a first page load), and of bodies gzip-compressed
// as posthog-js sends them (the others are plain JSON, as posthog-node and posthog-go
// send).
const (
	flagsKnownShare = 0.6
	flagsGzipShare  = 0.25
)

// verifyEvery: one send in verifyEvery has its answer decoded and checked flag by
// flag (the others only have their flags counted, which costs the generator little).
// A prime, so that the decoded sends visit every body of a power-of-two pool.
const verifyEvery = 61

// benchPerson is a person the bench stores through /batch/ ($identify with $set),
// or, with known false, a visitor hedge has no person for. An empty field is a
// property not set, and so is seats 0.
type benchPerson struct {
	distinctID string
	known      bool
	email      string
	name       string
	plan       string
	country    string
	appVersion string
	company    string
	seats      int
}

// set is the person's stored properties, as the $identify's $set sends them.
func (p *benchPerson) set() map[string]any {
	m := map[string]any{}
	for k, v := range map[string]string{"email": p.email, "name": p.name, "plan": p.plan, "country": p.country,
		"app_version": p.appVersion, "company": p.company} {
		if v != "" {
			m[k] = v
		}
	}
	if p.seats > 0 {
		m["seats"] = p.seats
	}
	return m
}

func (p *benchPerson) String() string {
	if !p.known {
		return p.distinctID + " (no person)"
	}
	text, _ := json.Marshal(p.set())
	return p.distinctID + " " + string(text)
}

var (
	firstNames = []string{"Ada", "Grace", "Linus", "Margaret", "Alan", "Barbara", "Dennis", "Ken", "Radia", "Yukihiro", "Frances", "Tim"}
	lastNames  = []string{"Lovelace", "Hopper", "Torvalds", "Hamilton", "Turing", "Liskov", "Ritchie", "Thompson", "Perlman", "Matsumoto"}
	domains    = []string{"acme.com", "globex.com", "example.com", "gmail.com", "initech.io"}
	plans      = []string{"free", "free", "pro", "pro", "team", "enterprise", ""}
	countries  = []string{"US", "US", "FR", "DE", "GB", "ES", "BR", "JP", "IN", ""}
	versions   = []string{"1.9.3", "2.0.0", "2.3.7", "2.4.0", "2.5.1", "3.0.0", ""}
	timezones  = []string{"Europe/Paris", "America/New_York", "Europe/Berlin", "Asia/Tokyo", "UTC"}
)

// newBenchPersons makes n persons from seed: a few properties of each kind are unset,
// as in real projects.
func newBenchPersons(seed uint64, n int) []*benchPerson {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	persons := make([]*benchPerson, n)
	for i := range persons {
		first, last := firstNames[rng.IntN(len(firstNames))], lastNames[rng.IntN(len(lastNames))]
		p := &benchPerson{
			distinctID: fmt.Sprintf("bench-flags-user-%d", i),
			known:      true,
			email:      fmt.Sprintf("%s.%s%d@%s", strings.ToLower(first), strings.ToLower(last), i, domains[rng.IntN(len(domains))]),
			name:       first + " " + last,
			plan:       plans[rng.IntN(len(plans))],
			country:    countries[rng.IntN(len(countries))],
			appVersion: versions[rng.IntN(len(versions))],
		}
		if rng.Float64() < 0.7 {
			p.company = fmt.Sprintf("bench-company-%d", rng.IntN(100))
			p.seats = 1 + rng.IntN(200)
		}
		persons[i] = p
	}
	return persons
}

// flagSpec is one of the bench's flags: its filters as the management API takes them,
// and, when the answer follows from the person's stored properties alone, expect.
type flagSpec struct {
	key     string
	filters map[string]any
	// variants are the multivariate flag's variant keys: an enabled answer names one.
	variants []string
	// expect is the flag's value for p: set only for flags whose conditions read
	// properties the bench stores (and sends unchanged, if at all) at a 100% rollout,
	// or have no condition at 0% or 100%.
	expect func(p *benchPerson) bool
}

func person(key, operator string, value any) map[string]any {
	return map[string]any{"key": key, "type": "person", "operator": operator, "value": value}
}

func cohortFilter(id int64, operator string) map[string]any {
	return map[string]any{"key": "id", "type": "cohort", "operator": operator, "value": id}
}

// condition is a condition set: all of filters, then the rollout.
func condition(rollout float64, filters ...map[string]any) map[string]any {
	if filters == nil {
		filters = []map[string]any{}
	}
	return map[string]any{"properties": filters, "rollout_percentage": rollout}
}

func boolean(conditions ...map[string]any) map[string]any {
	return map[string]any{"groups": conditions}
}

// multivariate splits the matched persons evenly between variants (the first takes
// the remainder), with a payload for each variant payloads names.
func multivariate(variants []string, payloads map[string]any, conditions ...map[string]any) map[string]any {
	list := make([]map[string]any, len(variants))
	for i, v := range variants {
		pct := 100 / len(variants)
		if i == 0 {
			pct += 100 % len(variants)
		}
		list[i] = map[string]any{"key": v, "name": v, "rollout_percentage": pct}
	}
	f := map[string]any{"groups": conditions, "multivariate": map[string]any{"variants": list}}
	if payloads != nil {
		f["payloads"] = payloads
	}
	return f
}

// semver is an X.Y.Z version as three numbers; ok is false for "" (not set).
func semver(v string) (parts [3]int, ok bool) {
	fields := strings.Split(v, ".")
	if len(fields) != 3 {
		return parts, false
	}
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil {
			return parts, false
		}
		parts[i] = n
	}
	return parts, true
}

// versionAtLeast reports whether v is set and not below min.
func versionAtLeast(v string, min [3]int) bool {
	parts, ok := semver(v)
	return ok && slices.Compare(parts[:], min[:]) >= 0
}

// inCohort is the cohort's rule (flagSpecs' cohort): enterprise customers, and
// anyone in Germany.
func inCohort(p *benchPerson) bool { return p.plan == "enterprise" || p.country == "DE" }

// cohortFilters is inCohort as the cohort's filters.
var cohortFilters = map[string]any{"properties": map[string]any{"type": "OR", "values": []any{
	map[string]any{"type": "AND", "values": []any{person("plan", "exact", "enterprise")}},
	map[string]any{"type": "AND", "values": []any{person("country", "exact", "DE")}},
}}}

const cohortName = flagsKeyPrefix + "enterprise-or-germany"

// flagSpecs are the bench's 50 flags, cohort being inCohort's id: 25 with property
// conditions, 25 plain rollouts and variants.
func flagSpecs(cohort int64) []flagSpec {
	paid := []string{"pro", "team", "enterprise"}
	eu := []string{"FR", "DE", "ES", "IT", "NL"}
	specs := []flagSpec{
		{key: "acme-staff", filters: boolean(condition(100, person("email", "icontains", "@acme.com"))),
			expect: func(p *benchPerson) bool { return strings.Contains(p.email, "@acme.com") }},
		{key: "globex-staff", filters: boolean(condition(100, person("email", "icontains", "@globex.com"))),
			expect: func(p *benchPerson) bool { return strings.Contains(p.email, "@globex.com") }},
		{key: "real-emails", filters: boolean(condition(100, person("email", "not_icontains", "@example.com"), person("email", "is_set", "is_set"))),
			expect: func(p *benchPerson) bool { return p.email != "" && !strings.Contains(p.email, "@example.com") }},
		{key: "paid-plans", filters: boolean(condition(100, person("plan", "exact", paid))),
			expect: func(p *benchPerson) bool { return slices.Contains(paid, p.plan) }},
		{key: "pro-half", filters: boolean(condition(50, person("plan", "exact", []string{"pro"})))},
		{key: "eu-countries", filters: boolean(condition(100, person("country", "exact", eu))),
			expect: func(p *benchPerson) bool { return slices.Contains(eu, p.country) }},
		{key: "outside-us", filters: boolean(condition(100, person("country", "is_not", "US"))),
			expect: func(p *benchPerson) bool { return p.country != "US" }},
		{key: "us-rollout", filters: boolean(condition(30, person("country", "exact", []string{"US"})))},
		{key: "large-accounts", filters: boolean(condition(100, person("seats", "gt", "50"))),
			expect: func(p *benchPerson) bool { return p.seats > 50 }},
		{key: "small-teams", filters: boolean(condition(100, person("seats", "lte", "5"))),
			expect: func(p *benchPerson) bool { return p.seats > 0 && p.seats <= 5 }},
		{key: "team-seats", filters: boolean(condition(100, person("seats", "gte", "10"), person("plan", "exact", "team"))),
			expect: func(p *benchPerson) bool { return p.seats >= 10 && p.plan == "team" }},
		{key: "has-company", filters: boolean(condition(100, person("company", "is_set", "is_set"))),
			expect: func(p *benchPerson) bool { return p.company != "" }},
		{key: "new-checkout", filters: boolean(condition(100, person("app_version", "semver_gte", "2.4.0"))),
			expect: func(p *benchPerson) bool { return versionAtLeast(p.appVersion, [3]int{2, 4, 0}) }},
		{key: "v2-clients", filters: boolean(condition(100, person("app_version", "semver_caret", "2.0.0"))),
			expect: func(p *benchPerson) bool {
				return versionAtLeast(p.appVersion, [3]int{2, 0, 0}) && !versionAtLeast(p.appVersion, [3]int{3, 0, 0})
			}},
		{key: "legacy-app", filters: boolean(condition(100, person("app_version", "semver_lt", "2.0.0"))),
			expect: func(p *benchPerson) bool {
				_, set := semver(p.appVersion)
				return set && !versionAtLeast(p.appVersion, [3]int{2, 0, 0})
			}},
		{key: "names-a-to-m", filters: boolean(condition(100, person("name", "regex", "^[A-M]"))),
			expect: func(p *benchPerson) bool { return p.name != "" && p.name[0] >= 'A' && p.name[0] <= 'M' }},
		{key: "pricing-visitors", filters: boolean(condition(100, person("$initial_current_url", "regex", `^https://example\.com/(pricing|signup)`)))},
		{key: "newsletter-signups", filters: boolean(condition(100, person("$initial_utm_source", "exact", "newsletter")))},
		{key: "direct-half", filters: boolean(condition(50, person("$initial_referrer", "exact", "$direct")))},
		{key: "web-sdk-10", filters: boolean(condition(10, person("$lib", "exact", "web")))},
		{key: "enterprise-cohort", filters: boolean(condition(100, cohortFilter(cohort, "in"))), expect: inCohort},
		{key: "outside-cohort", filters: boolean(condition(100, cohortFilter(cohort, "not_in"))),
			expect: func(p *benchPerson) bool { return !inCohort(p) }},
		{key: "enterprise-or-gb", filters: boolean(condition(100, person("plan", "exact", "enterprise")), condition(50, person("country", "exact", []string{"GB"})))},
		{key: "paid-experiment", variants: []string{"control", "test-a", "test-b"},
			filters: multivariate([]string{"control", "test-a", "test-b"},
				map[string]any{"control": map[string]any{"headline": "Start free"}, "test-a": map[string]any{"headline": "Try pro"}, "test-b": map[string]any{"headline": "Book a demo"}},
				condition(100, person("plan", "exact", []string{"pro", "team"}))),
			expect: func(p *benchPerson) bool { return p.plan == "pro" || p.plan == "team" }},
		{key: "regional-pricing", variants: []string{"eur", "gbp"},
			filters: multivariate([]string{"eur", "gbp"}, map[string]any{"eur": map[string]any{"currency": "EUR"}, "gbp": map[string]any{"currency": "GBP"}},
				condition(100, person("country", "exact", []string{"FR", "DE", "GB"}))),
			expect: func(p *benchPerson) bool { return slices.Contains([]string{"FR", "DE", "GB"}, p.country) }},
	}
	for i, pct := range []float64{1, 5, 10, 20, 25, 33, 50, 75, 90, 95} {
		s := flagSpec{key: fmt.Sprintf("rollout-%02d", i), filters: boolean(condition(pct))}
		if i%2 == 0 {
			s.filters["payloads"] = map[string]any{"true": map[string]any{"banner": fmt.Sprintf("v%d", i)}}
		}
		specs = append(specs, s)
	}
	for i := range 10 {
		variants := []string{"control", "test"}
		if i%3 == 0 {
			variants = append(variants, "test-b")
		}
		var payloads map[string]any
		if i%2 == 0 {
			payloads = map[string]any{"test": map[string]any{"layout": "wide", "version": i}}
		}
		specs = append(specs, flagSpec{key: fmt.Sprintf("experiment-%02d", i), variants: variants,
			filters: multivariate(variants, payloads, condition(100)),
			expect:  func(*benchPerson) bool { return true }})
	}
	specs = append(specs,
		flagSpec{key: "kill-switch", filters: boolean(condition(100)), expect: func(*benchPerson) bool { return true }},
		flagSpec{key: "dark-launch", filters: boolean(condition(0)), expect: func(*benchPerson) bool { return false }},
		flagSpec{key: "gradual-15", filters: boolean(condition(15))},
		flagSpec{key: "gradual-60", filters: boolean(condition(60))},
		flagSpec{key: "new-onboarding", variants: []string{"control", "checklist", "video"},
			filters: multivariate([]string{"control", "checklist", "video"}, nil, condition(40))},
	)
	for i := range specs {
		specs[i].key = flagsKeyPrefix + specs[i].key
	}
	return specs
}

// flagsProject is what the flags scenarios send and check.
type flagsProject struct {
	bodies []flagsBody
	// count is how many flags every answer holds: the project's active flags that a
	// browser's request evaluates (the bench's, and any other).
	count   int
	specs   []flagSpec
	persons int
}

// flagsBody is one prebuilt /flags/ request and the person it asks for.
type flagsBody struct {
	data   []byte
	gzip   bool
	person *benchPerson
}

// contentType is what posthog-js sends a gzip body with (text/plain, unannounced), and
// what the server SDKs send JSON with.
func (b *flagsBody) contentType() string {
	if b.gzip {
		return "text/plain"
	}
	return "application/json"
}

// setupFlags makes the project the flags scenarios measure: it ingests persons
// (through the capture listener, as SDKs would), creates the cohort and the flags the
// project does not have yet (by key, so that a second run reuses them), counts the
// flags an answer holds, and builds the bodies. It takes seconds, before any timing.
func setupFlags(ctx context.Context, t *target, seed uint64, persons int) (*flagsProject, error) {
	if t.api == nil {
		return nil, fmt.Errorf("the flags scenarios create their flags through the management API: give -admin-url, -personal-key and -project-id (or -bootstrap)")
	}
	people := newBenchPersons(seed, persons)
	if err := ingestPersons(ctx, t, people); err != nil {
		return nil, err
	}
	cohort, err := ensureCohort(t.api)
	if err != nil {
		return nil, err
	}
	specs := flagSpecs(cohort)
	existing, err := listFlags(t.api)
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		if _, ok := existing[s.key]; ok {
			continue
		}
		body, err := json.Marshal(map[string]any{"key": s.key, "name": "hedge bench: " + s.key, "filters": s.filters, "active": true})
		if err != nil {
			return nil, fmt.Errorf("cannot encode flag %s: %w", s.key, err)
		}
		status, answer, err := t.api.do(fasthttp.MethodPost, fmt.Sprintf("/api/projects/%d/feature_flags/", t.api.project), body)
		if err != nil {
			return nil, err
		}
		if status != fasthttp.StatusCreated {
			return nil, fmt.Errorf("cannot create flag %s: the management API answered %d: %.300s", s.key, status, answer)
		}
	}
	if existing, err = listFlags(t.api); err != nil {
		return nil, err
	}
	p := &flagsProject{specs: specs, persons: persons}
	for _, f := range existing {
		// An answer holds the active flags of the runtime it evaluates, and those of
		// every runtime: a browser's request is the client runtime's.
		if f.Active && !f.Deleted && (f.EvaluationRuntime == "" || f.EvaluationRuntime == "all" || f.EvaluationRuntime == "client") {
			p.count++
		}
	}
	for _, s := range specs {
		if f := existing[s.key]; !f.Active || f.Deleted {
			return nil, fmt.Errorf("flag %s is inactive or deleted in project %d: the bench's checks need it active", s.key, t.api.project)
		}
	}
	p.bodies = flagsRequests(t.token, seed, people)
	return p, nil
}

// ingestPersons stores the persons with one $identify each (with $set), and their
// companies with a $groupidentify, in /batch/ bodies of 500 events.
func ingestPersons(ctx context.Context, t *target, people []*benchPerson) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var events []map[string]any
	companies := map[string]bool{}
	for _, p := range people {
		props := map[string]any{"distinct_id": p.distinctID, "$lib": "web", "$lib_version": "1.449.2", "$set": p.set()}
		events = append(events, map[string]any{"event": "$identify", "uuid": uuid.Must(uuid.NewV7()).String(), "timestamp": now, "properties": props})
		if p.company != "" && !companies[p.company] {
			companies[p.company] = true
			events = append(events, map[string]any{"event": "$groupidentify", "uuid": uuid.Must(uuid.NewV7()).String(), "timestamp": now,
				"properties": map[string]any{"distinct_id": p.distinctID, "$group_type": "company", "$group_key": p.company,
					"$group_set": map[string]any{"name": "Company " + strings.TrimPrefix(p.company, "bench-company-"), "employees": p.seats}}})
		}
	}
	client := &fasthttp.Client{Name: "hedge-bench"}
	for len(events) > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		chunk := events[:min(len(events), 500)]
		events = events[len(chunk):]
		body, err := json.Marshal(map[string]any{"api_key": t.token, "sent_at": now, "batch": chunk})
		if err != nil {
			return fmt.Errorf("cannot encode the persons: %w", err)
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(t.CaptureURL + "/batch/")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
		err = client.DoTimeout(req, resp, apiTimeout)
		status, answer := resp.StatusCode(), bytes.Clone(resp.Body())
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if err != nil {
			return fmt.Errorf("cannot ingest the flags scenarios' persons: %w", err)
		}
		if status != fasthttp.StatusOK {
			return fmt.Errorf("cannot ingest the flags scenarios' persons: /batch/ answered %d: %.300s", status, answer)
		}
	}
	return nil
}

// ensureCohort returns the id of the bench's cohort, created if the project has none.
func ensureCohort(api *apiClient) (int64, error) {
	path := fmt.Sprintf("/api/projects/%d/cohorts/", api.project)
	status, body, err := api.do(fasthttp.MethodGet, path+"?search="+url.QueryEscape(cohortName), nil)
	if err != nil {
		return 0, err
	}
	if status != fasthttp.StatusOK {
		return 0, fmt.Errorf("cannot list cohorts: the management API answered %d: %.300s", status, body)
	}
	var list struct {
		Results []struct {
			ID      int64  `json:"id"`
			Name    string `json:"name"`
			Deleted bool   `json:"deleted"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("cannot read the cohorts: %w", err)
	}
	for _, c := range list.Results {
		if c.Name == cohortName && !c.Deleted {
			return c.ID, nil
		}
	}
	create, err := json.Marshal(map[string]any{"name": cohortName, "filters": cohortFilters})
	if err != nil {
		return 0, fmt.Errorf("cannot encode the cohort: %w", err)
	}
	status, body, err = api.do(fasthttp.MethodPost, path, create)
	if err != nil {
		return 0, err
	}
	if status != fasthttp.StatusCreated {
		return 0, fmt.Errorf("cannot create the cohort: the management API answered %d: %.300s", status, body)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.ID == 0 {
		return 0, fmt.Errorf("cannot read the created cohort: %v: %.300s", err, body)
	}
	return created.ID, nil
}

// listedFlag is what the bench reads of a flag in the management API's list.
type listedFlag struct {
	Key               string `json:"key"`
	Active            bool   `json:"active"`
	Deleted           bool   `json:"deleted"`
	EvaluationRuntime string `json:"evaluation_runtime"`
}

// listFlags lists the project's flags by key, page after page.
func listFlags(api *apiClient) (map[string]listedFlag, error) {
	flags := map[string]listedFlag{}
	const limit = 200
	for offset := 0; ; offset += limit {
		status, body, err := api.do(fasthttp.MethodGet, fmt.Sprintf("/api/projects/%d/feature_flags/?limit=%d&offset=%d", api.project, limit, offset), nil)
		if err != nil {
			return nil, err
		}
		if status != fasthttp.StatusOK {
			return nil, fmt.Errorf("cannot list feature flags: the management API answered %d: %.300s", status, body)
		}
		var page struct {
			Count   int          `json:"count"`
			Results []listedFlag `json:"results"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("cannot read the feature flags: %w", err)
		}
		for _, f := range page.Results {
			flags[f.Key] = f
		}
		if len(page.Results) < limit || offset+limit >= page.Count {
			return flags, nil
		}
	}
}

// flagsRequests builds the /flags/ bodies as posthog-js sends them after its first
// page load: the token, the distinct id, the person's groups, and person_properties
// of about ten keys (the initial campaign properties, the properties the page set
// with identify, the library). The distinct ids are known persons' or unknown
// visitors'; a share of the bodies is gzip-compressed.
func flagsRequests(token string, seed uint64, people []*benchPerson) []flagsBody {
	rng := rand.New(rand.NewPCG(seed^0xf1a95, seed))
	pages := []string{"/", "/pricing", "/signup", "/docs/getting-started", "/blog/launch-week"}
	sources := []string{"google", "newsletter", "twitter", "hacker-news"}
	sentAt := time.Now().UTC().Format(time.RFC3339Nano)
	bodies := make([]flagsBody, flagsBodies)
	for i := range bodies {
		p := &benchPerson{distinctID: fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()>>16)}
		if len(people) > 0 && rng.Float64() < flagsKnownShare {
			p = people[rng.IntN(len(people))]
		}
		page := pages[rng.IntN(len(pages))]
		props := map[string]any{
			"$initial_referrer": "$direct", "$initial_referring_domain": "$direct",
			"$initial_current_url": "https://example.com" + page, "$initial_host": "example.com", "$initial_pathname": page,
			"$initial_utm_source": nil, "$initial_utm_campaign": nil,
			"$lib": "web", "$lib_version": "1.449.2",
		}
		if rng.IntN(3) == 0 {
			source := sources[rng.IntN(len(sources))]
			props["$initial_current_url"] = "https://example.com" + page + "?utm_source=" + source
			props["$initial_utm_source"] = source
			props["$initial_referrer"], props["$initial_referring_domain"] = "https://"+source+".com/", source+".com"
		}
		groups, groupProps := map[string]any{}, map[string]any{}
		if p.known {
			// posthog-js sends what the page set with identify, the same as stored.
			props["email"], props["name"] = p.email, p.name
			delete(props, "$initial_utm_campaign")
			if p.company != "" {
				groups["company"] = p.company
				groupProps["company"] = map[string]any{"name": "Company " + strings.TrimPrefix(p.company, "bench-company-")}
			}
		}
		body := map[string]any{
			"token": token, "distinct_id": p.distinctID, "groups": groups, "person_properties": props,
			"group_properties": groupProps, "timezone": timezones[rng.IntN(len(timezones))],
			"$device_id": fmt.Sprintf("%08x-%04x-7%03x-9%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()>>16),
			"sent_at":    sentAt,
		}
		data, _ := json.Marshal(body) // maps of strings: cannot fail
		b := flagsBody{data: data, person: p}
		if rng.Float64() < flagsGzipShare {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(data)
			zw.Close()
			b.data, b.gzip = buf.Bytes(), true
		}
		bodies[i] = b
	}
	return bodies
}

// answerCheck is what a flags scenario verified of its answers, warmup included:
// every send answered 200 with count flags, and the decoded ones (one in verifyEvery,
// and each worker's first for a stored person) with each flag under its own key, none failed, every expected value as expected and
// every enabled multivariate flag on one of its variants.
type answerCheck struct {
	Flags        int    `json:"flags_per_answer"`
	Sends        int64  `json:"sends"`
	Refused      int64  `json:"not_200"` // answered otherwise, or not at all
	WrongCount   int64  `json:"wrong_flag_count"`
	Decoded      int64  `json:"decoded"`
	DecodedKnown int64  `json:"decoded_known_persons"`
	Compared     int64  `json:"values_compared"` // flags compared with their expected value
	Wrong        int64  `json:"wrong_answers"`   // decoded answers with a problem
	Example      string `json:"example,omitempty"`
	OK           bool   `json:"ok"`
}

func (c *answerCheck) add(o *answerCheck) {
	c.Sends += o.Sends
	c.Refused += o.Refused
	c.WrongCount += o.WrongCount
	c.Decoded += o.Decoded
	c.DecodedKnown += o.DecodedKnown
	c.Compared += o.Compared
	c.Wrong += o.Wrong
	if c.Example == "" {
		c.Example = o.Example
	}
}

// finish decides the verdict: nothing wrong, and at least one answer for a stored
// person decoded.
func (c *answerCheck) finish() {
	c.OK = c.Refused == 0 && c.WrongCount == 0 && c.Wrong == 0 && c.DecodedKnown > 0
}

func (c *answerCheck) problems() []string {
	if c.OK {
		return nil
	}
	var p []string
	if c.Refused > 0 {
		p = append(p, fmt.Sprintf("%d of %d /flags/ sends not answered 200", c.Refused, c.Sends))
	}
	if c.WrongCount > 0 {
		p = append(p, fmt.Sprintf("%d /flags/ answers without %d flags", c.WrongCount, c.Flags))
	}
	if c.Wrong > 0 {
		p = append(p, fmt.Sprintf("%d of %d decoded /flags/ answers wrong", c.Wrong, c.Decoded))
	}
	if c.DecodedKnown == 0 {
		p = append(p, "no /flags/ answer for a stored person was decoded")
	}
	if c.Example != "" {
		p = append(p, "e.g. "+c.Example)
	}
	return p
}

// countFlags counts an answer's flag details by their "enabled" keys, without decoding
// the answer (a payload is a JSON string, in which quotes are escaped). It searches
// for the key's tail, then checks its head: the tail's rare first byte makes the search
// about five times as fast as one for the whole key (2 µs instead of 10 for 50 flags),
// and every answer is counted.
func countFlags(answer []byte) int {
	const head, tail = `"ena`, `bled":`
	n := 0
	for {
		i := bytes.Index(answer, []byte(tail))
		if i < 0 {
			return n
		}
		if i >= len(head) && string(answer[i-len(head):i]) == head {
			n++
		}
		answer = answer[i+len(tail):]
	}
}

// answer checks one send's answer.
func (c *answerCheck) answer(p *flagsProject, send uint64, status int, answer []byte, b *flagsBody) {
	c.Sends++
	if status != fasthttp.StatusOK {
		c.Refused++
		c.problem(fmt.Sprintf("send %d answered %d: %.200s", send, status, answer))
		return
	}
	if n := countFlags(answer); n != p.count {
		c.WrongCount++
		c.problem(fmt.Sprintf("send %d answered %d flags, want %d", send, n, p.count))
		return
	}
	// The first answer for a stored person is decoded too, so that every run compares
	// stored properties with what /flags/ made of them.
	if send%verifyEvery != 0 && (!b.person.known || c.DecodedKnown > 0) {
		return
	}
	c.Decoded++
	if b.person.known {
		c.DecodedKnown++
	}
	if msg := p.verify(answer, b.person, &c.Compared); msg != "" {
		c.Wrong++
		c.problem(fmt.Sprintf("send %d for %s: %s", send, b.person, msg))
	}
}

func (c *answerCheck) problem(msg string) {
	if c.Example == "" {
		c.Example = msg
	}
}

// verify decodes an answer and says what is wrong with it for person, "" if nothing;
// compared counts the flags compared with an expected value.
func (p *flagsProject) verify(answer []byte, person *benchPerson, compared *int64) string {
	var a struct {
		Flags map[string]struct {
			Key     string  `json:"key"`
			Enabled bool    `json:"enabled"`
			Variant *string `json:"variant"`
			Failed  bool    `json:"failed"`
		} `json:"flags"`
		Errors bool `json:"errorsWhileComputingFlags"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Sprintf("cannot decode the answer: %v", err)
	}
	if a.Errors {
		return "errorsWhileComputingFlags"
	}
	if len(a.Flags) != p.count {
		return fmt.Sprintf("%d flags, want %d", len(a.Flags), p.count)
	}
	for key, f := range a.Flags {
		if f.Key != key || f.Failed {
			return fmt.Sprintf("flag %s: key %q, failed %v", key, f.Key, f.Failed)
		}
	}
	for _, s := range p.specs {
		f, ok := a.Flags[s.key]
		if !ok {
			return fmt.Sprintf("no flag %s", s.key)
		}
		if s.expect != nil {
			*compared++
			if want := s.expect(person); f.Enabled != want {
				return fmt.Sprintf("flag %s enabled %v, want %v", s.key, f.Enabled, want)
			}
		}
		if len(s.variants) > 0 && f.Enabled && (f.Variant == nil || !slices.Contains(s.variants, *f.Variant)) {
			return fmt.Sprintf("flag %s enabled without one of its variants %v", s.key, s.variants)
		}
	}
	return ""
}
