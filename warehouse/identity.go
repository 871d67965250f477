package warehouse

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2/simplelru"
)

// Warning types written by the identity model; the events they are about are kept.
const (
	warnIllegalDistinctID = "cannot_merge_with_illegal_distinct_id"
	warnAlreadyIdentified = "cannot_merge_already_identified"
)

// identity is the writer's view of persons, distinct ids and groups: the group types of
// every project are in memory whole; distinct ids, persons and groups are in bounded LRU
// caches, and the database is the truth behind them. It belongs to the writer goroutine.
//
// Distinct ids. Before a commit processes its events, resolve puts in known the stored
// person of every distinct id they name: from the cache, and the ones it lacks from the
// database in one query for the whole commit. The commit then reads and changes
// distinct ids only in known and its delta, so what the cache evicts meanwhile (the
// flag lookups fill it too) changes nothing. Nothing is read at start: a restart begins
// with an empty cache.
//
// A commit's changes go to a delta, which the caches take on only once the commit has
// succeeded (apply), so a failed commit leaves them as the database is.
//
// The distinct-id cache is the one part that other goroutines read and fill (see
// lookups), and apply tells the flag lookups what each commit changed.
type identity struct {
	// db reads what is committed. Reads never need this commit's own changes: those are
	// in the delta, and reach the transaction only in flush.
	db         *sql.DB
	distinct   *distinctCache
	groupTypes map[int64]*[maxGroupTypes]string
	persons    *lru.LRU[uuid.UUID, *person]
	groups     *lru.LRU[groupKey, *group]
	delta      identityDelta
	// known is the stored person (uuid.Nil: none) of every distinct id that the commit in
	// progress names, as of the last commit; read lists the ones resolve read from the
	// database, which apply caches. Their keys may alias the commit's requests.
	known map[distinctKey]uuid.UUID
	read  []distinctKey
	// readTeams and readIDs are the parameters of the last read, kept for their room.
	readTeams []int64
	readIDs   []string
	// lookups, when not nil, is told of every applied commit.
	lookups *lookups
	// stored, when not nil, tells of distinct ids that no row holds, which need no read.
	stored *storedFilter
}

type distinctKey struct {
	team int64
	id   string
}

// distinctCache holds the person of distinct ids as of the last commit, for at most its
// size of them, the least recently used evicted first (roughly: see shardedLRU); uuid.Nil
// stands for no person, which no person's id is (see personIDFor). Keys it holds own
// their strings. Safe for concurrent use: the writer goroutine puts what each commit
// read and changed (apply), the flag lookups what they read, by the rule of lookups
// that keeps out a read older than a commit.
type distinctCache struct {
	seed maphash.Seed
	lru  *shardedLRU[distinctKey, uuid.UUID]
}

func newDistinctCache(size int) *distinctCache {
	return &distinctCache{seed: maphash.MakeSeed(), lru: newShardedLRU[distinctKey, uuid.UUID](size)}
}

func (c *distinctCache) hash(k distinctKey) uint64 { return maphash.Comparable(c.seed, k) }

// overrideKey is an old person id of a project (person_overrides.go).
type overrideKey struct {
	team int64
	old  uuid.UUID
}

// personMerge is a person merged into another, of its project.
type personMerge struct {
	team int64
	into uuid.UUID
}

type identityDelta struct {
	distinct map[distinctKey]uuid.UUID
	persons  map[uuid.UUID]*person // changed or new, in their final state
	deleted  map[uuid.UUID]bool    // stored persons merged away
	// merged is every person merged away in the commit (stored or new in it), and the
	// person it was merged into then (which a later merge of the commit may merge on).
	merged map[uuid.UUID]personMerge
	// adopted is personIDFor of each distinct id that had no person and was given
	// another one in the commit (give), and that person then: the id its events sent
	// without a person carry, and the person they count for (person_overrides.go).
	adopted    map[overrideKey]uuid.UUID
	groupTypes map[int64]*[maxGroupTypes]string
	newTypes   []groupTypeRow
	groups     map[groupKey]*group
}

