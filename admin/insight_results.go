package admin

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/bytedance/sonic"
	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/warehouse"
)

// DefaultInsightCacheBytes is Config.InsightCacheBytes when it is zero.
const DefaultInsightCacheBytes = 64 << 20

// The cache's metrics, of every cache of the process (hedge serve has one).
var (
	insightCacheBytes   = metrics.NewGauge(`hedge_insight_cache_bytes`, nil)
	insightCacheSkipped = metrics.NewCounter(`hedge_insight_cache_skipped_total`)
	insightCacheEvicted = metrics.NewCounter(`hedge_insight_cache_evicted_total`)
)

// resultsCache keeps the computed results of insights, per project, query and the
// project settings a query reads (time zone, first day of the week). A result is served
// while its project's data version is still the one it was computed at (no events
// since) and it is younger than ttl; then it is computed again. A change of the
// project's settings makes a new key, so results computed under the old ones are never
// served (they age out).
//
// It is bounded in bytes, not entries, for one result weighs from a few hundred bytes (a
// trend) to the query's byte limit (an events query of long values), and a request's
// ?filters_override= makes a new key per value. Each result is kept as the JSON the API
// answers, so its weight is known exactly and serving it encodes nothing. Bounds, of
// maxBytes (Config.InsightCacheBytes): the whole holds at most maxBytes; one project at
// most a quarter of it, its own least recently used results going first, so a project
// that floods the cache evicts its own results and leaves the others' a share; and a
// result over a sixteenth of it (4 MiB of the default 64 MiB) is not kept at all: it is
// computed at each read, as it would be after its first eviction.
type resultsCache struct {
	ttl          time.Duration
	maxBytes     int // the whole cache
	projectBytes int // one project's results
	entryBytes   int // one result

	mu       sync.Mutex
	entries  map[resultKey]*cachedResult
	lru      list.List // every entry, least recently used first
	projects map[int64]*projectResults
	held     int // bytes of the entries, as weigh counts them
}

// resultKey names a result: the scope holds the project and every setting of it that
// a query reads.
type resultKey struct {
	scope warehouse.Scope
	query [sha256.Size]byte
}

type cachedResult struct {
	key     resultKey
	version uint64
	at      time.Time
	result  rawJSON
	all     *list.Element // in resultsCache.lru
	own     *list.Element // in its project's lru
}

// projectResults are one project's entries, least recently used first, and their bytes.
type projectResults struct {
	lru  list.List
	held int
}

// entryOverhead is about what an entry weighs besides its JSON: the entry, its key and
// its places in the maps and lists.
const entryOverhead = 256

// weigh is what an entry of result counts for against the bounds.
func weigh(result rawJSON) int { return len(result) + entryOverhead }

func newResultsCache(ttl time.Duration, maxBytes int) *resultsCache {
	if ttl <= 0 {
		ttl = DefaultInsightCacheTTL
	}
	if maxBytes <= 0 {
		maxBytes = DefaultInsightCacheBytes
	}
	return &resultsCache{ttl: ttl, maxBytes: maxBytes, projectBytes: maxBytes / 4, entryBytes: maxBytes / 16,
		entries: map[resultKey]*cachedResult{}, projects: map[int64]*projectResults{}}
}

// get is the result cached under key if it was computed at version and is younger
// than the cache's ttl. An entry that is not is dropped: it will never be served.
func (rc *resultsCache) get(key resultKey, version uint64) (rawJSON, time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.entries[key]
	if !ok {
		return nil, time.Time{}, false
	}
	if e.version != version || time.Since(e.at) >= rc.ttl {
		rc.remove(e)
		return nil, time.Time{}, false
	}
	rc.lru.MoveToBack(e.all)
	rc.projects[key.scope.Team].lru.MoveToBack(e.own)
	return e.result, e.at, true
}

