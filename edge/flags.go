package edge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/bytedance/sonic"
	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/internal/jsontext"
)

// Feature flags on the capture listener, the host every SDK is pointed at: /flags/ and
// /decide/ evaluate one caller's flags; /array/<token>/config and config.js are
// posthog-js's remote config; the routes the server SDKs call for local evaluation go
// to the management API's handler (Config.SDKAPI), which authenticates personal keys.
//
// Flags are never a reason to fail a page: past the project token and the distinct id,
// anything that goes wrong answers 200 with errorsWhileComputingFlags, as PostHog does.

// flagLookupTimeout bounds the database reads of one flags request (definitions on a
// cache miss, the person, the groups, continuity overrides).
const flagLookupTimeout = 2 * time.Second

// flagEvaluationTimeout bounds the evaluation of one flags request, once it has its
// project's slot (flagSlots): the flags not decided by then answer failed with the
// reason timeout, and errorsWhileComputingFlags. Ordinary flags take microseconds; what
// takes longer is flags made to be slow (thousands of backtracking patterns), which no
// SDK waits for: with the reads and the wait for a slot, an answer comes within 3 s,
// the SDKs' timeout. fasthttp does not tell a handler that its client has gone, so an
// evaluation stops at this deadline, not before.
const flagEvaluationTimeout = 500 * time.Millisecond

// maxFlagsBody is the largest /flags/ body read: the size of a capture body.
const maxFlagsBody = maxEventBody

type flagsEndpoint uint8

const (
	endpointFlags flagsEndpoint = iota
	endpointDecide
	endpointConfig   // /array/<token>/config
	endpointConfigJS // /array/<token>/config.js
	endpointSDKAPI   // served by the management API
)

// flagsRouteOf finds the flag routes in path, the request's path as fasthttp
// normalizes it (percent-escapes decoded, dot segments resolved). arg is the token an
// /array/ path names, or for endpointSDKAPI the path the management API is to route:
// path itself, which the request it forwards is rewritten to.
func flagsRouteOf(path []byte) (endpoint flagsEndpoint, arg string, ok bool) {
	p := strings.TrimSuffix(jsontext.BytesToString(path), "/")
	switch p {
	case "/flags":
		return endpointFlags, "", true
	case "/decide":
		return endpointDecide, "", true
	case "/flags/definitions", "/api/feature_flag/local_evaluation":
		return endpointSDKAPI, p, true
	}
	if rest, ok := strings.CutPrefix(p, "/api/projects/@current/feature_flags/"); ok {
		if key, ok := strings.CutSuffix(rest, "/remote_config"); ok && key != "" && !strings.Contains(key, "/") {
			return endpointSDKAPI, p, true
		}
	}
	if rest, ok := strings.CutPrefix(p, "/array/"); ok {
		if token, ok := strings.CutSuffix(rest, "/config.js"); ok && token != "" && !strings.Contains(token, "/") {
			return endpointConfigJS, token, true
		}
		if token, ok := strings.CutSuffix(rest, "/config"); ok && token != "" && !strings.Contains(token, "/") {
			return endpointConfig, token, true
		}
	}
	return 0, "", false
}

// serveFlags answers a flag route; arg is flagsRouteOf's.
func (s *Server) serveFlags(ctx *fasthttp.RequestCtx, endpoint flagsEndpoint, arg string) {
	switch endpoint {
	case endpointSDKAPI:
		if s.sdkAPI == nil {
			s.answer(ctx, errNotFound)
			return
		}
		s.forwardSDKAPI(ctx, arg)
	case endpointConfig, endpointConfigJS:
		s.remoteConfig(ctx, endpoint, arg)
	default:
		s.flagsRequest(ctx, endpoint)
	}
}