func (d *identityDelta) reset() {
	clear(d.distinct)
	clear(d.persons)
	clear(d.deleted)
	clear(d.merged)
	clear(d.adopted)
	clear(d.groupTypes)
	clear(d.groups)
	d.newTypes = d.newTypes[:0]
}

// reset forgets the commit that ended: its delta and the distinct ids it resolved.
func (x *identity) reset() {
	x.delta.reset()
	clear(x.known)
	clear(x.read)
	x.read = x.read[:0]
}

// loadIdentity reads the group types from the database; distinct ids, persons and
// groups are read as commits need them, into caches of distinctCacheSize ids,
// personCacheSize persons and a tenth as many groups.
func loadIdentity(ctx context.Context, db *sql.DB, personCacheSize, distinctCacheSize int) (*identity, error) {
	persons, _ := lru.NewLRU[uuid.UUID, *person](personCacheSize, nil)
	groups, _ := lru.NewLRU[groupKey, *group](personCacheSize/10+1, nil)
	x := &identity{
		db:         db,
		distinct:   newDistinctCache(distinctCacheSize),
		groupTypes: map[int64]*[maxGroupTypes]string{},
		persons:    persons,
		groups:     groups,
		delta: identityDelta{
			distinct: map[distinctKey]uuid.UUID{}, persons: map[uuid.UUID]*person{}, deleted: map[uuid.UUID]bool{},
			merged: map[uuid.UUID]personMerge{}, adopted: map[overrideKey]uuid.UUID{},
			groupTypes: map[int64]*[maxGroupTypes]string{}, groups: map[groupKey]*group{},
		},
		known: map[distinctKey]uuid.UUID{},
	}
	types, err := db.QueryContext(ctx, `SELECT team_id, group_type, group_type_index FROM group_type_mappings`)
	if err != nil {
		return nil, fmt.Errorf("cannot load group types: %w", err)
	}
	defer types.Close()
	for types.Next() {
		var r groupTypeRow
		if err := types.Scan(&r.team, &r.name, &r.index); err != nil {
			return nil, fmt.Errorf("cannot load group types: %w", err)
		}
		if x.groupTypes[r.team] == nil {
			x.groupTypes[r.team] = new([maxGroupTypes]string)
		}
		x.groupTypes[r.team][r.index] = r.name
	}
	return x, types.Err()
}

// mergeOf is the merge that e asks for, by PostHog's rules: other's person is merged
// into into's, and dangerous merges even an identified person; ok is false for no merge.
func mergeOf(e *Event) (other, into string, dangerous, ok bool) {
	switch {
	case e.Name == EventIdentify && e.AnonDistinctID != "":
		return e.AnonDistinctID, e.DistinctID, false, true
	case e.Name == EventCreateAlias && e.Alias != "":
		// The event's distinct_id is merged into the alias, which becomes the person's
		// main id: the direction hedge's API contract asks for (PostHog's code merges the
		// other way).
		return e.DistinctID, e.Alias, false, true
	case e.Name == EventMergeDangerously && e.Alias != "":
		return e.Alias, e.DistinctID, true, true
	}
	return "", "", false, false
}

// resolve puts in known the stored person of every distinct id that process looks up
// for the events (its own, and both of a merge): the cache's answer, else the
// database's, read for all the ids the cache lacks in one query. The cache and the
// database are as of the last commit, and the writer goroutine, which alone changes the
// table, commits nothing between resolve and apply.
func (x *identity) resolve(ctx context.Context, events iter.Seq[*Event]) error {
	for e := range events {
		x.need(distinctKey{e.TeamID, e.DistinctID})
		if e.Personless {
			continue // process looks up nothing else
		}
		if other, into, _, ok := mergeOf(e); ok {
			x.need(distinctKey{e.TeamID, other})
			x.need(distinctKey{e.TeamID, into})
		}
	}
	if len(x.read) == 0 {
		return nil
	}
	return x.readDistinctIDs(ctx)
}