// put caches a result computed at version, unless it weighs more than one result may;
// to make room it evicts the project's least recently used results past its share,
// then anyone's past the whole.
func (rc *resultsCache) put(key resultKey, version uint64, at time.Time, result rawJSON) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if e, ok := rc.entries[key]; ok {
		rc.remove(e)
	}
	size := weigh(result)
	if size > rc.entryBytes {
		insightCacheSkipped.Inc()
		return
	}
	team := key.scope.Team
	p := rc.projects[team]
	if p == nil {
		p = &projectResults{}
		rc.projects[team] = p
	}
	for p.held+size > rc.projectBytes {
		rc.evict(p.lru.Front().Value.(*cachedResult))
	}
	for rc.held+size > rc.maxBytes {
		rc.evict(rc.lru.Front().Value.(*cachedResult))
	}
	if rc.projects[team] == nil { // its last entry was evicted
		rc.projects[team] = p
	}
	e := &cachedResult{key: key, version: version, at: at, result: result}
	e.all, e.own = rc.lru.PushBack(e), p.lru.PushBack(e)
	rc.entries[key] = e
	p.held += size
	rc.held += size
	insightCacheBytes.Add(float64(size))
}

func (rc *resultsCache) evict(e *cachedResult) {
	insightCacheEvicted.Inc()
	rc.remove(e)
}

// remove drops e, and its project's record once it holds nothing.
func (rc *resultsCache) remove(e *cachedResult) {
	team := e.key.scope.Team
	p := rc.projects[team]
	size := weigh(e.result)
	delete(rc.entries, e.key)
	rc.lru.Remove(e.all)
	p.lru.Remove(e.own)
	p.held -= size
	rc.held -= size
	insightCacheBytes.Add(-float64(size))
	if p.lru.Len() == 0 {
		delete(rc.projects, team)
	}
}

// usage is the bytes the cache holds, in all and of project team, as its bounds count
// them.
func (rc *resultsCache) usage(team int64) (all, project int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p := rc.projects[team]; p != nil {
		project = p.held
	}
	return rc.held, project
}

// insightResult is the query's result for the project, as the JSON the API answers,
// the time it was computed, and whether it came from the cache. A query that may not
// run is a *Error.
//
// A request that asked for fresh results (refreshed) computes them whatever the cache
// holds, and caches them for the requests after it.
func (a *API) insightResult(ctx context.Context, team int64, query rawJSON) (rawJSON, time.Time, bool, error) {
	// The version is read before computing: rows committed meanwhile make the entry
	// stale at once, never a stale entry look current.
	version := a.queries.DataVersion(team)
	scope, err := a.scopeOf(ctx, team)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	key := resultKey{scope: scope, query: sha256.Sum256(query)}
	if ctx.Value(refreshKey{}) == nil {
		if result, at, ok := a.results.get(key, version); ok {
			return result, at, true, nil
		}
	}
	computed, err := a.runQuery(ctx, scope, []byte(query))
	if err != nil {
		return nil, time.Time{}, false, err
	}
	result, err := sonic.Marshal(computed)
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("cannot encode the result of a query of project %d: %w", team, err)
	}
	at := time.Now().UTC()
	a.results.put(key, version, at, result)
	return result, at, false, nil
}

// refreshKey marks the context of a request whose insights are computed afresh.
type refreshKey struct{}

// refreshed is the request's context, marked to compute its insights afresh when it
// asks as PostHog's ?refresh= does: true, force_blocking or force_async. PostHog's
// other values (false, blocking, async, lazy_async, force_cache) take a result from the
// cache when it holds a current one, as no refresh does; hedge computes every result
// while the request waits, so the async values wait too.
func refreshed(c *fiber.Ctx) (context.Context, error) {
	ctx := c.UserContext()
	switch c.Query("refresh") {
	case "", "false", "blocking", "async", "lazy_async", "force_cache":
		return ctx, nil
	case "true", "force_blocking", "force_async":
		return context.WithValue(ctx, refreshKey{}, true), nil
	}
	return nil, errValidation("refresh", "invalid_choice",
		fmt.Sprintf("%q is not a valid choice: true, false, blocking, async, lazy_async, force_blocking, force_async or force_cache.", c.Query("refresh")))
}
