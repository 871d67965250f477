package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// What the server SDKs (posthog-node, posthog-go, posthog-python) download with a
// personal API key: a project's flag definitions for local evaluation, and a remote
// configuration flag's payload. The project is the one whose API token the query's
// token is. These paths are PostHog's own, outside /api/projects/{id}/: the capture
// listener forwards them here, where the keys are.

func (a *API) bindFlagDefinitions() {
	a.app.Get("/flags/definitions", a.flagDefinitions)
	a.api.Get("/feature_flag/local_evaluation", a.flagDefinitions)
	a.api.Get("/projects/@current/feature_flags/:key/remote_config", a.flagRemoteConfig)
}

// The flags service's answers to a missing or unknown project token.
var (
	errNoProjectToken = &Error{Status: fiber.StatusUnauthorized, Type: "authentication_error", Code: "not_authenticated",
		Detail: "No API token provided. Please include a valid API token in your request."}
	errUnknownProjectToken = errAuthenticationFailed("The provided API key is invalid or has expired. Please check your API key and try again.")
)

// sdkProject authenticates a server SDK: a personal API key (401 without one or with
// one that is not valid) of scope feature_flag:read (feature_flag:write implies it; 403
// otherwise), and the project of the token parameter (401 when missing or unknown),
// which the key must reach as it must reach a project of the management API (the
// rule of projectLevelSQL): its user a member of the project's organization, and of
// the project itself when it is private (403 "You don't have access to the project."
// either way, as PostHog says it; the project's token is public, so naming it confirms
// nothing), the key not scoped to other projects or organizations (PostHog's 403s).
//
// A session cookie never authenticates these routes: the capture listener serves them
// to pages of any origin, and a browser sends the console's cookies to every port of
// its host.
func (a *API) sdkProject(c *fiber.Ctx) (int64, error) {
	if key, _ := findKey(c); key == "" {
		return 0, errNotAuthenticated()
	}
	p, err := a.authenticate(c)
	if err != nil {
		return 0, err
	}
	const scope = "feature_flag:read"
	if !p.allows(scope) {
		return 0, errPermissionDenied(fmt.Sprintf("API key missing required scope '%s'", scope))
	}
	token := c.Query("token")
	if token == "" {
		return 0, errNoProjectToken
	}
	team, ok := a.tokens.Team(token)
	if !ok {
		return 0, errUnknownProjectToken
	}
	if _, err := a.reachProject(c.UserContext(), p, team, errNoProjectAccess, errNoProjectAccess); err != nil {
		return 0, err
	}
	return team, nil
}

// GET /flags/definitions?token=<phc>&send_cohorts and its older path
// GET /api/feature_flag/local_evaluation (personal API key, feature_flag:read)
// The project's flag definitions for local evaluation, cohorts always included (as
// PostHog's flags service answers, whatever send_cohorts says), with a weak ETag: a
// request whose If-None-Match holds it gets 304 and no body.
func (a *API) flagDefinitions(c *fiber.Ctx) error {
	team, err := a.sdkProject(c)
	if err != nil {
		return err
	}
	body, etag, err := a.flags.LocalEvaluation(c.UserContext(), team)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, `W/"`+etag+`"`)
	c.Set(fiber.HeaderCacheControl, "private, must-revalidate")
	if ifNoneMatch(c.Get(fiber.HeaderIfNoneMatch)) == etag {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// ifNoneMatch is the ETag an If-None-Match header holds, as PostHog reads it: one
// tag, weak (W/"x") or strong ("x"), its quotes removed.
func ifNoneMatch(header string) string {
	tag := strings.TrimSpace(header)
	if strings.HasPrefix(tag, `W/"`) {
		tag = tag[2:]
	}
	return strings.Trim(tag, `"`)
}

// GET /api/projects/@current/feature_flags/{key or id}/remote_config?token=<phc>
// (personal API key, feature_flag:read)
// The payload of a remote configuration flag that is not deleted, as JSON of the
// stored payload text: a JSON string, which SDKs decode twice. No payload: 200 with
// no body. No such flag, or one that is not a remote configuration: 404 with no body.
func (a *API) flagRemoteConfig(c *fiber.Ctx) error {
	team, err := a.sdkProject(c)
	if err != nil {
		return err
	}
	f, ok, err := a.flags.LiveFlag(c.UserContext(), team, c.Params("key"))
	if err != nil {
		return err
	}
	if !ok || !f.IsRemoteConfiguration {
		c.Status(fiber.StatusNotFound)
		return nil
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	payload, ok := f.Filters.Payloads["true"]
	if !ok || payload == "" {
		return nil
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return fmt.Errorf("cannot encode the payload of feature flag %d: %w", f.ID, err)
	}
	return c.Send(bytes.TrimSuffix(body.Bytes(), []byte("\n")))
}