// need puts k's stored person in known from the cache, or lists k in read, as absent
// until readDistinctIDs finds it; an id that the stored filter knows no row holds is
// absent without a read.
func (x *identity) need(k distinctKey) {
	if _, ok := x.known[k]; ok {
		return
	}
	id, ok := x.distinct.lru.get(x.distinct.hash(k), k)
	if !ok && (x.stored == nil || !x.stored.absent(k)) {
		x.read = append(x.read, k)
	}
	x.known[k] = id
}

// readDistinctIDsSQL reads the persons of the distinct ids $1 (teams) and $2 (ids), as
// parallel lists: the 1-based position in them of each id that has a person, and the
// person. An id without a person has no row.
const readDistinctIDsSQL = `SELECT k.i, d.person_id
	FROM (SELECT unnest($1::BIGINT[]) AS team_id, unnest($2::VARCHAR[]) AS distinct_id, generate_subscripts($2, 1) AS i) k
	JOIN person_distinct_ids d ON d.team_id = k.team_id AND d.distinct_id = k.distinct_id`

// readDistinctIDs reads the persons of the distinct ids listed in read into known.
func (x *identity) readDistinctIDs(ctx context.Context) error {
	teams, ids := x.readTeams[:0], x.readIDs[:0]
	for _, k := range x.read {
		teams, ids = append(teams, k.team), append(ids, k.id)
	}
	x.readTeams, x.readIDs = teams, ids
	defer clear(ids) // the strings may alias requests
	distinctReadsTotal.Inc()
	distinctIDsReadTotal.Add(len(ids))
	rows, err := x.db.QueryContext(ctx, readDistinctIDsSQL, teams, ids)
	if err != nil {
		return fmt.Errorf("cannot read the persons of %d distinct ids: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var id uuid.UUID
		if err := rows.Scan(&i, &id); err != nil {
			return fmt.Errorf("cannot read the persons of %d distinct ids: %w", len(ids), err)
		}
		x.known[x.read[i-1]] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot read the persons of %d distinct ids: %w", len(ids), err)
	}
	return nil
}

// processed is what identity processing decides for one event.
type processed struct {
	personID uuid.UUID
	groups   [maxGroupTypes]string // the event's $group_0..4 ("" for none)
	warning  string                // an ingestion warning about the event, or ""
}

// process applies one event to the identity model, by PostHog's rules, and returns
// its person and groups. Events are processed in the order they are committed, after
// resolve has read the distinct ids they name.
func (x *identity) process(ctx context.Context, e *Event) (processed, error) {
	var out processed
	key := distinctKey{e.TeamID, e.DistinctID}
	if e.Personless {
		// No person is created or changed; an existing one is still named.
		if id, ok := x.lookupDistinct(key); ok {
			out.personID = id
		} else {
			out.personID = personIDFor(e.TeamID, e.DistinctID)
		}
		return out, nil
	}
	if e.Groups != "" {
		if err := x.eventGroups(e, &out.groups); err != nil {
			return out, err
		}
	}
	if e.Name == EventGroupIdentify {
		if err := x.groupIdentify(ctx, e); err != nil {
			return out, err
		}
	}
	if other, into, dangerous, ok := mergeOf(e); ok {
		w, err := x.merge(ctx, e, other, into, dangerous)
		if err != nil {
			return out, err
		}
		out.warning = w
	}
	update := parsePersonUpdate(e)
	if e.Name == EventGroupIdentify {
		update = personUpdate{} // it never touches the person
	}
	id, err := x.personFor(ctx, key, e.Timestamp, &update)
	out.personID = id
	return out, err
}

// personFor returns the person of key, created with the update's properties when the
// distinct id has none, or changed by it when it has one.
func (x *identity) personFor(ctx context.Context, key distinctKey, at time.Time, update *personUpdate) (uuid.UUID, error) {
	id, ok := x.lookupDistinct(key)
	if !ok {
		p := x.newPerson(key, at)
		update.apply(p)
		x.delta.distinct[key] = p.id
		return p.id, nil
	}
	if update.empty() {
		return id, nil
	}
	p, err := x.person(ctx, id)
	if err != nil || p == nil || !update.changes(p) { // nothing would change: no write
		return id, err
	}
	p, err = x.mutable(ctx, id)
	if err != nil {
		return id, err
	}
	update.apply(p)
	p.version++
	return id, nil
}

// merge makes other and into one person, into's person surviving, as PostHog merges:
// the merged person is identified, keeps the earliest created_at and gains the
// properties it lacks; an illegal id never merges, and an identified person is merged
// away only when dangerous ($merge_dangerously). It returns the warning to record when
// the merge is refused.
func (x *identity) merge(ctx context.Context, e *Event, other, into string, dangerous bool) (string, error) {
	if other == into {
		return "", nil
	}
	if illegalDistinctID(other) || illegalDistinctID(into) {
		return warnIllegalDistinctID, nil
	}
	otherKey, intoKey := distinctKey{e.TeamID, other}, distinctKey{e.TeamID, into}
	otherID, otherOK := x.lookupDistinct(otherKey)
	intoID, intoOK := x.lookupDistinct(intoKey)
	switch {
	case !otherOK && !intoOK:
		// One person for both; its id is the one other's personless events carry.
		p := x.newPersonWithID(personIDFor(e.TeamID, other), e.TeamID, e.Timestamp)
		p.identified = true
		x.delta.distinct[otherKey] = p.id
		x.give(intoKey, p.id)
		return "", nil
	case otherOK && !intoOK:
		x.give(intoKey, otherID)
		return "", x.markIdentified(ctx, otherID)
	case !otherOK && intoOK:
		x.give(otherKey, intoID)
		return "", x.markIdentified(ctx, intoID)
	case otherID == intoID:
		return "", x.markIdentified(ctx, intoID)
	}
	source, err := x.person(ctx, otherID)
	if err != nil || source == nil {
		return "", err
	}
	if source.identified && !dangerous {
		return warnAlreadyIdentified, nil
	}
	target, err := x.mutable(ctx, intoID)
	if err != nil || target == nil {
		return "", err
	}
	for k, v := range source.props {
		if _, ok := target.props[k]; !ok {
			target.props[k] = v
		}
	}
	if source.createdAt.Before(target.createdAt) {
		target.createdAt = source.createdAt
	}
	target.version = max(source.version, target.version) + 1
	target.identified = true
	if err := x.moveDistinctIDs(ctx, e.TeamID, otherID, intoID); err != nil {
		return "", err
	}
	delete(x.delta.persons, otherID)
	x.delta.merged[otherID] = personMerge{team: e.TeamID, into: intoID}
	if source.stored {
		x.delta.deleted[otherID] = true
	}
	return "", nil
}

// give gives k, which has no person, the person id, which was not created for it: the
// events of k sent without a person, which carry personIDFor(k), count for id now.
// (A person created for a distinct id has that id's personIDFor, personFor's case.)
func (x *identity) give(k distinctKey, id uuid.UUID) {
	x.delta.distinct[k] = id
	if own := personIDFor(k.team, k.id); own != id {
		x.delta.adopted[overrideKey{k.team, own}] = id
	}
}

// moveDistinctIDs points every distinct id of person from at person to: those in the
// database and those given to it in this commit.
func (x *identity) moveDistinctIDs(ctx context.Context, team int64, from, to uuid.UUID) error {
	rows, err := x.db.QueryContext(ctx, `SELECT distinct_id FROM person_distinct_ids WHERE team_id = ? AND person_id = ?`, team, from)
	if err != nil {
		return fmt.Errorf("cannot list the distinct ids of person %s: %w", from, err)
	}
	defer rows.Close()
	var keys []distinctKey
	for rows.Next() {
		k := distinctKey{team: team}
		if err := rows.Scan(&k.id); err != nil {
			return fmt.Errorf("cannot list the distinct ids of person %s: %w", from, err)
		}
		if _, ok := x.known[k]; !ok {
			x.known[k] = from // as stored; lookupDistinct reads it there
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot list the distinct ids of person %s: %w", from, err)
	}
	for k, id := range x.delta.distinct {
		if id == from {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if id, _ := x.lookupDistinct(k); id == from {
			x.delta.distinct[k] = to
		}
	}
	return nil
}

func (x *identity) markIdentified(ctx context.Context, id uuid.UUID) error {
	p, err := x.person(ctx, id)
	if err != nil || p == nil || p.identified {
		return err
	}
	if p, err = x.mutable(ctx, id); err != nil {
		return err
	}
	p.identified = true
	p.version++
	return nil
}

func (x *identity) newPerson(key distinctKey, at time.Time) *person {
	return x.newPersonWithID(personIDFor(key.team, key.id), key.team, at)
}

func (x *identity) newPersonWithID(id uuid.UUID, team int64, at time.Time) *person {
	p := &person{id: id, team: team, props: map[string]json.RawMessage{}, createdAt: at}
	x.delta.persons[id] = p
	return p
}

// lookupDistinct is the person of k in this commit so far: the delta's, else the stored
// one in known. Every distinct id that the commit looks up is there (resolve,
// moveDistinctIDs); one missing would read as new, and its row would then fail the
// commit on the table's UNIQUE constraint rather than give the id a second person.
func (x *identity) lookupDistinct(k distinctKey) (uuid.UUID, bool) {
	if id, ok := x.delta.distinct[k]; ok {
		return id, true
	}
	id := x.known[k]
	return id, id != uuid.Nil
}

// person returns the person with id as it is in this commit so far; it must not be
// changed (see mutable). nil when there is none.
func (x *identity) person(ctx context.Context, id uuid.UUID) (*person, error) {
	if p, ok := x.delta.persons[id]; ok {
		return p, nil
	}
	if x.delta.deleted[id] {
		return nil, nil
	}
	if p, ok := x.persons.Get(id); ok {
		return p, nil
	}
	p := &person{id: id, stored: true}
	var props string
	err := x.db.QueryRowContext(ctx, `SELECT team_id, properties, created_at, is_identified, version FROM persons WHERE id = ?`, id).
		Scan(&p.team, &props, &p.createdAt, &p.identified, &p.version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read person %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(props), &p.props); err != nil {
		return nil, fmt.Errorf("cannot read the properties of person %s: %w", id, err)
	}
	x.persons.Add(id, p)
	return p, nil
}

// mutable returns the person with id to be changed in this commit: the delta's copy.
func (x *identity) mutable(ctx context.Context, id uuid.UUID) (*person, error) {
	if p, ok := x.delta.persons[id]; ok {
		return p, nil
	}
	p, err := x.person(ctx, id)
	if err != nil || p == nil {
		return nil, err
	}
	c := p.clone()
	x.delta.persons[id] = c
	return c, nil
}

// flush writes the commit's identity changes into the open transaction: new rows
// through the appenders; changed persons and moved distinct ids staged and applied by
// one UPDATE each; the rare deletes, and the group writes of flushGroups, as statements
// run by exec on the transaction's connection (UUIDs go as text, cast in SQL).
func (x *identity) flush(a *appenders, at time.Time, exec func(query string, args ...any) error) error {
	var stagedPersons, stagedDistinctIDs int
	for _, p := range x.delta.persons {
		appender := a.persons
		if p.stored {
			appender, stagedPersons = a.stagedPersons, stagedPersons+1
		}
		var err error
		if p.stored {
			err = appender.AppendRow(duckdb.UUID(p.id), p.propertiesJSON(), p.createdAt, p.identified, p.version, at)
		} else {
			err = appender.AppendRow(duckdb.UUID(p.id), p.team, p.propertiesJSON(), p.createdAt, p.identified, p.version, at)
		}
		if err != nil {
			return fmt.Errorf("cannot append person %s: %w", p.id, err)
		}
	}
	for k, id := range x.delta.distinct {
		var err error
		if x.known[k] != uuid.Nil { // stored: moved to another person
			err = a.stagedDistinctIDs.AppendRow(k.team, k.id, duckdb.UUID(id), at)
			stagedDistinctIDs++
		} else {
			err = a.distinctIDs.AppendRow(k.team, k.id, duckdb.UUID(id), int64(0), at)
		}
		if err != nil {
			return fmt.Errorf("cannot append distinct id %q: %w", k.id, err)
		}
	}
	for _, staged := range []struct {
		rows     int
		appender *duckdb.Appender
		update   string
		table    string
	}{
		{stagedPersons, a.stagedPersons, `UPDATE persons SET properties = s.properties, created_at = s.created_at,
			is_identified = s.is_identified, version = s.version, updated_at = s.updated_at FROM temp.staged_persons s WHERE persons.id = s.id`, "staged_persons"},
		{stagedDistinctIDs, a.stagedDistinctIDs, `UPDATE person_distinct_ids SET person_id = s.person_id, version = version + 1, updated_at = s.updated_at
			FROM temp.staged_distinct_ids s WHERE person_distinct_ids.team_id = s.team_id AND person_distinct_ids.distinct_id = s.distinct_id`, "staged_distinct_ids"},
	} {
		if staged.rows == 0 {
			continue
		}
		if err := staged.appender.Flush(); err != nil {
			return fmt.Errorf("cannot stage %s: %w", staged.table, err)
		}
		if err := exec(staged.update); err != nil {
			return err
		}
		if err := exec(`DELETE FROM temp.` + staged.table); err != nil {
			return err
		}
	}
	for id := range x.delta.deleted {
		if err := exec(`DELETE FROM persons WHERE id = ?::UUID`, id.String()); err != nil {
			return fmt.Errorf("cannot delete merged person %s: %w", id, err)
		}
	}
	if err := x.flushOverrides(exec); err != nil {
		return err
	}
	return x.flushGroups(exec)
}

// apply takes on the delta of a commit that succeeded, and empties it. It runs before
// the commit's submitters are answered, so a lookup that starts after their Submit
// returned sees the commit. The distinct-id cache changes first, then lookups evicts
// what the commit changed: a lookup racing the two reads a moved distinct id's new
// person, as it was before the commit or after it.
func (x *identity) apply() {
	var seq uint64
	if x.lookups != nil {
		seq = x.lookups.stampDistinct(&x.delta) // before the cache takes the new persons
	}
	for k, id := range x.delta.distinct {
		if x.stored != nil {
			x.stored.add(k)
		}
		k.id = strings.Clone(k.id) // the key may alias a request that is gone now
		x.distinct.lru.add(x.distinct.hash(k), k, id)
	}
	for _, k := range x.read {
		if _, changed := x.delta.distinct[k]; !changed { // unchanged: as read, still
			id := x.known[k]
			k.id = strings.Clone(k.id)
			x.distinct.lru.add(x.distinct.hash(k), k, id)
		}
	}
	if x.lookups != nil {
		x.lookups.invalidate(seq, &x.delta) // before the loops below mark new persons stored
	}
	for id := range x.delta.deleted {
		x.persons.Remove(id)
	}
	for id, p := range x.delta.persons {
		p.stored = true
		x.persons.Add(id, p)
	}
	for team, types := range x.delta.groupTypes {
		x.groupTypes[team] = types
	}
	if len(x.delta.groupTypes) > 0 && x.lookups != nil {
		x.lookups.publishGroupTypes(x.groupTypes)
	}
	for _, g := range x.delta.groups {
		g.stored = true
		x.groups.Add(g.key, g)
	}
	x.reset()
}

// identityJSON decodes the small JSON values of identity events: $set, $set_once,
// $unset and $group_set (sonic, field names exact).
var identityJSON = sonic.Config{CaseSensitive: true}.Froze()