// forwardSDKAPI hands a request of an SDK route to the management API, as a request of
// path, the route the edge matched: the management API routes the path as sent, not
// as normalized, and would route another spelling of it elsewhere
// (/project/..%2Fflags%2Fdefinitions is a console page there). Personal API keys
// authenticate these routes, never a session: the request goes without its cookies (a
// browser sends the console's to every port of its host), and the answer does not let
// a page of another origin read it with credentials.
func (s *Server) forwardSDKAPI(ctx *fasthttp.RequestCtx, path string) {
	ctx.Request.URI().SetPath(strings.Clone(path)) // path aliases the URI's buffer
	ctx.Request.Header.DelAllCookies()
	ctx.Response.Header.Del(fasthttp.HeaderAccessControlAllowCredentials)
	s.sdkAPI(ctx)
}

// flagsBody is a /flags/ or /decide/ request body. Each field has PostHog's aliases;
// properties are decoded with numbers as json.Number, so that their text is kept.
type flagsBody struct {
	Token                  string                            `json:"token"`
	APIKey                 string                            `json:"api_key"`
	DollarToken            string                            `json:"$token"`
	DistinctID             sonic.NoCopyRawMessage            `json:"distinct_id"`
	DollarDistinctID       sonic.NoCopyRawMessage            `json:"$distinct_id"`
	Groups                 map[string]sonic.NoCopyRawMessage `json:"groups"`
	DollarGroups           map[string]sonic.NoCopyRawMessage `json:"$groups"`
	PersonProperties       map[string]any                    `json:"person_properties"`
	DollarProperties       map[string]any                    `json:"$properties"`
	GroupProperties        map[string]map[string]any         `json:"group_properties"`
	DollarGroupProperties  map[string]map[string]any         `json:"$group_properties"`
	AnonDistinctID         sonic.NoCopyRawMessage            `json:"$anon_distinct_id"`
	AnonDistinctIDAlias    sonic.NoCopyRawMessage            `json:"anon_distinct_id"`
	DeviceID               sonic.NoCopyRawMessage            `json:"device_id"`
	DollarDeviceID         sonic.NoCopyRawMessage            `json:"$device_id"`
	FlagKeys               []string                          `json:"flag_keys"`
	FlagKeysToEvaluate     []string                          `json:"flag_keys_to_evaluate"`
	DisableFlags           bool                              `json:"disable_flags"`
	EvaluationContexts     []string                          `json:"evaluation_contexts"`
	EvaluationEnvironments []string                          `json:"evaluation_environments"`
	EvaluationRuntime      string                            `json:"evaluation_runtime"`
}

// flagsJSON decodes /flags/ bodies: numbers in properties as json.Number (the
// evaluator compares their text), strings copied (the answer outlives nothing, but
// the maps are handed to the evaluator, which must not see the body's buffer change).
var flagsJSON = sonic.Config{UseNumber: true, CopyString: true, ValidateString: true}.Froze()

// Errors of the flags endpoints: the token ones in PostHog's JSON shape, the others
// as the plain text PostHog's flags service answers.
var (
	errFlagsNoToken = newCaptureError(http.StatusUnauthorized, "authentication_error", "not_authenticated",
		"No API token provided. Please include a valid API token in your request.")
	errFlagsBadToken = newCaptureError(http.StatusUnauthorized, "authentication_error", "authentication_failed",
		"The provided API key is invalid or has expired. Please check your API key and try again.")
	errFlagsNoDistinctID = &captureError{status: http.StatusBadRequest,
		body: []byte("The distinct_id field is missing from the request. Please include a valid identifier.")}
	// errFlagsBusy: the project's evaluations are all running (flagSlots), in
	// PostHog's words for a rate-limited flags request.
	errFlagsBusy = newCaptureError(http.StatusTooManyRequests, "validation_error", "rate_limit_exceeded", "Rate limit exceeded")
)

func errFlagsUndecodable(reason string) *captureError {
	return &captureError{status: http.StatusBadRequest, body: []byte("Failed to decode request: " + reason)}
}

