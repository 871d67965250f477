package admin

import (
	"context"
	"crypto/sha256"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/hedge-analytics/hedge/warehouse"
)

// resultsCache keeps the computed results of insights, per project, query and the
// project settings a query reads (time zone, first day of the week). A result is served
// while its project's data version is still the one it was computed at (no events
// since) and it is younger than ttl; then it is computed again. A change of the
// project's settings makes a new key, so results computed under the old ones are never
// served (they age out of the LRU).
type resultsCache struct {
	ttl     time.Duration
	entries *lru.Cache[resultKey, cachedResult]
}

// resultKey names a result: the scope holds the project and every setting of it that
// a query reads.
type resultKey struct {
	scope warehouse.Scope
	query [sha256.Size]byte
}

type cachedResult struct {
	version uint64
	at      time.Time
	result  any
}

// resultsCacheSize bounds the cache: results of trends and funnels are small, of events
// queries up to their limit of rows.
const resultsCacheSize = 512

func newResultsCache(ttl time.Duration) *resultsCache {
	if ttl <= 0 {
		ttl = DefaultInsightCacheTTL
	}
	entries, _ := lru.New[resultKey, cachedResult](resultsCacheSize)
	return &resultsCache{ttl: ttl, entries: entries}
}

// get is the result cached under key if it was computed at version and is younger
// than the cache's ttl.
func (rc *resultsCache) get(key resultKey, version uint64) (cachedResult, bool) {
	e, ok := rc.entries.Get(key)
	return e, ok && e.version == version && time.Since(e.at) < rc.ttl
}

// put caches a result computed at version.
func (rc *resultsCache) put(key resultKey, version uint64, at time.Time, result any) {
	rc.entries.Add(key, cachedResult{version: version, at: at, result: result})
}

// insightResult is the query's result for the project, the time it was computed, and
// whether it came from the cache. A query that may not run is a *Error.
func (a *API) insightResult(ctx context.Context, team int64, query rawJSON) (any, time.Time, bool, error) {
	// The version is read before computing: rows committed meanwhile make the entry
	// stale at once, never a stale entry look current.
	version := a.queries.DataVersion(team)
	scope, err := a.scopeOf(ctx, team)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	key := resultKey{scope: scope, query: sha256.Sum256(query)}
	if e, ok := a.results.get(key, version); ok {
		return e.result, e.at, true, nil
	}
	result, err := a.runQuery(ctx, scope, []byte(query))
	if err != nil {
		return nil, time.Time{}, false, err
	}
	at := time.Now().UTC()
	a.results.put(key, version, at, result)
	return result, at, false, nil
}
