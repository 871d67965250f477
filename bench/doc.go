// Command bench is hedge's benchmark suite: a load generator that measures a running
// hedge (or any PostHog-compatible capture endpoint) from outside, and the suite that
// `make bench` runs, which builds and starts hedge on a temporary data directory,
// measures the stage ceilings with the Go benchmarks beside the code, runs the
// end-to-end scenarios, and prints each figure next to its ceiling.
//
//	go run ./bench suite [-mode standard|quick|tiny] [-results bench/results]
//	go run ./bench load -bootstrap hedge-data/bootstrap.json [-scenarios batch-1k,capture] [-pid N]
//	go run ./bench load -capture-url URL -token phc_... [-admin-url URL -personal-key phx_... -project-id N]
//
// Bodies are built with bench/gen before timing starts and each send only stamps
// fresh uuids into a copy (gen.Body.Stamp), so the generator measures the server, not
// itself. Every event of every send has a uuid of its own that names the scenario's
// run and the send, which is how each run ends: the stored rows are counted through
// the query API, and a run with an acknowledged event missing or stored twice fails.
//
// The flags scenarios measure /flags/?v=2 beside /batch/ ingest at a fixed rate: they
// first create a project's 50 flags and a cohort through the management API and store
// persons through /batch/ (bench/flags.go), and check every answer against what they
// stored, as the row check does for events.
//
// The sustained scenario sends batch-1k's bodies on a fixed schedule at 80% of the
// requests a second that the batch-1k runs of the same suite achieved (their median;
// -scenarios sustained runs batch-1k first for it), for 5 minutes (30 s in quick mode,
// 1 s in tiny), and reports the run per 10 s as well: latency p50, p99 and max from
// when each request was due, requests and events answered, those not answered 200,
// the p99 time from a 200 to queryable, hedge's peak resident set and its
// deduplication set (from /metrics), against the goal of no wait over 1 s and
// a visible p99 under 1 s (bench/sustained.go). hedge cannot switch deduplication off,
// so its cost is not a ratio with and without it: the intervals show the set filling
// up to --dedup-events and the run after.
//
// The abuse scenarios measure a /batch/ load like batch-1k's alone (abuse-baseline),
// then beside 1,500 idle connections and 24 stalled bodies from loopback addresses
// other than the load's (abuse-connections, not in quick mode), then beside those and
// another tenant's heavy queries (abuse), and compare each with the load alone
// (bench/abuse.go).
//
// The batch-1k-cluster scenario sends batch-1k-log's load to a cluster of three hedge
// serve processes of its own, which `hedge cluster up` starts in <data>-cluster and
// `hedge cluster down` stops after it, its connections spread evenly over the nodes'
// capture listeners. Its row check counts node1's warehouse once it caught up, its peak
// resident set is the nodes' peaks added up, and the report shows it beside batch-1k
// and batch-1k-log of the same suite, as ratios (bench/cluster.go).
//
// The queries scenario runs last, on a hedge of its own: 10 million events (1 million
// in quick mode) generated with SQL straight into a data directory, cached between
// runs in the system's temporary directory, and served from a copy; it times the query
// API's queries and a 10-insight dashboard, each next to the same computation on typed
// columns in DuckDB as its ceiling, and the bytes stored per event (bench/queries.go,
// bench/querydata.go).
//
// The generated events model what posthog-js and posthog-ios send. They come in visits
// of 1 to 16 events (some 5 on average, so some 2 million sessions in 10 million
// events), which start evenly over the days, each visit a person's, with one
// $session_id for its events, as posthog-js keeps one until 30 minutes without an
// event; the persons of a pool of a fifth of them, sliding over the days, make the
// visits, a few of them most. A visit starts with a view ($pageview with $pathname and
// $current_url, or $screen in the app), goes on with views, $autocapture and custom
// events 5 to 95 seconds apart, on the page of the view before them, and on the web
// mostly ends with a $pageleave; a fifth of visits are one view alone. An event carries
// its person's $referring_domain, $browser, $os and $device_type. The events are
// written in time order, as they arrive (bench/querydata.go, visitShapes).
//
// Figures from a 2-core machine shared with other work are noisy: each result records
// the CPU steal and the CPU used by other processes while it ran, and the suite
// compares figures with ceilings measured in the same run, as ratios.
package main