// flagsDecodeError is a refusal of the body reader, which reads a /flags/ body as it
// reads a capture body, in the flags service's words: a body that cannot be decoded
// (empty, corrupt gzip or base64, not JSON) is a 400 in text, "Failed to decode
// request: <why>", not capture's JSON; the other refusals (too large, over the
// in-flight budget) stand.
func flagsDecodeError(e *captureError) *captureError {
	switch {
	case e.status != http.StatusBadRequest:
		return e
	case e == errNoData:
		return errFlagsUndecodable("the body is empty")
	}
	return errFlagsUndecodable(strings.TrimPrefix(e.detail, "Malformed request data: "))
}

// flagsRequest answers /flags/ and /decide/.
func (s *Server) flagsRequest(ctx *fasthttp.RequestCtx, endpoint flagsEndpoint) {
	switch {
	case ctx.IsOptions():
		h := &ctx.Response.Header
		h.Set(fasthttp.HeaderAllow, "GET, POST, OPTIONS, HEAD")
		h.Set(fasthttp.HeaderAccessControlAllowMethods, "GET, POST, OPTIONS, HEAD")
		if requested := ctx.Request.Header.Peek(fasthttp.HeaderAccessControlRequestHeaders); len(requested) > 0 {
			h.SetBytesV(fasthttp.HeaderAccessControlAllowHeaders, requested)
		}
		h.Set(fasthttp.HeaderAccessControlMaxAge, "86400")
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		countFlagsRequest(fasthttp.StatusNoContent)
		return
	case ctx.IsHead():
		ctx.SetStatusCode(fasthttp.StatusOK)
		countFlagsRequest(fasthttp.StatusOK)
		return
	case ctx.IsGet():
		// Decision (PostHog does the same): a GET evaluates nothing; it gets the
		// answer of a caller with no flags.
		s.writeFlags(ctx, endpoint, nil, false, nil)
		return
	case !ctx.IsPost():
		s.answerFlags(ctx, errMethodNotAllowed)
		return
	}
	q := requestPool.Get().(*request)
	q.res.budget = s.budget
	defer func() {
		q.release()
		requestPool.Put(q)
	}()
	if err := s.readRequestBody(ctx, q, maxFlagsBody); err != nil {
		s.answerFlags(ctx, readError(err))
		return
	}
	// PostHog's flags service reads JSON (application/json, text/plain, or no type) and
	// forms (data=<base64>); it refuses any other type.
	if ct := ctx.Request.Header.ContentType(); len(ct) > 0 {
		switch base, _, _ := strings.Cut(string(ct), ";"); strings.TrimSpace(base) {
		case "application/json", "text/plain", "application/x-www-form-urlencoded":
		default:
			s.answerFlags(ctx, errFlagsUndecodable("unsupported content type: "+string(ct)))
			return
		}
	}
	payload, cerr := q.payload(ctx)
	if cerr != nil {
		s.answerFlags(ctx, flagsDecodeError(cerr))
		return
	}
	var body flagsBody
	if payload[0] != '{' {
		s.answerFlags(ctx, errFlagsUndecodable("the body is not a JSON object"))
		return
	}
	if err := flagsJSON.Unmarshal(payload, &body); err != nil {
		// PostHog reads the body as JSON5, whose NaN and Infinity (which Python's
		// json.dumps writes too) it takes for null.
		fixed, ok := nonFiniteAsNull(payload)
		if !ok || flagsJSON.Unmarshal(fixed, &body) != nil {
			s.answerFlags(ctx, errFlagsUndecodable("the body is not a valid flags request"))
			return
		}
	}
	// A distinct id is a string or a number; PostHog refuses a body with another kind.
	for _, id := range []sonic.NoCopyRawMessage{body.DistinctID, body.DollarDistinctID} {
		if len(id) > 0 && string(id) != "null" && id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			s.answerFlags(ctx, errFlagsUndecodable("distinct_id must be a string or a number"))
			return
		}
	}
	token := firstNonEmpty(body.Token, body.APIKey, body.DollarToken)
	if token == "" {
		s.answerFlags(ctx, errFlagsNoToken)
		return
	}
	team, ok := s.teams(token)
	if !ok {
		s.answerFlags(ctx, errFlagsBadToken)
		return
	}
	rawID := body.DistinctID
	if len(rawID) == 0 || string(rawID) == "null" {
		rawID = body.DollarDistinctID
	}
	if len(rawID) == 0 || string(rawID) == "null" {
		s.answerFlags(ctx, errFlagsNoDistinctID)
		return
	}
	r := &flags.Request{
		DistinctID:              flagsID(rawID),
		AnonDistinctID:          flagsID(firstRaw(body.AnonDistinctID, body.AnonDistinctIDAlias)),
		DeviceID:                flagsID(firstRaw(body.DeviceID, body.DollarDeviceID)),
		PersonPropertyOverrides: firstMap(body.PersonProperties, body.DollarProperties),
		GroupPropertyOverrides:  firstGroupMap(body.GroupProperties, body.DollarGroupProperties),
		FlagKeys:                firstKeys(body.FlagKeys, body.FlagKeysToEvaluate),
		Runtime:                 runtimeOf(ctx, body.EvaluationRuntime),
		EvaluationContexts:      firstKeys(body.EvaluationContexts, body.EvaluationEnvironments),
		OnlySurveyFlags:         string(ctx.QueryArgs().Peek("only_evaluate_survey_feature_flags")) == "true",
		Now:                     time.Now(),
	}
	if r.DeviceID == "" {
		// The device id falls back to the one the person properties carry.
		if d, ok := r.PersonPropertyOverrides["$device_id"].(string); ok {
			r.DeviceID = truncateChars(d, maxDistinctIDLength)
		}
	}
	groups := body.Groups
	if groups == nil {
		groups = body.DollarGroups
	}
	if len(groups) > 0 {
		r.Groups = make(map[string]string, len(groups))
		for typ, key := range groups {
			if k := idText(key); k != "" {
				r.Groups[typ] = strings.Clone(k)
			}
		}
	}
	if body.DisableFlags {
		s.writeFlags(ctx, endpoint, nil, false, &team)
		return
	}
	results, failed, busy := s.evaluate(team, r)
	if busy {
		s.answerFlags(ctx, errFlagsBusy)
		return
	}
	s.writeFlags(ctx, endpoint, results, failed, &team)
}

