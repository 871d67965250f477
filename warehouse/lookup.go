package warehouse

// The reads of stored properties that feature flag evaluation makes for every request:
// concurrent, beside the Writer, and from memory unless the properties of a person or
// a group are not cached.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2/simplelru"
)

// PersonProperties is the JSON object text of the properties of the person that
// distinctID belongs to now (after merges), as of the last commit: a call that starts
// after a Submit returned sees that Submit's events. found is false when the distinct
// id has no person. The database is read only for what is not cached: the distinct id's
// person, then the person's properties; ctx bounds those reads, the waits for a
// connection included. distinctID is not kept.
func (w *Warehouse) PersonProperties(ctx context.Context, team int64, distinctID string) (props string, found bool, err error) {
	return w.lookups.person(ctx, team, distinctID)
}

// GroupProperties is the JSON object text of the properties of the project's group of
// the given type index and key, on the terms of PersonProperties; found is false when
// there is no such group. key is not kept.
func (w *Warehouse) GroupProperties(ctx context.Context, team int64, typeIndex int, key string) (props string, found bool, err error) {
	return w.lookups.group(ctx, team, typeIndex, key)
}

// GroupTypeNames are the project's group types by index ("" where unused) as of the
// last commit, from memory.
func (w *Warehouse) GroupTypeNames(team int64) [5]string {
	return (*w.lookups.groupTypes.Load())[team]
}

const (
	lookupShardBits = 4 // at most 16 shards per cache
	lookupStripes   = 1 << 12
)

// lookups serves PersonProperties, GroupProperties and GroupTypeNames to any number of
// goroutines at once.
//
// A distinct id resolves in the Writer's distinct-id cache, which the lookups fill too:
// one that misses is read from the database and cached, its absence included, so an id
// without a person (posthog-js asks for flags before its first event is committed) reads
// the database once. The properties of persons, by id, and of groups, by key, absent
// groups included, are kept in bounded LRU caches and read from the database on a miss.
// GroupTypeNames reads an immutable copy of the Writer's group types, replaced after
// each commit that adds one.
//
// Distinct ids and persons that miss are read in batches (batchReads), as the Writer
// groups commits: the misses that arrive while a read runs are read together by the
// next, in one query. DuckDB spends most of a point read on the query, not the row
// (measured at 200,000 persons: 280 µs for one id, 1 ms for 32), so after a restart,
// when every returning user misses, batches keep up where single reads would queue
// (BenchmarkPersonProperties: 3,800 misses/s one at a time, 31,000 with 64 waiting).
// A read of distinct ids scans person_distinct_ids whole, whatever the batch's size (see
// identity.resolve), so those batches are larger.
//
// Invalidation. After each commit, before its submitters are answered, the writer
// goroutine evicts exactly what the commit changed (invalidate), and caches the new
// persons of the distinct ids it changed (identity.apply). A fill must not then put back
// what it read before that commit: each applied commit takes the next seq and stamps it
// on the stripes (a hash of the key) of the keys it changes, distinct ids before the
// Writer caches them; a fill notes seq before its read, and caches a key only if its
// stripe's stamp is not newer. The read sees every commit that took a seq up to the one
// it noted (seq moves after the commit), so a read that missed a commit changing the key
// noted an older seq, and either the commit stamped the stripe first (the fill is
// dropped) or it comes after the fill and evicts it, or overwrites it with the new
// person. mu makes a fill's check and insert one step against a stamp. Another key of
// the same stripe changed meanwhile only drops a fill needlessly; distinct ids have
// stripes of their own, so that commits of many new ids leave the fills of persons be.
type lookups struct {
	distinct *distinctCache // the Writer's
	// stored, when not nil, is the Writer's filter of stored distinct ids: an id it calls
	// absent (a new visitor) has no person, and needs no read.
	stored *storedFilter
	// db is the lookups' own pool: at most lookupConns reads at once, whatever the burst
	// of misses, so that they leave cores to the Writer and to the query API's pool.
	db           *sql.DB
	readDistinct *sql.Stmt // readDistinctIDsSQL
	readGroup    *sql.Stmt
	// readPersons[i] reads up to personBatches[i] persons by id.
	readPersons   [len(personBatches)]*sql.Stmt
	distinctReads *batchReads[distinctKey, uuid.UUID]
	personReads   *batchReads[uuid.UUID, string]
	persons       *shardedLRU[uuid.UUID, string]
	groups        *shardedLRU[groupKey, cachedGroup]
	groupTypes    atomic.Pointer[map[int64][maxGroupTypes]string]
	seed          maphash.Seed

	seq             atomic.Uint64
	mu              sync.Mutex
	stripes         [lookupStripes]uint64 // of persons and groups; guarded by mu
	distinctStripes [lookupStripes]uint64 // guarded by mu

	// beforeRead and afterRead, when set (by tests, before the first lookup), run before
	// a fill's read of the database and between the read and the insert.
	beforeRead, afterRead func()
}

