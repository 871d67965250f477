package admin

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the zones of timezones load wherever hedge runs, whatever the host has
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
	"github.com/hedge-analytics/hedge/warehouse"
)

func (a *API) bindProjects() {
	a.handle(fiber.MethodGet, "/organizations/:organization_id/projects/", "project:read", a.projectList)
	a.handle(fiber.MethodPost, "/organizations/:organization_id/projects/", "project:write", a.projectCreate)
	a.handle(fiber.MethodGet, "/organizations/:organization_id/projects/:id/", "project:read", a.projectRetrieve)
	a.handle(fiber.MethodPatch, "/organizations/:organization_id/projects/:id/", "project:write", a.projectUpdate)
	// The project's own routes, as PostHog serves them beside the organization's.
	a.handle(fiber.MethodGet, "/projects/:project_id/", "project:read", a.projectRetrieveOwn)
	a.handle(fiber.MethodPatch, "/projects/:project_id/", "project:write", a.projectUpdate)
}

// projectListItem carries exactly the fields of a project in the projects list.
type projectListItem struct {
	ID                         int64           `json:"id"`
	UUID                       string          `json:"uuid"`
	Organization               string          `json:"organization"`
	APIToken                   string          `json:"api_token"`
	Name                       string          `json:"name"`
	CompletedSnippetOnboarding bool            `json:"completed_snippet_onboarding"`
	HasCompletedOnboardingFor  json.RawMessage `json:"has_completed_onboarding_for"`
	IngestedEvent              bool            `json:"ingested_event"`
	IsDemo                     bool            `json:"is_demo"`
	Timezone                   string          `json:"timezone"`
	AccessControl              bool            `json:"access_control"`
}

// GET /api/organizations/{organization_id}/projects/ (project:read)
// The organization's projects that the caller may reach, oldest first: a private
// project is listed only to those who reach it (projectLevelSQL), as PostHog lists
// the projects visible to the user. A key scoped to some projects may not list them:
// PostHog answers 403, as on every endpoint that is not one project's.
func (a *API) projectList(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	return listPage(c, a, listQuery[projectListItem]{
		what:  fmt.Sprintf("projects of %s", m.organizationID),
		count: `SELECT count(*) FROM meta.projects WHERE ` + projectVisible,
		list:  projectListColumns + ` WHERE ` + projectVisible + ` ORDER BY id`,
		args:  projectVisibleArgs(m.organizationID, p),
		scan:  scanProjectListItem,
	})
}

// projectVisible is the condition on meta.projects for the projects of an organization
// that a key reaches: those its user may reach (reachableProjectIDs), all of them or
// those in its scoped_teams. Its arguments are projectVisibleArgs.
const projectVisible = `organization_id = ? AND id IN ` + reachableProjectIDs + `
	AND (len(?::BIGINT[]) = 0 OR list_contains(?::BIGINT[], id))`

func projectVisibleArgs(organizationID uuid.UUID, p *principal) []any {
	return []any{organizationID, p.userID, nonNil(p.scopedTeams), nonNil(p.scopedTeams)}
}

// nonNil makes sure an empty list binds as [] and not as NULL.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

const projectListColumns = `SELECT id, uuid::VARCHAR, organization_id::VARCHAR, api_token, name, completed_snippet_onboarding,
	has_completed_onboarding_for, ingested_event, is_demo, timezone, access_control FROM meta.projects`

func scanProjectListItem(row records.Scanner) (projectListItem, error) {
	var it projectListItem
	var onboarding *string
	err := row.Scan(&it.ID, &it.UUID, &it.Organization, &it.APIToken, &it.Name, &it.CompletedSnippetOnboarding,
		&onboarding, &it.IngestedEvent, &it.IsDemo, &it.Timezone, &it.AccessControl)
	if onboarding != nil {
		it.HasCompletedOnboardingFor = json.RawMessage(*onboarding)
	}
	return it, err
}