// evaluate reads what r's flags depend on (the definitions, the person's and groups'
// stored properties, continuity overrides) and evaluates them, within one of the
// project's slots and flagEvaluationTimeout. A read that fails leaves what it would
// have given out and reports errorsWhileComputingFlags; busy: no slot freed in time.
func (s *Server) evaluate(team int64, r *flags.Request) (results []flags.Result, failed, busy bool) {
	c, cancel := context.WithTimeout(context.Background(), flagLookupTimeout)
	defer cancel()
	defs, err := s.flags.Definitions(c, team)
	if err != nil {
		s.log.Warn("cannot read flag definitions", "team", team, "err", err)
		return nil, true, false
	}
	if !anyActive(defs) {
		return nil, false, false
	}
	r.GroupTypes = s.people.GroupTypeNames(team)
	if s.location != nil {
		// Dates without a zone (2024-06-01, naive date-times) are the project's.
		r.Location = s.location(team)
	}
	if props, found, err := s.people.PersonProperties(c, team, r.DistinctID); err != nil {
		s.log.Warn("cannot read a person for flags", "team", team, "err", err)
		failed = true
	} else if found {
		r.PersonProperties = props
	}
	if static := defs.StaticCohorts(); len(static) > 0 {
		if r.StaticCohorts, err = s.people.StaticCohortsOf(c, team, r.DistinctID, static); err != nil {
			s.log.Warn("cannot read a person's static cohorts for flags", "team", team, "err", err)
			failed = true
		}
	}
	for typ, key := range r.Groups {
		index := -1
		for i, name := range r.GroupTypes {
			if name != "" && name == typ {
				index = i
			}
		}
		if index < 0 {
			continue
		}
		props, found, err := s.people.GroupProperties(c, team, index, key)
		if err != nil {
			s.log.Warn("cannot read a group for flags", "team", team, "err", err)
			failed = true
			continue
		}
		if found {
			if r.GroupProperties == nil {
				r.GroupProperties = make(map[string]string, len(r.Groups))
			}
			r.GroupProperties[typ] = props
		}
	}
	if continuity(defs) {
		overrides, err := s.flags.HashKeyOverrides(c, defs, r.DistinctID, r.AnonDistinctID)
		if err != nil {
			// The continuity flags answer failed (hash_key_override_error), the others as usual.
			s.log.Warn("cannot read experience continuity overrides", "team", team, "err", err)
			r.HashKeyOverrideError = true
		}
		r.HashKeyOverrides = overrides
	}
	slot, ok := s.slots.acquire(team)
	if !ok {
		return nil, false, true
	}
	defer releaseSlot(slot)
	r.Deadline = time.Now().Add(flagEvaluationTimeout)
	results, errs := flags.Evaluate(defs, r)
	return results, failed || errs, false
}

