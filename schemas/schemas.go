// Package schemas holds hedge's contracts as files, embedded in the binary: the SQL
// migrations that build the DuckDB warehouse (applied in order by the warehouse at
// start), the OpenAPI description of every route, and the dashboard template schema
// with the built-in templates.
//
// Migrations are append-only: a released file is never edited; a change to the schema
// is a new file with the next number.
package schemas

import "embed"

// Migrations holds migrations/NNNN_name.sql; NNNN is the schema version the file
// brings the database to.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// OpenAPI is the OpenAPI 3 description of the management and capture APIs.
//
//go:embed openapi.yaml
var OpenAPI []byte

// DashboardTemplateSchema is the JSON Schema of a dashboard template: what
// create_from_template_json takes, and what the built-in templates are.
//
//go:embed dashboard_template_schema.json
var DashboardTemplateSchema []byte

// DashboardTemplates holds dashboard_templates/<KEY>.json, the templates that a
// dashboard's use_template names.
//
//go:embed dashboard_templates/*.json
var DashboardTemplates embed.FS