// listProjects reads the organization's projects that the key reaches (projectVisible),
// oldest first, at most limit of them when limit is positive.
func listProjects(ctx context.Context, q querier, organizationID uuid.UUID, p *principal, limit int) ([]projectListItem, error) {
	query := projectListColumns + ` WHERE ` + projectVisible + ` ORDER BY id`
	args := projectVisibleArgs(organizationID, p)
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return records.All(ctx, q, fmt.Sprintf("projects of %s", organizationID), scanProjectListItem, query, args...)
}

// projectFields are the writable project fields that have a column of their own
// (the list shows them, or they are looked up).
type projectFields struct {
	Name                       string  `json:"name"`
	Timezone                   string  `json:"timezone"`
	WeekStartDay               *int    `json:"week_start_day"`
	IsDemo                     bool    `json:"is_demo"`
	CompletedSnippetOnboarding bool    `json:"completed_snippet_onboarding"`
	AccessControl              bool    `json:"access_control"`
	HasCompletedOnboardingFor  rawJSON `json:"has_completed_onboarding_for"`
}

// projectSettings are the other writable fields of the OpenAPI schema's Project, stored whole
// as the JSON object of the settings column. Structured fields stay the JSON the
// client sent (after a check of their kind).
type projectSettings struct {
	ProductDescription                          *string  `json:"product_description"`
	AppURLs                                     []string `json:"app_urls"`
	SlackIncomingWebhook                        *string  `json:"slack_incoming_webhook"`
	AnonymizeIPs                                bool     `json:"anonymize_ips"`
	TestAccountFilters                          rawJSON  `json:"test_account_filters"`
	TestAccountFiltersDefaultChecked            bool     `json:"test_account_filters_default_checked"`
	PathCleaningFilters                         rawJSON  `json:"path_cleaning_filters"`
	DataAttributes                              rawJSON  `json:"data_attributes"`
	PersonDisplayNameProperties                 []string `json:"person_display_name_properties"`
	CorrelationConfig                           rawJSON  `json:"correlation_config"`
	AutocaptureOptOut                           *bool    `json:"autocapture_opt_out"`
	AutocaptureExceptionsOptIn                  *bool    `json:"autocapture_exceptions_opt_in"`
	AutocaptureWebVitalsOptIn                   *bool    `json:"autocapture_web_vitals_opt_in"`
	AutocaptureWebVitalsAllowedMetrics          rawJSON  `json:"autocapture_web_vitals_allowed_metrics"`
	AutocaptureExceptionsErrorsToIgnore         rawJSON  `json:"autocapture_exceptions_errors_to_ignore"`
	CaptureConsoleLogOptIn                      *bool    `json:"capture_console_log_opt_in"`
	CapturePerformanceOptIn                     *bool    `json:"capture_performance_opt_in"`
	SessionRecordingOptIn                       bool     `json:"session_recording_opt_in"`
	SessionRecordingSampleRate                  rawJSON  `json:"session_recording_sample_rate"` // a decimal string, "0.00" to "1.00"
	SessionRecordingMinimumDurationMillis       *int     `json:"session_recording_minimum_duration_milliseconds"`
	SessionRecordingLinkedFlag                  rawJSON  `json:"session_recording_linked_flag"`
	SessionRecordingNetworkPayloadCaptureConfig rawJSON  `json:"session_recording_network_payload_capture_config"`
	SessionReplayConfig                         rawJSON  `json:"session_replay_config"`
	SurveyConfig                                rawJSON  `json:"survey_config"`
	PrimaryDashboard                            *int64   `json:"primary_dashboard"`
	LiveEventsColumns                           []string `json:"live_events_columns"`
	RecordingDomains                            []string `json:"recording_domains"`
	InjectWebApps                               *bool    `json:"inject_web_apps"`
	ExtraSettings                               rawJSON  `json:"extra_settings"`
	Modifiers                                   rawJSON  `json:"modifiers"`
	SurveysOptIn                                *bool    `json:"surveys_opt_in"`
	HeatmapsOptIn                               *bool    `json:"heatmaps_opt_in"`
	FlagsPersistenceDefault                     bool     `json:"flags_persistence_default"`
}

// defaultProjectFields are PostHog's create defaults for the column fields.
// week_start_day stays null: PostHog guesses it from the request's country,
// which hedge does not look up.
func defaultProjectFields() projectFields {
	return projectFields{Name: "Default project", Timezone: "UTC"}
}