// cachedGroup is a group's properties, or its absence.
type cachedGroup struct {
	props string
	found bool
}

// lookupConns is the size of the lookups' pool: half the cores, at least one.
var lookupConns = max(1, runtime.NumCPU()/2)

// personBatches are the sizes of the prepared batch reads of persons; a batch is padded
// to the next one by repeating an id.
var personBatches = [...]int{1, 4, 16, 64}

// distinctBatch is the most distinct ids a read looks up.
const distinctBatch = 1024

// lookupTimeout bounds a batch read, which no caller's context can cancel on its own:
// the lookups waiting for it give up at their own deadlines.
const lookupTimeout = 10 * time.Second

// newLookups opens the lookups' pool over connector and starts serving x's persons and
// groups, with room for cacheSize persons' properties and a tenth as many groups'. It
// must be attached to x (x.lookups) before the Writer commits.
func newLookups(ctx context.Context, connector *duckdb.Connector, x *identity, cacheSize int) (*lookups, error) {
	l := &lookups{
		distinct: x.distinct,
		db:       sql.OpenDB(connector),
		persons:  newShardedLRU[uuid.UUID, string](cacheSize),
		groups:   newShardedLRU[groupKey, cachedGroup](cacheSize/10 + 1),
		seed:     maphash.MakeSeed(),
	}
	l.distinctReads = &batchReads[distinctKey, uuid.UUID]{max: distinctBatch, read: l.readDistinctBatch}
	l.personReads = &batchReads[uuid.UUID, string]{max: personBatches[len(personBatches)-1], read: l.readPersonBatch}
	l.db.SetMaxOpenConns(lookupConns)
	l.db.SetMaxIdleConns(lookupConns)
	var err error
	for i, n := range personBatches {
		in := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		if l.readPersons[i], err = l.db.PrepareContext(ctx, `SELECT id, properties FROM persons WHERE id IN (`+in+`)`); err != nil {
			l.close()
			return nil, fmt.Errorf("cannot prepare the person lookup: %w", err)
		}
	}
	l.readDistinct, err = l.db.PrepareContext(ctx, readDistinctIDsSQL)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("cannot prepare the distinct id lookup: %w", err)
	}
	l.readGroup, err = l.db.PrepareContext(ctx, `SELECT group_properties FROM groups
		WHERE team_id = ? AND group_type_index = ? AND group_key = ?`)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("cannot prepare the group lookup: %w", err)
	}
	l.publishGroupTypes(x.groupTypes)
	return l, nil
}

func (l *lookups) close() error {
	for _, stmt := range append(l.readPersons[:], l.readDistinct, l.readGroup) {
		if stmt != nil {
			stmt.Close()
		}
	}
	return l.db.Close()
}

