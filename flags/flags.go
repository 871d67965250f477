// Package flags is hedge's feature flags: the definitions of flags and cohorts (the
// only owner of their tables), PostHog's evaluation of them as pure code, and an
// in-memory cache of each project's definitions that every change invalidates at once.
//
// The edge evaluates flags for the SDKs (/flags/, /decide/); the management API
// creates and edits the definitions and serves them to the server SDKs for local
// evaluation. A flag must evaluate to the same answer in hedge, in an SDK's local
// evaluation of hedge's definitions, and in PostHog, for the same inputs.
package flags