// defaultProjectSettings are PostHog's create defaults for the other fields: those
// its create sets, and its model's field defaults for the rest.
func defaultProjectSettings() projectSettings {
	yes := true
	return projectSettings{
		AppURLs:                 []string{},
		TestAccountFilters:      rawJSON(mustJSON(testAccountFilters(""))),
		PathCleaningFilters:     rawJSON(`[]`),
		DataAttributes:          rawJSON(`["data-attr"]`),
		CorrelationConfig:       rawJSON(`{}`),
		CaptureConsoleLogOptIn:  &yes,
		CapturePerformanceOptIn: &yes,
	}
}

// genericEmailDomains are mail providers whose domain says nothing about a company,
// so they make no test-account filter.
var genericEmailDomains = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "yahoo.com": true, "hotmail.com": true, "outlook.com": true,
	"live.com": true, "msn.com": true, "aol.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"protonmail.com": true, "proton.me": true, "gmx.com": true, "gmx.de": true, "yandex.com": true,
	"mail.com": true, "zoho.com": true, "fastmail.com": true,
}

// testAccountFilters is PostHog's default test_account_filters: events from localhost,
// and persons whose email contains the organization's own e-mail domain (the domain of
// its first member with a non-generic address) when there is one.
func testAccountFilters(emailDomain string) []map[string]any {
	filters := []map[string]any{{"key": "$host", "operator": "not_regex", "value": `^(localhost|127\.0\.0\.1)($|:)`, "type": "event"}}
	if emailDomain != "" {
		filters = append([]map[string]any{{"key": "email", "operator": "not_icontains", "value": "@" + emailDomain, "type": "person"}}, filters...)
	}
	return filters
}