func (l *lookups) person(ctx context.Context, team int64, distinctID string) (string, bool, error) {
	k := distinctKey{team, distinctID}
	id, ok, err := l.distinctPerson(ctx, k)
	if err != nil || !ok {
		return "", false, err
	}
	h := maphash.Comparable(l.seed, id)
	if props, ok := l.persons.get(h, id); ok {
		return props, true, nil
	}
	for retried := false; ; retried = true {
		props, found, err := l.personReads.get(ctx, id)
		if err != nil {
			return "", false, fmt.Errorf("cannot read the properties of person %s: %w", id, err)
		}
		if found {
			return props, true, nil
		}
		// A commit that ended after the distinct id was resolved merged the person away;
		// the distinct id resolves to the survivor once that commit is applied.
		again, ok, err := l.distinctPerson(ctx, k)
		if err != nil || !ok || again == id || retried {
			return "", false, err
		}
		id = again
	}
}

// distinctPerson is the person of k as of the last commit: the distinct-id cache's
// answer, else the database's (readDistinctBatch caches it).
func (l *lookups) distinctPerson(ctx context.Context, k distinctKey) (uuid.UUID, bool, error) {
	if id, ok := l.distinct.lru.get(l.distinct.hash(k), k); ok {
		return id, id != uuid.Nil, nil
	}
	if l.stored != nil && l.stored.absent(k) {
		return uuid.Nil, false, nil
	}
	k.id = strings.Clone(k.id) // the caller's may alias its request, which the read may outlive
	id, ok, err := l.distinctReads.get(ctx, k)
	if err != nil {
		return id, false, fmt.Errorf("cannot read the person of distinct id %q of project %d: %w", k.id, k.team, err)
	}
	return id, ok, nil
}

// readDistinctBatch reads the persons of distinct ids (keys that own their strings) and
// caches them, absence included (the stripe check of lookups).
func (l *lookups) readDistinctBatch(keys []distinctKey) (map[distinctKey]uuid.UUID, error) {
	teams, ids := make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		teams[i], ids[i] = k.team, k.id
	}
	since := l.seq.Load()
	if l.beforeRead != nil {
		l.beforeRead()
	}
	read, err := func() (map[distinctKey]uuid.UUID, error) {
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		defer cancel()
		rows, err := l.readDistinct.QueryContext(ctx, teams, ids)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		read := make(map[distinctKey]uuid.UUID, len(keys))
		for rows.Next() {
			var i int
			var id uuid.UUID
			if err := rows.Scan(&i, &id); err != nil {
				return nil, err
			}
			read[keys[i-1]] = id
		}
		return read, rows.Err()
	}()
	if l.afterRead != nil {
		l.afterRead()
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for _, k := range keys {
		if h := l.distinct.hash(k); l.distinctStripes[h%lookupStripes] <= since {
			l.distinct.lru.add(h, k, read[k]) // uuid.Nil when it has no person
		}
	}
	l.mu.Unlock()
	return read, nil
}

