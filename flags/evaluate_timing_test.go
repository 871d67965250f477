package flags

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchmarkProject is a project of 50 flags, half with property conditions (exact,
// lists, icontains, regex, numbers, versions, dates, a cohort, a group flag), the
// others rollouts and variants, some with payloads; and a person as the SDKs send one:
// stored properties and posthog-js's request properties.
func benchmarkProject() (*Definitions, *Request) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	pct := func(p float64) *float64 { return &p }
	prop := func(key, op, value string) PropertyFilter {
		return PropertyFilter{Key: key, Type: FilterPerson, Operator: op, Value: raw(value)}
	}
	conditions := [][]PropertyFilter{
		{prop("email", "icontains", `"@acme.com"`)},
		{prop("plan", "exact", `["pro", "enterprise"]`)},
		{prop("$geoip_country_code", "exact", `["FR", "DE", "GB", "US"]`)},
		{prop("$browser", "exact", `"Chrome"`), prop("$os", "is_not", `"iOS"`)},
		{prop("app_version", "semver_gte", `"2.4.0"`)},
		{prop("signup_date", "is_date_after", `"-30d"`)},
		{prop("age", "gt", `18`)},
		{prop("$current_url", "regex", `^https://app\.example\.com/(settings|billing)`)},
		{prop("beta_tester", "exact", `true`)},
		{prop("email", "not_icontains", `"@example.org"`), prop("plan", "is_set", `"is_set"`)},
		{{Key: "id", Type: FilterCohort, Value: raw(`1`)}},
		{prop("$initial_utm_source", "exact", `"newsletter"`)},
	}
	d := &Definitions{Team: 1, Cohorts: map[int64]*Cohort{1: {ID: 1, Filters: CohortFilters{Properties: PropertyGroup{
		Type: "OR", Values: []PropertyNode{{Group: &PropertyGroup{Type: "AND", Values: []PropertyNode{
			{Filter: &PropertyFilter{Key: "email", Type: FilterPerson, Operator: "icontains", Value: raw(`"@acme.com"`)}},
			{Filter: &PropertyFilter{Key: "plan", Type: FilterPerson, Operator: "exact", Value: raw(`"pro"`)}},
		}}}},
	}}}}}
	for i := range 50 {
		f := &Flag{ID: int64(i + 1), Key: fmt.Sprintf("flag-%02d", i), Active: true, Version: 1}
		switch {
		case i < 25:
			c := conditions[i%len(conditions)]
			f.Filters.Groups = []Condition{{Properties: c, RolloutPercentage: pct(float64(50 + i))}, {RolloutPercentage: pct(5)}}
		case i < 35:
			f.Filters.Groups = []Condition{{RolloutPercentage: pct(float64(i))}}
			f.Filters.Payloads = map[string]string{"true": `{"enabled": true}`}
		case i < 45:
			f.Filters.Groups = []Condition{{}}
			f.Filters.Multivariate = &Multivariate{Variants: []Variant{
				{Key: "control", RolloutPercentage: 34}, {Key: "test-a", RolloutPercentage: 33}, {Key: "test-b", RolloutPercentage: 33},
			}}
		case i < 48:
			zero := 0
			f.Filters.AggregationGroupTypeIndex = &zero
			f.Filters.Groups = []Condition{{Properties: []PropertyFilter{{Key: "seats", Type: FilterGroup, Operator: "gte", Value: raw(`10`)}}, RolloutPercentage: pct(80)}}
		default:
			f.EnsureExperienceContinuity = true
			f.Filters.Groups = []Condition{{RolloutPercentage: pct(50)}}
		}
		d.Flags = append(d.Flags, f)
	}
	stored := map[string]any{
		"email": "jane@acme.com", "name": "Jane Doe", "plan": "pro", "age": 34, "signup_date": "2024-05-20T10:00:00Z",
		"company": "Acme", "beta_tester": true, "app_version": "2.5.1", "$initial_browser": "Chrome",
		"$initial_os": "Mac OS X", "$initial_referrer": "$direct", "$initial_referring_domain": "$direct",
		"$initial_current_url": "https://example.com/", "$initial_pathname": "/", "$initial_device_type": "Desktop",
		"$geoip_city_name": "Paris", "$geoip_country_code": "FR", "$geoip_country_name": "France",
		"$geoip_continent_code": "EU", "$geoip_time_zone": "Europe/Paris", "$creator_event_uuid": "0190aa3c-1f2e-7e1b-9c3d-5f6a7b8c9d0e",
	}
	storedJSON, _ := json.Marshal(stored)
	r := &Request{
		DistinctID:       "0190aa3c-1f2e-7e1b-9c3d-5f6a7b8c9d0e",
		AnonDistinctID:   "0190aa3b-0000-7000-8000-000000000001",
		Groups:           map[string]string{"company": "acme"},
		GroupTypes:       [5]string{"company"},
		PersonProperties: string(storedJSON),
		PersonPropertyOverrides: map[string]any{
			"$browser": "Chrome", "$browser_version": json.Number("126"), "$os": "Mac OS X", "$device_type": "Desktop",
			"$current_url": "https://app.example.com/settings/profile", "$pathname": "/settings/profile",
			"$referrer": "$direct", "$referring_domain": "$direct", "$lib": "web", "$lib_version": "1.449.2",
			"$screen_height": json.Number("1117"), "$screen_width": json.Number("1728"),
		},
		GroupProperties: map[string]string{"company": `{"name": "Acme", "seats": 25, "plan": "enterprise"}`},
		Now:             time.Date(2024, 6, 10, 12, 0, 0, 0, time.UTC),
	}
	return d, r
}

// BenchmarkEvaluate evaluates a project of 50 flags for one person, as /flags/ does
// per request, on one goroutine and on all (the edge's case: many requests at once).
// evals/s is the bench suite's ceiling for /flags/ (bench/stage.go).
func BenchmarkEvaluate(b *testing.B) {
	d, r := benchmarkProject()
	results, failed := Evaluate(d, r) // prepares the definitions, once
	if failed || len(results) != 50 {
		b.Fatalf("Evaluate answered %d flags, failed %v", len(results), failed)
	}
	on := 0
	for _, res := range results {
		if res.Enabled && strings.HasPrefix(res.Reason.Code, "condition") {
			on++
		}
	}
	if on < 20 {
		b.Fatalf("only %d flags matched: the person does not exercise the conditions", on)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, _ := Evaluate(d, r); len(res) != 50 {
				b.Fatal("wrong answer")
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, _ := Evaluate(d, r); len(res) != 50 {
					b.Fatal("wrong answer")
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	})
}

// BenchmarkPlan prepares the definitions, as the first evaluation after each change
// does.
func BenchmarkPlan(b *testing.B) {
	d, _ := benchmarkProject()
	b.ReportAllocs()
	for b.Loop() {
		buildPlan(d)
	}
}