// organizationEmailDomain is the e-mail domain of the organization's earliest member
// with a non-generic address, or "".
func organizationEmailDomain(ctx context.Context, q querier, organizationID uuid.UUID) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT u.email FROM meta.memberships m JOIN meta.users u ON u.id = m.user_id
		WHERE m.organization_id = ? ORDER BY m.joined_at, m.id`, organizationID)
	if err != nil {
		return "", fmt.Errorf("cannot read member e-mails of %s: %w", organizationID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var email string
		if err := rows.Scan(&email); err != nil {
			return "", fmt.Errorf("cannot read member e-mails of %s: %w", organizationID, err)
		}
		if _, domain, ok := strings.Cut(email, "@"); ok && domain != "" && !genericEmailDomains[domain] {
			return domain, nil
		}
	}
	return "", rows.Err()
}

var sampleRatePattern = regexp.MustCompile(`^(0(\.\d{1,2})?|1(\.0{1,2})?)$`)

// timezoneList is the IANA time zone names of the tz database Go embeds
// (time/tzdata): the entries of $GOROOT/lib/time/zoneinfo.zip, one a line. The
// embedded zip cannot be listed at run time, so the names are kept here, and
// TestTimezoneList fails when they drift from the toolchain's (go test -run
// TestTimezoneList -update-timezones ./admin rewrites the file).
//
//go:embed timezones.txt
var timezoneList string

// timezones is the set of timezoneList: what a project's timezone may be. A fixed set,
// so that the answer does not depend on the host, whose zoneinfo directory also has
// files that are not zones (localtime, posixrules, posix/..., right/...).
var timezones = func() map[string]bool {
	set := map[string]bool{}
	for _, name := range strings.Fields(timezoneList) {
		set[name] = true
	}
	return set
}()

// validTimezone reports whether name is an IANA time zone name, as PostHog checks
// against pytz.all_timezones.
func validTimezone(name string) bool { return timezones[name] }

// validate checks the column fields on create.
func (f *projectFields) validate() error {
	switch {
	case strings.TrimSpace(f.Name) == "":
		return errBlank("name")
	case utf8.RuneCountInString(f.Name) > 200:
		return errMaxLength("name", 200)
	case !validTimezone(f.Timezone):
		return errInvalidChoice("timezone", f.Timezone)
	case f.WeekStartDay != nil && *f.WeekStartDay != 0 && *f.WeekStartDay != 1:
		return errInvalidChoice("week_start_day", strconv.Itoa(*f.WeekStartDay))
	}
	return checkJSONKind("has_completed_onboarding_for", f.HasCompletedOnboardingFor, '{')
}

// validate checks the settings on create and normalises them as PostHog stores them.
func (s *projectSettings) validate() error {
	kinds := []struct {
		attr  string
		value rawJSON
		kind  byte
	}{
		{"test_account_filters", s.TestAccountFilters, '['},
		{"path_cleaning_filters", s.PathCleaningFilters, '['},
		{"data_attributes", s.DataAttributes, '['},
		{"correlation_config", s.CorrelationConfig, '{'},
		{"autocapture_web_vitals_allowed_metrics", s.AutocaptureWebVitalsAllowedMetrics, '['},
		{"autocapture_exceptions_errors_to_ignore", s.AutocaptureExceptionsErrorsToIgnore, '['},
		{"session_recording_linked_flag", s.SessionRecordingLinkedFlag, '{'},
		{"session_recording_network_payload_capture_config", s.SessionRecordingNetworkPayloadCaptureConfig, '{'},
		{"session_replay_config", s.SessionReplayConfig, '{'},
		{"survey_config", s.SurveyConfig, '{'},
		{"extra_settings", s.ExtraSettings, '{'},
		{"modifiers", s.Modifiers, '{'},
	}
	for _, k := range kinds {
		if err := checkJSONKind(k.attr, k.value, k.kind); err != nil {
			return err
		}
	}
	if s.SessionRecordingMinimumDurationMillis != nil {
		if ms := *s.SessionRecordingMinimumDurationMillis; ms < 0 || ms > 30000 {
			return errValidation("session_recording_minimum_duration_milliseconds", "invalid_input",
				"Ensure this value is between 0 and 30000.")
		}
	}
	if len(s.SessionRecordingSampleRate) > 0 {
		// A decimal from 0 to 1 with two places, sent as a string or a number, kept as a
		// string ("0.50"), as PostHog's DecimalField.
		text := strings.Trim(string(s.SessionRecordingSampleRate), `"`)
		rate, err := strconv.ParseFloat(text, 64)
		if err != nil || !sampleRatePattern.MatchString(text) {
			return errValidation("session_recording_sample_rate", "invalid_input", "A decimal from 0.00 to 1.00 is required.")
		}
		s.SessionRecordingSampleRate = rawJSON(strconv.Quote(strconv.FormatFloat(rate, 'f', 2, 64)))
	}
	// PostHog drops null and empty app URLs.
	urls := []string{}
	for _, u := range s.AppURLs {
		if u != "" {
			urls = append(urls, u)
		}
	}
	s.AppURLs = urls
	return nil
}

// checkJSONKind checks that a structured field is null or a JSON value of kind
// ('{' object, '[' array), with DRF's ListField and DictField answers.
func checkJSONKind(attr string, value rawJSON, kind byte) error {
	if len(value) == 0 || value[0] == kind {
		return nil
	}
	if kind == '[' {
		return errValidation(attr, "not_a_list", fmt.Sprintf("Expected a list of items but got type %q.", pythonTypeOf(value)))
	}
	return errValidation(attr, "not_a_dict", fmt.Sprintf("Expected a dictionary of items but got type %q.", pythonTypeOf(value)))
}

// projectRecord is the full project (create and retrieve). Of PostHog's
// read-only fields: live_events_token is null (hedge has no live events stream to
// authenticate), and person_on_events_querying_enabled, default_modifiers and
// product_intents are strings, as the API's contract types them: "true" (hedge writes person_id
// on every event), "{}" (no modifiers beyond the defaults) and "[]" (no intents).
type projectRecord struct {
	ID                            int64     `json:"id"`
	UUID                          string    `json:"uuid"`
	Organization                  string    `json:"organization"`
	APIToken                      string    `json:"api_token"`
	CreatedAt                     time.Time `json:"created_at"`
	UpdatedAt                     time.Time `json:"updated_at"`
	EffectiveMembershipLevel      *int      `json:"effective_membership_level"`
	HasGroupTypes                 bool      `json:"has_group_types"`
	LiveEventsToken               *string   `json:"live_events_token"`
	IngestedEvent                 bool      `json:"ingested_event"`
	PersonOnEventsQueryingEnabled string    `json:"person_on_events_querying_enabled"`
	DefaultModifiers              string    `json:"default_modifiers"`
	ProductIntents                string    `json:"product_intents"`
	// MaterializedProperties are the properties the project chose to have columns of
	// their own in events (warehouse.SetMaterializedProperties, whose table they are).
	MaterializedProperties []string `json:"materialized_properties"`
	projectFields
	projectSettings
}