// readPersonBatch reads the properties of persons by id and caches them (the stripe
// check of lookups); a person that does not exist is not in what it returns.
func (l *lookups) readPersonBatch(ids []uuid.UUID) (map[uuid.UUID]string, error) {
	size := 0
	for personBatches[size] < len(ids) {
		size++
	}
	args := make([]any, personBatches[size])
	for i := range args {
		args[i] = ids[min(i, len(ids)-1)]
	}
	since := l.seq.Load()
	if l.beforeRead != nil {
		l.beforeRead()
	}
	read, err := l.readBatch(l.readPersons[size], args)
	if l.afterRead != nil {
		l.afterRead()
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for id, props := range read {
		if h := maphash.Comparable(l.seed, id); l.stripes[h%lookupStripes] <= since {
			l.persons.add(h, id, props)
		}
	}
	l.mu.Unlock()
	return read, nil
}

// readBatch reads the properties of the persons with the ids in args (the
// statement's parameters), by id; a person that does not exist is not in it.
func (l *lookups) readBatch(stmt *sql.Stmt, args []any) (map[uuid.UUID]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	read := make(map[uuid.UUID]string, len(args))
	for rows.Next() {
		var id uuid.UUID
		var props string
		if err := rows.Scan(&id, &props); err != nil {
			return nil, err
		}
		read[id] = props
	}
	return read, rows.Err()
}

// batchReads reads the keys that lookups miss, a batch at a time: a lookup queues its
// key and waits; up to lookupConns goroutines at once each take up to max queued keys
// and read them in one query (read), until the queue is empty. A read goes on when its
// lookups have given up, so a key must not alias a request.
type batchReads[K comparable, V any] struct {
	max  int
	read func(keys []K) (map[K]V, error) // a key is absent from the map when it has no value
	mu   sync.Mutex
	// queue holds the keys waiting for a read, readers the goroutines reading; guarded by mu.
	queue   []*batchRead[K, V]
	readers int
}

// batchRead is one key to read, for a lookup that waits until done is closed.
type batchRead[K comparable, V any] struct {
	key   K
	done  chan struct{}
	value V
	found bool
	err   error
}

// get is k's value, read with the keys queued beside it; ctx bounds the wait.
func (r *batchReads[K, V]) get(ctx context.Context, k K) (V, bool, error) {
	f := &batchRead[K, V]{key: k, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, f)
	if r.readers < lookupConns {
		r.readers++
		go r.run()
	}
	r.mu.Unlock()
	select {
	case <-f.done:
		return f.value, f.found, f.err
	case <-ctx.Done():
		var zero V
		return zero, false, ctx.Err()
	}
}

// run reads the queued keys, a batch at a time, until the queue is empty, and wakes
// each waiting lookup.
func (r *batchReads[K, V]) run() {
	var batch []*batchRead[K, V]
	var keys []K
	for {
		r.mu.Lock()
		n := min(len(r.queue), r.max)
		if n == 0 {
			r.readers--
			r.mu.Unlock()
			return
		}
		batch = append(batch[:0], r.queue[:n]...)
		clear(r.queue[:n])
		r.queue = r.queue[n:]
		r.mu.Unlock()

		keys = keys[:0]
		for _, f := range batch {
			keys = append(keys, f.key)
		}
		read, err := r.read(keys)
		for _, f := range batch {
			f.value, f.found = read[f.key]
			f.err = err
			close(f.done)
		}
	}
}

func (l *lookups) group(ctx context.Context, team int64, typeIndex int, key string) (string, bool, error) {
	if typeIndex < 0 || typeIndex >= maxGroupTypes {
		return "", false, nil
	}
	k := groupKey{team, typeIndex, key}
	h := maphash.Comparable(l.seed, k)
	if g, ok := l.groups.get(h, k); ok {
		return g.props, g.found, nil
	}
	since := l.seq.Load()
	if l.beforeRead != nil {
		l.beforeRead()
	}
	var g cachedGroup
	err := l.readGroup.QueryRowContext(ctx, team, typeIndex, key).Scan(&g.props)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return "", false, fmt.Errorf("cannot read group %q of type %d of project %d: %w", key, typeIndex, team, err)
	default:
		g.found = true
	}
	if l.afterRead != nil {
		l.afterRead()
	}
	k.key = strings.Clone(key) // the caller's may alias its request
	l.mu.Lock()
	if l.stripes[h%lookupStripes] <= since {
		l.groups.add(h, k, g)
	}
	l.mu.Unlock()
	return g.props, g.found, nil
}