func anyActive(d *flags.Definitions) bool {
	for _, f := range d.Flags {
		if f.Active {
			return true
		}
	}
	return false
}

func continuity(d *flags.Definitions) bool {
	for _, f := range d.Flags {
		if f.Active && f.EnsureExperienceContinuity {
			return true
		}
	}
	return false
}

// runtimeOf is the runtime a request evaluates for: the body's evaluation_runtime,
// else what its User-Agent or browser headers show, else "" (not known).
func runtimeOf(ctx *fasthttp.RequestCtx, declared string) string {
	switch strings.ToLower(declared) {
	case flags.RuntimeClient:
		return flags.RuntimeClient
	case flags.RuntimeServer:
		return flags.RuntimeServer
	case "":
	default:
		// "all", and any value that is no runtime, is all: every flag. ("" would be a
		// runtime not known, which leaves out the flags of one runtime.)
		return flags.RuntimeAll
	}
	ua := jsontext.BytesToString(ctx.UserAgent())
	for _, browser := range []string{"Mozilla/", "Chrome/", "Safari/", "Firefox/", "Edge/"} {
		if strings.Contains(ua, browser) {
			return flags.RuntimeClient
		}
	}
	for _, server := range []string{"posthog-python/", "posthog-ruby/", "posthog-php/", "posthog-java/", "posthog-go/",
		"posthog-node/", "posthog-dotnet/", "posthog-elixir/", "python-requests/", "curl/"} {
		if strings.HasPrefix(ua, server) {
			return flags.RuntimeServer
		}
	}
	for _, mobile := range []string{"posthog-android/", "posthog-ios/", "posthog-react-native/", "posthog-flutter/"} {
		if strings.HasPrefix(ua, mobile) {
			return flags.RuntimeClient
		}
	}
	h := &ctx.Request.Header
	if len(h.Peek("Origin")) > 0 || len(h.Peek("Referer")) > 0 || len(h.Peek("Sec-Fetch-Mode")) > 0 ||
		len(h.Peek("Sec-Fetch-Site")) > 0 || len(h.Peek("Sec-Fetch-Dest")) > 0 {
		return flags.RuntimeClient
	}
	return ""
}

// nonFiniteAsNull rewrites the NaN, Infinity, +Infinity and -Infinity written outside
// JSON strings as null; ok is false when b has none.
func nonFiniteAsNull(b []byte) (out []byte, ok bool) {
	out = make([]byte, 0, len(b))
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		default:
			// Outside strings these words can only be the literals themselves: true,
			// false and null hold none of them.
			if n := nonFiniteWord(b[i:]); n > 0 {
				out = append(out, "null"...)
				i += n - 1
				ok = true
				continue
			}
		}
		out = append(out, c)
	}
	return out, ok
}