// materializedInput is the materialized_properties of a PATCH: absent, or a list.
// json.RawMessage, not rawJSON: it keeps a null, which is refused.
type materializedInput struct {
	MaterializedProperties json.RawMessage `json:"materialized_properties"`
}

// keys are the properties sent (ok) or nil (absent), refused in DRF's words when they
// are null, not a list of strings, or a choice the warehouse refuses.
func (in *materializedInput) keys() (keys []string, ok bool, err error) {
	const attr = "materialized_properties"
	switch string(in.MaterializedProperties) {
	case "":
		return nil, false, nil
	case "null":
		return nil, false, errNull(attr)
	}
	if err := decodeJSON(in.MaterializedProperties, &keys, attr); err != nil {
		return nil, false, err
	}
	if err := warehouse.CheckMaterializedProperties(keys); err != nil {
		return nil, false, errValidation(attr, "invalid_input", err.Error())
	}
	return keys, true, nil
}

// POST /api/organizations/{organization_id}/projects/ (project:write)
// Creates a project with PostHog's defaults for every field not sent, its primary
// dashboard included (not for a demo project, as in PostHog). Admins and owners may;
// members only a demo project (is_demo: true), as in PostHog. The new token is
// accepted by the capture listener as soon as this answers.
func (a *API) projectCreate(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationWide(c, p)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	fields := defaultProjectFields()
	settings := defaultProjectSettings()
	domain, err := organizationEmailDomain(ctx, a.db, m.organizationID)
	if err != nil {
		return err
	}
	settings.TestAccountFilters = rawJSON(mustJSON(testAccountFilters(domain)))
	if err := bindBody(c, &fields); err != nil {
		return err
	}
	if err := bindBody(c, &settings); err != nil {
		return err
	}
	if !fields.IsDemo {
		if err := m.atLeast(levelAdmin); err != nil {
			return err
		}
	}
	if err := fields.validate(); err != nil {
		return err
	}
	if err := settings.validate(); err != nil {
		return err
	}
	if settings.PrimaryDashboard != nil {
		// A new project has no dashboards yet; PostHog refuses this on create too.
		return errValidation("primary_dashboard", "invalid_input", "A new project has no dashboards; set its primary dashboard after creating one.")
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin creating project %q: %w", fields.Name, err)
	}
	defer tx.Rollback()
	id, token, err := insertProjectWith(ctx, tx, m.organizationID, fields, settings)
	if err != nil {
		return err
	}
	if !fields.IsDemo {
		if err := addPrimaryDashboard(ctx, tx, id, p.userID); err != nil {
			return err
		}
	}
	if fields.AccessControl && m.level < levelAdmin {
		// A member (who may create only a demo project) creating a private one is not
		// shut out of it: they become its explicit admin.
		if err := insertExplicitMember(ctx, tx, id, m.organizationID, p.userID, levelAdmin); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit project %q: %w", fields.Name, err)
	}
	a.tokens.set(token, id, fields.Timezone)
	r, err := a.loadProject(ctx, m, id)
	if err != nil {
		return err
	}
	if level, ok, err := projectLevelOf(ctx, a.db, id, p.userID); err != nil {
		return err
	} else if ok {
		r.EffectiveMembershipLevel = &level
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

// GET /api/organizations/{organization_id}/projects/{id}/ (project:read)
// A private project the caller may not reach is not found, as it is not listed
// (PostHog looks it up among the projects visible to the user); the routes under
// /api/projects/{id}/ answer 403 for it instead, as PostHog's do.
func (a *API) projectRetrieve(c *fiber.Ctx) error {
	p := principalOf(c)
	m, err := a.organizationOf(c, p)
	if err != nil {
		return err
	}
	notFound := errNotFound("Project not found.")
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil {
		return notFound
	}
	ctx := c.UserContext()
	r, err := a.loadProject(ctx, m, id)
	if err != nil {
		return err
	}
	pr, err := a.reachProject(ctx, p, id, notFound, notFound)
	if err != nil {
		return err
	}
	r.EffectiveMembershipLevel = &pr.level
	return c.JSON(r)
}

// GET /api/projects/{project_id}/ (project:read)
// The project as GET /api/organizations/{organization_id}/projects/{id}/ answers it,
// for a caller who reaches it (requireProject; 403 for a private project they may not
// reach, as on every route under /api/projects/{id}/).
func (a *API) projectRetrieveOwn(c *fiber.Ctx) error {
	p := principalOf(c)
	pr, err := a.projectOf(c, p)
	if err != nil {
		return err
	}
	r, err := a.projectRecordFor(c.UserContext(), p, pr)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// projectRecordFor is the full record of pr, with the caller's effective level in it.
func (a *API) projectRecordFor(ctx context.Context, p *principal, pr project) (projectRecord, error) {
	r, err := a.loadProject(ctx, membership{organizationID: pr.organizationID, userID: p.userID}, pr.id)
	if err != nil {
		return r, err
	}
	level := pr.level
	r.EffectiveMembershipLevel = &level
	return r, nil
}

// PATCH /api/projects/{project_id}/ and /api/organizations/{organization_id}/projects/{id}/
// (project:write)
// Changes the fields sent, as PostHog's partial update: every member who reaches the
// project may (PostHog's TeamMemberLightManagementPermission); access_control only
// an admin or owner of the organization. Read-only fields sent are ignored, as DRF
// ignores them. primary_dashboard must be a dashboard of the project. A new time zone
// reaches the capture listener's token index at once, and results cached under the
// old settings are never served again (their key holds the settings).
// materialized_properties, a list of at most warehouse.MaxMaterializedProperties
// event property keys, gives each a column of its own in events for the project
// (warehouse.SetMaterializedProperties): queries read the same answers, faster, once
// the rows stored before are filled in the background.
func (a *API) projectUpdate(c *fiber.Ctx) error {
	p := principalOf(c)
	ctx := c.UserContext()
	var pr project
	var err error
	if c.Params("organization_id") != "" {
		// Under an organization: a project of another one, or one the caller may not
		// reach, is not found, as its retrieve answers.
		var m membership
		if m, err = a.organizationOf(c, p); err != nil {
			return err
		}
		notFound := errNotFound("Project not found.")
		id, err := strconv.ParseInt(c.Params("id"), 10, 64)
		if err != nil {
			return notFound
		}
		if pr, err = a.reachProject(ctx, p, id, notFound, notFound); err != nil {
			return err
		}
		if pr.organizationID != m.organizationID {
			return notFound
		}
	} else if pr, err = a.projectOf(c, p); err != nil {
		return err
	}
	r, err := a.projectRecordFor(ctx, p, pr)
	if err != nil {
		return err
	}
	wasPrivate, primary := r.AccessControl, r.PrimaryDashboard
	if err := bindBody(c, &r.projectFields); err != nil {
		return err
	}
	if err := bindBody(c, &r.projectSettings); err != nil {
		return err
	}
	if err := r.projectFields.validate(); err != nil {
		return err
	}
	if err := r.projectSettings.validate(); err != nil {
		return err
	}
	var materialized materializedInput
	if err := bindBody(c, &materialized); err != nil {
		return err
	}
	chosen, choose, err := materialized.keys()
	if err != nil {
		return err
	}
	if r.AccessControl != wasPrivate {
		var orgLevel int
		if err := a.db.QueryRowContext(ctx, `SELECT level FROM meta.memberships WHERE organization_id = ? AND user_id = ?`,
			pr.organizationID, p.userID).Scan(&orgLevel); err != nil {
			return fmt.Errorf("cannot read the membership of user %d in %s: %w", p.userID, pr.organizationID, err)
		}
		if orgLevel < levelAdmin {
			return errAccessLevel()
		}
	}
	if r.PrimaryDashboard != nil && (primary == nil || *r.PrimaryDashboard != *primary) {
		var found bool
		if err := a.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM meta.dashboards WHERE id = ? AND team_id = ? AND NOT deleted`,
			*r.PrimaryDashboard, pr.id).Scan(&found); err != nil {
			return fmt.Errorf("cannot look up dashboard %d of project %d: %w", *r.PrimaryDashboard, pr.id, err)
		}
		if !found {
			return errValidation("primary_dashboard", "invalid_input", "Dashboard does not belong to this team.")
		}
	}
	var onboarding *string
	if len(r.HasCompletedOnboardingFor) > 0 {
		text := string(r.HasCompletedOnboardingFor)
		onboarding = &text
	}
	if _, err := a.db.ExecContext(ctx, `UPDATE meta.projects SET name = ?, timezone = ?, week_start_day = ?, is_demo = ?,
			completed_snippet_onboarding = ?, access_control = ?, has_completed_onboarding_for = ?, settings = ?, updated_at = now()
		WHERE id = ?`, r.Name, r.Timezone, r.WeekStartDay, r.IsDemo, r.CompletedSnippetOnboarding, r.AccessControl,
		onboarding, mustJSON(r.projectSettings), pr.id); err != nil {
		return fmt.Errorf("cannot update project %d: %w", pr.id, err)
	}
	a.tokens.set(r.APIToken, pr.id, r.Timezone)
	if choose {
		if err := a.warehouse.SetMaterializedProperties(ctx, pr.id, chosen); err != nil {
			return err
		}
	}
	// The level may change with access_control (explicit members count only then).
	if pr, err = a.reachProject(ctx, p, pr.id, errNotFound("Project not found."), errNoProjectAccess); err != nil {
		return err
	}
	r, err = a.projectRecordFor(ctx, p, pr)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// loadProject reads the full record of a project of m's organization; a project of
// another organization is not found. Its effective_membership_level is m's level in
// the organization, which the caller replaces with the effective level in the project
// (projectLevelSQL) when they differ.
func (a *API) loadProject(ctx context.Context, m membership, id int64) (projectRecord, error) {
	r := projectRecord{ID: id, PersonOnEventsQueryingEnabled: "true", DefaultModifiers: "{}", ProductIntents: "[]"}
	r.projectFields = defaultProjectFields()
	r.projectSettings = defaultProjectSettings()
	var settings string
	err := a.db.QueryRowContext(ctx, `
		SELECT uuid::VARCHAR, organization_id::VARCHAR, api_token, created_at, updated_at, ingested_event,
		       name, timezone, week_start_day, is_demo, completed_snippet_onboarding, access_control,
		       has_completed_onboarding_for, settings
		FROM meta.projects p WHERE id = ? AND organization_id = ?`, id, m.organizationID).
		Scan(&r.UUID, &r.Organization, &r.APIToken, &r.CreatedAt, &r.UpdatedAt, &r.IngestedEvent,
			&r.Name, &r.Timezone, &r.WeekStartDay, &r.IsDemo, &r.CompletedSnippetOnboarding, &r.AccessControl,
			&r.HasCompletedOnboardingFor, &settings)
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound("Project not found.")
	}
	if err != nil {
		return r, fmt.Errorf("cannot read project %d: %w", id, err)
	}
	// Settings stored before a field existed keep that field's default.
	if err := json.Unmarshal([]byte(settings), &r.projectSettings); err != nil {
		return r, fmt.Errorf("cannot read the settings of project %d: %w", id, err)
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	groupTypes, err := a.warehouse.GroupTypes(ctx, id)
	if err != nil {
		return r, err
	}
	r.HasGroupTypes = len(groupTypes) > 0
	r.MaterializedProperties = a.warehouse.MaterializedProperties(id)
	level := m.level
	r.EffectiveMembershipLevel = &level
	return r, nil
}

// newProjectToken makes a project API token in PostHog's shape: phc_ and 43 base62 characters.
func newProjectToken() string { return "phc_" + randomToken(32, 43) }

// insertProject creates a project with PostHog's defaults and returns its id and API
// token. The caller adds the token to ProjectTokens once its transaction commits.
func insertProject(ctx context.Context, q querier, organizationID uuid.UUID, name string) (int64, string, error) {
	fields := defaultProjectFields()
	fields.Name = name
	settings := defaultProjectSettings()
	domain, err := organizationEmailDomain(ctx, q, organizationID)
	if err != nil {
		return 0, "", err
	}
	settings.TestAccountFilters = rawJSON(mustJSON(testAccountFilters(domain)))
	return insertProjectWith(ctx, q, organizationID, fields, settings)
}

// insertProjectWith creates a project from validated fields and settings and returns
// its id and API token. The caller adds the token to ProjectTokens once its
// transaction commits.
func insertProjectWith(ctx context.Context, q querier, organizationID uuid.UUID, f projectFields, s projectSettings) (int64, string, error) {
	token := newProjectToken()
	var onboarding *string
	if len(f.HasCompletedOnboardingFor) > 0 {
		text := string(f.HasCompletedOnboardingFor)
		onboarding = &text
	}
	var id int64
	err := q.QueryRowContext(ctx, `
		INSERT INTO meta.projects (uuid, organization_id, name, api_token, timezone, week_start_day, is_demo,
			completed_snippet_onboarding, access_control, has_completed_onboarding_for, settings, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), now()) RETURNING id`,
		uuid.Must(uuid.NewV7()), organizationID, f.Name, token, f.Timezone, f.WeekStartDay, f.IsDemo,
		f.CompletedSnippetOnboarding, f.AccessControl, onboarding, mustJSON(s)).Scan(&id)
	if err != nil {
		return 0, "", fmt.Errorf("cannot create project %q in %s: %w", f.Name, organizationID, err)
	}
	return id, token, nil
}

// primaryDashboardName and primaryDashboardTemplate make the dashboard a new project
// starts with: PostHog's "My App Dashboard" from its DEFAULT_APP template.
const (
	primaryDashboardName     = "My App Dashboard"
	primaryDashboardTemplate = "DEFAULT_APP"
)

// addPrimaryDashboard gives a new project, in tx, PostHog's default dashboard (pinned,
// with the tiles of the DEFAULT_APP template) and makes it the project's
// primary_dashboard, as PostHog's Team.objects.create_with_data does for every
// project but a demo one. userID, who creates the project, creates
// the dashboard and its insights.
func addPrimaryDashboard(ctx context.Context, tx *sql.Tx, team, userID int64) error {
	template, ok, err := builtinTemplate(primaryDashboardTemplate)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cannot create the primary dashboard of project %d: no built-in template %s", team, primaryDashboardTemplate)
	}
	filters := "{}"
	if len(template.DashboardFilters) > 0 {
		filters = string(template.DashboardFilters)
	}
	// creation_mode "default": PostHog creates this dashboard plainly, then fills it
	// from the template.
	id, err := insertDashboard(ctx, tx, team, userID, newDashboard{
		name: primaryDashboardName, description: template.DashboardDescription, pinned: true, creationMode: "default",
		restrictionLevel: restrictionEveryoneEdits, filters: filters, tags: normalizeTags(template.Tags),
		useTemplate: primaryDashboardTemplate,
	})
	if err != nil {
		return err
	}
	if err := addTemplateTiles(ctx, tx, team, id, userID, template); err != nil {
		return err
	}
	// primary_dashboard is one of the settings, kept whole as one JSON object.
	var text string
	if err := tx.QueryRowContext(ctx, `SELECT settings FROM meta.projects WHERE id = ?`, team).Scan(&text); err != nil {
		return fmt.Errorf("cannot read the settings of project %d: %w", team, err)
	}
	settings := defaultProjectSettings()
	if err := json.Unmarshal([]byte(text), &settings); err != nil {
		return fmt.Errorf("cannot read the settings of project %d: %w", team, err)
	}
	settings.PrimaryDashboard = &id
	if _, err := tx.ExecContext(ctx, `UPDATE meta.projects SET settings = ? WHERE id = ?`, mustJSON(settings), team); err != nil {
		return fmt.Errorf("cannot set the primary dashboard of project %d: %w", team, err)
	}
	return nil
}