// stampDistinct takes the seq of a commit that succeeded and stamps it on the stripes of
// the distinct ids the commit's delta d changed, before the Writer caches their new
// persons (see lookups). It runs on the writer goroutine, first of apply.
func (l *lookups) stampDistinct(d *identityDelta) uint64 {
	seq := l.seq.Add(1)
	if len(d.distinct) == 0 {
		return seq
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range d.distinct {
		l.distinctStripes[l.distinct.hash(k)%lookupStripes] = seq
	}
	return seq
}

// invalidate evicts, for the commit that took seq, what its delta d changed: the persons
// it changed or merged away, and the groups it changed or created (which may be cached
// as absent). Persons new in the commit are not cached: no lookup knew their ids before
// it. It runs on the writer goroutine after the commit, before its submitters are
// answered.
func (l *lookups) invalidate(seq uint64, d *identityDelta) {
	if len(d.persons) == 0 && len(d.deleted) == 0 && len(d.groups) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, p := range d.persons {
		if p.stored {
			l.evictPerson(seq, id)
		}
	}
	for id := range d.deleted {
		l.evictPerson(seq, id)
	}
	for k := range d.groups {
		h := maphash.Comparable(l.seed, k)
		l.stripes[h%lookupStripes] = seq
		l.groups.remove(h, k)
	}
}

// evictPerson evicts person id for the invalidation seq; mu is held.
func (l *lookups) evictPerson(seq uint64, id uuid.UUID) {
	h := maphash.Comparable(l.seed, id)
	l.stripes[h%lookupStripes] = seq
	l.persons.remove(h, id)
}

// publishGroupTypes makes types, the Writer's group types by project, what
// GroupTypeNames answers. It copies them, as the Writer goes on changing its map.
func (l *lookups) publishGroupTypes(types map[int64]*[maxGroupTypes]string) {
	published := make(map[int64][maxGroupTypes]string, len(types))
	for team, t := range types {
		published[team] = *t
	}
	l.groupTypes.Store(&published)
}

// shardedLRU is an LRU cache safe for concurrent use, in shards with a lock each so
// that lookups on different cores seldom wait for one another. The caller hashes the
// key (h), which picks the shard. Each shard evicts on its own, so the cache as a whole
// is only roughly least-recently-used.
type shardedLRU[K comparable, V any] struct {
	bits   uint // the shards are 1<<bits
	shards []lruShard[K, V]
}

type lruShard[K comparable, V any] struct {
	mu  sync.Mutex
	lru *lru.LRU[K, V]
	_   [48]byte // a cache line per shard
}

// minShardSize is the fewest entries of a shard: a cache of fewer than
// minShardSize<<lookupShardBits entries has fewer shards, so that a small cache
// evicts what its whole is least recently used, not a crowded shard's.
const minShardSize = 64

// newShardedLRU holds at most size entries (at least one), in up to 1<<lookupShardBits
// shards of an equal share of them.
func newShardedLRU[K comparable, V any](size int) *shardedLRU[K, V] {
	c := &shardedLRU[K, V]{}
	for c.bits < lookupShardBits && size>>(c.bits+1) >= minShardSize {
		c.bits++
	}
	c.shards = make([]lruShard[K, V], 1<<c.bits)
	for i := range c.shards {
		c.shards[i].lru, _ = lru.NewLRU[K, V](max(1, size>>c.bits), nil)
	}
	return c
}

func (c *shardedLRU[K, V]) shard(h uint64) *lruShard[K, V] { return &c.shards[h>>(64-c.bits)] }

func (c *shardedLRU[K, V]) get(h uint64, k K) (V, bool) {
	s := c.shard(h)
	s.mu.Lock()
	v, ok := s.lru.Get(k)
	s.mu.Unlock()
	return v, ok
}

func (c *shardedLRU[K, V]) add(h uint64, k K, v V) {
	s := c.shard(h)
	s.mu.Lock()
	s.lru.Add(k, v)
	s.mu.Unlock()
}

func (c *shardedLRU[K, V]) remove(h uint64, k K) {
	s := c.shard(h)
	s.mu.Lock()
	s.lru.Remove(k)
	s.mu.Unlock()
}