// nonFiniteWord is the length of the NaN or Infinity literal b starts with, or 0.
func nonFiniteWord(b []byte) int {
	for _, word := range []string{"NaN", "Infinity", "-Infinity", "+Infinity"} {
		if bytes.HasPrefix(b, []byte(word)) {
			return len(word)
		}
	}
	return 0
}

// idText is an id sent as a JSON string or number, as text; anything else is "".
func idText(raw []byte) string { return jsontext.Text(raw) }

// flagsID is an id of a /flags/ body (distinct_id, $anon_distinct_id, device_id), cut
// to maxDistinctIDLength characters as capture cuts them (see maxDistinctIDLength), and
// copied out of the body.
func flagsID(raw []byte) string {
	return strings.Clone(truncateChars(idText(raw), maxDistinctIDLength))
}

func firstRaw(a, b sonic.NoCopyRawMessage) sonic.NoCopyRawMessage {
	if len(a) > 0 && string(a) != "null" {
		return a
	}
	return b
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstMap(a, b map[string]any) map[string]any {
	if a != nil {
		return a
	}
	return b
}

func firstGroupMap(a, b map[string]map[string]any) map[string]map[string]any {
	if a != nil {
		return a
	}
	return b
}

func firstKeys(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}

// The answers. v2 (`flags`, each flag's details) is what every current SDK asks for;
// the legacy shapes are what older SDKs and /decide/ ask for.

type flagDetails struct {
	Key      string        `json:"key"`
	Enabled  bool          `json:"enabled"`
	Variant  *string       `json:"variant"`
	Reason   flagReason    `json:"reason"`
	Metadata flagsMetadata `json:"metadata"`
	Failed   bool          `json:"failed,omitempty"`
}

type flagReason struct {
	Code           string `json:"code"`
	ConditionIndex *int   `json:"condition_index"`
	Description    string `json:"description"`
}

type flagsMetadata struct {
	ID            int64   `json:"id"`
	Version       int     `json:"version"`
	Description   *string `json:"description"`
	Payload       *string `json:"payload"`
	HasExperiment bool    `json:"has_experiment"`
}

// flagsAnswer is every shape's fields; each shape sets the ones it has.
type flagsAnswer struct {
	Flags                    *map[string]flagDetails `json:"flags,omitempty"`
	FeatureFlags             any                     `json:"featureFlags,omitempty"`
	FeatureFlagPayloads      *map[string]string      `json:"featureFlagPayloads,omitempty"`
	ErrorsWhileComputingFlag bool                    `json:"errorsWhileComputingFlags"`
	RequestID                string                  `json:"requestId"`
	EvaluatedAt              int64                   `json:"evaluatedAt"`
	*remoteConfigFields
}

// writeFlags answers with results in the shape the endpoint and its v and config
// parameters ask for. team is nil for an answer to no project (a GET).
func (s *Server) writeFlags(ctx *fasthttp.RequestCtx, endpoint flagsEndpoint, results []flags.Result, failed bool, team *int64) {
	args := ctx.QueryArgs()
	version, config := 0, false
	if v := args.Peek("v"); len(v) > 0 {
		version, _ = strconv.Atoi(string(v))
	}
	if c := args.Peek("config"); len(c) > 0 {
		config = string(c) == "true" || string(c) == "1"
	}
	if endpoint == endpointDecide {
		// /decide/ always carries the config; v4 and later are the v2 shape.
		config = true
		switch {
		case version >= 4:
			version = 2
		case version == 3:
			version = 1
		case version == 2:
			version = -2 // the map of enabled flags
		default:
			version = -1 // the list of enabled keys
		}
	} else if len(args.Peek("v")) == 0 && len(args.Peek("config")) == 0 {
		version, config = 2, true
	}
	if dropped := boundPayloads(results); dropped > 0 && team != nil {
		s.log.Warn("a flags answer leaves out payloads past its limit", "team", *team, "payloads", dropped)
		failed = true
	}
	answer := flagsAnswer{
		ErrorsWhileComputingFlag: failed,
		RequestID:                uuid.NewString(),
		EvaluatedAt:              time.Now().UnixMilli(),
	}
	switch {
	case version >= 2:
		details := make(map[string]flagDetails, len(results))
		for _, r := range results {
			details[r.Key] = detailsOf(r)
		}
		answer.Flags = &details
	case version == -1:
		enabled := []string{}
		for _, r := range results {
			if r.Enabled {
				enabled = append(enabled, r.Key)
			}
		}
		answer.FeatureFlags = enabled
	default:
		values := make(map[string]any, len(results))
		payloads := map[string]string{}
		for _, r := range results {
			if version == -2 && !r.Enabled {
				continue
			}
			values[r.Key] = valueOf(r)
			if r.Enabled && r.Payload != nil {
				payloads[r.Key] = *r.Payload
			}
		}
		answer.FeatureFlags = values
		if version != -2 {
			answer.FeatureFlagPayloads = &payloads
		}
	}
	if config {
		has := false
		if team != nil {
			has = s.hasFlags(*team)
		}
		answer.remoteConfigFields = newRemoteConfig("", has)
	}
	body, err := sonic.Marshal(answer)
	if err != nil {
		s.log.Error("cannot encode a flags answer", "err", err)
		s.answerFlags(ctx, errUnavailable)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
	countFlagsRequest(fasthttp.StatusOK)
}

// boundPayloads leaves out (as null) the payloads of results past the first
// flags.MaxProjectPayloadBytes of them, in the order of results, and says how many it
// left out. The flags API keeps a project's payloads within that bound, so this only
// holds back flags stored before it: their answer would be as large as their payloads.
func boundPayloads(results []flags.Result) (dropped int) {
	room := flags.MaxProjectPayloadBytes
	for i := range results {
		if p := results[i].Payload; p != nil {
			if len(*p) > room {
				results[i].Payload = nil
				dropped++
				continue
			}
			room -= len(*p)
		}
	}
	return dropped
}

func detailsOf(r flags.Result) flagDetails {
	d := flagDetails{
		Key:     r.Key,
		Enabled: r.Enabled,
		Reason:  flagReason{Code: r.Reason.Code, ConditionIndex: r.Reason.ConditionIndex, Description: r.Reason.Description},
		Metadata: flagsMetadata{ID: r.ID, Version: r.Version, Payload: r.Payload,
			HasExperiment: r.HasExperiment},
		Failed: r.Failed,
	}
	if r.Variant != "" {
		v := r.Variant
		d.Variant = &v
	}
	return d
}

// valueOf is a flag's value in the legacy shapes: its variant, or whether it is on.
func valueOf(r flags.Result) any {
	if r.Variant != "" {
		return r.Variant
	}
	return r.Enabled
}

// hasFlags reports whether the project has an active flag, for the remote config's
// hasFeatureFlags (posthog-js asks /flags/ on load only when it is true).
func (s *Server) hasFlags(team int64) bool {
	c, cancel := context.WithTimeout(context.Background(), flagLookupTimeout)
	defer cancel()
	defs, err := s.flags.Definitions(c, team)
	if err != nil {
		// Not knowing, say there are: the cost is one /flags/ request.
		return true
	}
	return anyActive(defs)
}

// remoteConfigFields are the remote config posthog-js reads on load. hedge has no
// session recording, heatmaps, site apps or toolbar, so it says so, and posthog-js
// loads none of their scripts.
//
// It has no surveys either, but says nothing of them rather than false: posthog-js
// 1.449.2's default bundle (module.js, array.js) loads the surveys script from the
// api host, /static/surveys.js, whenever the config has a "surveys" value, false
// included (false only means "no surveys to show"), and hedge does not serve
// posthog-js's static files: the request would be a 404 on every page. Without the
// key posthog-js loads no surveys script (TestFlagSDKs checks every request it makes).
type remoteConfigFields struct {
	Token                 string     `json:"token,omitempty"`
	SupportedCompression  []string   `json:"supportedCompression"`
	HasFeatureFlags       bool       `json:"hasFeatureFlags"`
	CapturePerformance    bool       `json:"capturePerformance"`
	AutocaptureExceptions bool       `json:"autocaptureExceptions"`
	SessionRecording      bool       `json:"sessionRecording"`
	Heatmaps              bool       `json:"heatmaps"`
	IsAuthenticated       bool       `json:"isAuthenticated"`
	ToolbarParams         struct{}   `json:"toolbarParams"`
	SiteApps              []struct{} `json:"siteApps"`
}

func newRemoteConfig(token string, hasFlags bool) *remoteConfigFields {
	return &remoteConfigFields{Token: token, SupportedCompression: []string{"gzip", "gzip-js"}, HasFeatureFlags: hasFlags,
		SiteApps: []struct{}{}}
}

// remoteConfig answers /array/<token>/config (the JSON object) and config.js (a script
// that hands it to posthog-js). An unknown token is 404, as in PostHog.
func (s *Server) remoteConfig(ctx *fasthttp.RequestCtx, endpoint flagsEndpoint, token string) {
	if !ctx.IsGet() && !ctx.IsHead() {
		s.answerFlags(ctx, errMethodNotAllowed)
		return
	}
	team, ok := s.teams(token)
	if !ok {
		s.answerFlags(ctx, errNotFound)
		return
	}
	config, err := sonic.Marshal(newRemoteConfig(token, s.hasFlags(team)))
	if err != nil {
		s.log.Error("cannot encode a remote config", "err", err)
		s.answerFlags(ctx, errUnavailable)
		return
	}
	if endpoint == endpointConfig {
		ctx.SetContentType("application/json")
		ctx.SetBody(config)
		countFlagsRequest(fasthttp.StatusOK)
		return
	}
	// The token is a known project token, so it is JSON text as it stands; it is quoted
	// as JSON all the same.
	quoted, _ := sonic.MarshalString(token)
	var js bytes.Buffer
	js.WriteString("(function() {\n  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n  window._POSTHOG_REMOTE_CONFIG[")
	js.WriteString(quoted)
	js.WriteString("] = {\n    config: ")
	js.Write(config)
	js.WriteString(",\n    siteApps: []\n  };\n})();\n")
	ctx.SetContentType("application/javascript")
	ctx.SetBody(js.Bytes())
	countFlagsRequest(fasthttp.StatusOK)
}

func (s *Server) answerFlags(ctx *fasthttp.RequestCtx, err *captureError) {
	if err.status == http.StatusServiceUnavailable {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds))
	}
	if err.status == http.StatusMethodNotAllowed {
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, POST, OPTIONS, HEAD")
	}
	ctx.SetStatusCode(err.status)
	if len(err.body) > 0 && err.body[0] == '{' {
		ctx.SetContentType("application/json")
	} else {
		ctx.SetContentType("text/plain; charset=utf-8")
	}
	ctx.SetBody(err.body)
	countFlagsRequest(err.status)
}

// Counters of the flag routes, beside capture's at /metrics.
var flagsRequestsTotal = func() map[int]*metrics.Counter {
	m := map[int]*metrics.Counter{}
	for _, status := range []int{200, 204, 400, 401, 404, 405, 413, 429, 503} {
		m[status] = metrics.NewCounter(fmt.Sprintf(`hedge_flags_requests_total{status="%d"}`, status))
	}
	return m
}()

func countFlagsRequest(status int) {
	if c := flagsRequestsTotal[status]; c != nil {
		c.Inc()
	}
}
