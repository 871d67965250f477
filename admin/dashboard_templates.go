package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/hedge-analytics/hedge/schemas"
)

// dashboardTemplate is a dashboard template, as schemas/dashboard_template_schema.json
// describes it: the built-in ones (use_template) and those create_from_template_json takes.
type dashboardTemplate struct {
	TemplateName         string          `json:"template_name"`
	DashboardDescription string          `json:"dashboard_description"`
	DashboardFilters     json.RawMessage `json:"dashboard_filters"`
	Variables            json.RawMessage `json:"variables"`
	Tags                 []string        `json:"tags"`
	Tiles                []templateTile  `json:"tiles"`
}

// templateTile is an insight (name, query) or a text card (body) of a template.
type templateTile struct {
	Type        string          `json:"type"` // INSIGHT or TEXT
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Query       json.RawMessage `json:"query"`
	Body        string          `json:"body"`
	Layouts     json.RawMessage `json:"layouts"`
	Color       *string         `json:"color"`
}

// templateSchema is the compiled JSON Schema of templates.
var templateSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemas.DashboardTemplateSchema))
	if err != nil {
		return nil, fmt.Errorf("cannot read the dashboard template schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("dashboard_template_schema.json", doc); err != nil {
		return nil, fmt.Errorf("cannot load the dashboard template schema: %w", err)
	}
	return c.Compile("dashboard_template_schema.json")
})

// parseTemplate checks a template against the schema; a failure is a 400 whose attr
// names the field (under attrPrefix, e.g. template__tiles__0__query).
func parseTemplate(raw json.RawMessage, attrPrefix string) (*dashboardTemplate, error) {
	schema, err := templateSchema()
	if err != nil {
		return nil, err
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, errValidation(attrPrefix, "invalid_input", "The template is not valid JSON.")
	}
	var invalid *jsonschema.ValidationError
	if err := schema.Validate(instance); errors.As(err, &invalid) {
		location, message := deepestCause(invalid)
		attr := attrPrefix
		if location != "" {
			attr += "__" + strings.ReplaceAll(strings.Trim(location, "/"), "/", "__")
		}
		return nil, errValidation(attr, "invalid_input", message)
	} else if err != nil {
		return nil, fmt.Errorf("cannot validate a template: %w", err)
	}
	var t dashboardTemplate
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("cannot read a template that passed its schema: %w", err)
	}
	return &t, nil
}

// deepestCause is where and why a template fails: the first innermost error, which
// names the field itself rather than its parents. A missing property is named by its
// own location, as DRF names a required field.
func deepestCause(e *jsonschema.ValidationError) (string, string) {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	location := e.InstanceLocation
	if missing, ok := e.ErrorKind.(*kind.Required); ok && len(missing.Missing) > 0 {
		return "/" + strings.Join(append(slices.Clone(location), missing.Missing[0]), "/"), "This field is required."
	}
	path := ""
	if len(location) > 0 {
		path = "/" + strings.Join(location, "/")
	}
	return path, e.ErrorKind.LocalizedString(englishMessages)
}

var englishMessages = message.NewPrinter(language.English)

// builtinTemplate is the template a dashboard's use_template names, from
// schemas/dashboard_templates; false for a key that has none.
func builtinTemplate(key string) (*dashboardTemplate, bool, error) {
	if strings.ContainsAny(key, "/.\\") || key == "" {
		return nil, false, nil
	}
	raw, err := schemas.DashboardTemplates.ReadFile("dashboard_templates/" + key + ".json")
	if err != nil {
		return nil, false, nil
	}
	t, err := parseTemplate(raw, "use_template")
	if err != nil {
		return nil, false, fmt.Errorf("the built-in template %s does not pass the schema: %w", key, err)
	}
	return t, true, nil
}
