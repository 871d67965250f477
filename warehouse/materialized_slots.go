package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Properties a project chooses to materialize: beside the fixed columns
// (materialized.go), events has slotCount generic columns, "mat_slot_<n>" (migration
// 15), and each project may give each of them a property key of its own
// (SetMaterializedProperties), which meta.materialized_slots records. For the
// project's rows, the slot then holds exactly what json_extract_string(properties,
// '$."<key>"') returns: the Writer fills it on ingest with the project's keys, the
// rows stored before the choice are filled in the background (slotBackfill), and the
// query engine reads the slot where a query of the project reads that property of
// events. Another project's rows hold its own keys' values in the same slot, so a
// slot is read only through a project's view (Queries.views), which holds that
// project's rows alone, with that project's mapping.

// slotCount is the number of slot columns: MaxMaterializedProperties.
const slotCount = 8

// MaxMaterializedProperties is how many properties a project may choose.
const MaxMaterializedProperties = slotCount

// maxChosenKeyBytes bounds the length of a chosen key.
const maxChosenKeyBytes = 200

// slotColumn is the column of slot s, unquoted.
func slotColumn(s int) string { return "mat_slot_" + strconv.Itoa(s) }

// MaterializedPropertiesError is a choice of properties that SetMaterializedProperties
// refuses; its message is meant for the user.
type MaterializedPropertiesError struct{ Detail string }

func (e *MaterializedPropertiesError) Error() string { return e.Detail }

// CheckMaterializedProperties refuses a choice of keys that SetMaterializedProperties
// would refuse: more than MaxMaterializedProperties, a key twice, a key that has a
// column already, or a key that checkChosenKey refuses.
func CheckMaterializedProperties(keys []string) error {
	if len(keys) > MaxMaterializedProperties {
		return &MaterializedPropertiesError{Detail: fmt.Sprintf("A project may materialize at most %d properties.", MaxMaterializedProperties)}
	}
	for i, k := range keys {
		if err := checkChosenKey(k); err != nil {
			return err
		}
		if isMaterialized(k) {
			return &MaterializedPropertiesError{Detail: fmt.Sprintf("%q is materialized for every project already.", k)}
		}
		if slices.Contains(keys[:i], k) {
			return &MaterializedPropertiesError{Detail: fmt.Sprintf("%q is listed twice.", k)}
		}
	}
	return nil
}

// checkChosenKey refuses a key that cannot be read as a JSON path literal written as
// hogql.Rewrite writes it and hogql.Materialize reads it, '$."<key>"': one with a
// double quote or a backslash (Rewrite refuses them in the dot form), a single quote
// (Rewrite doubles it, so the text is not the path), a * (DuckDB reads "*" as a
// wildcard even quoted), or a control character (no JSON text holds one in a key
// unescaped); and an empty one, or one longer than maxChosenKeyBytes.
func checkChosenKey(key string) error {
	switch {
	case key == "":
		return &MaterializedPropertiesError{Detail: "A property name may not be blank."}
	case len(key) > maxChosenKeyBytes:
		return &MaterializedPropertiesError{Detail: fmt.Sprintf("A property name may have at most %d bytes.", maxChosenKeyBytes)}
	case !utf8.ValidString(key) || !literalPath(key):
		return &MaterializedPropertiesError{Detail: fmt.Sprintf(`%q cannot be materialized: a property name may not hold quotes, \, * or control characters.`, key)}
	}
	return nil
}

// literalPath reports whether key can be written in the path literal '$."<key>"'
// and read back as the same key by DuckDB and by hogql.Materialize (checkChosenKey).
func literalPath(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\'' || r == '\\' || r == '*' {
			return false
		}
	}
	return true
}

// slotState is one key a project gave a slot: the same while the key stays there.
type slotState struct {
	key string
	// The project's rows [next, end) (rowids) may hold another value than the key's
	// and are read from the JSON; next moves as the backfill commits its chunks.
	next atomic.Int64
	end  int64
}

// teamSlots are the slots of one project, by slot; never changed once published
// (chosenSlots.teams), but for each slot's next.
type teamSlots struct {
	keys      [slotCount]string // "" for a slot unused: what the Writer extracts
	positions [slotCount]int    // of each key in the list the project chose
	slots     [slotCount]*slotState
}

// column is the column a read of key in events' properties becomes
// (hogql.Materialize) for a project whose slots are t (nil: none): a fixed key's
// column, or the slot's of a key the project chose.
func (t *teamSlots) column(key string) (string, bool) {
	if isMaterialized(key) {
		return `"` + materializedColumn(key) + `"`, true
	}
	if t != nil {
		for s, k := range t.keys {
			if k == key {
				return `"` + slotColumn(s) + `"`, true
			}
		}
	}
	return "", false
}

// chosenSlots is the projects' slots and their backfill.
type chosenSlots struct {
	db *sql.DB
	// mu is held by the Writer through each commit, from reading teams to its COMMIT,
	// and by a change while it records its end_row and publishes teams: so each row
	// committed after a change is written with the new keys, and each row committed
	// before it has a rowid below the change's end_row.
	mu sync.Mutex
	// teams is the published mapping (copied on change): the Writer reads it once per
	// commit, a query once per run.
	teams atomic.Pointer[map[int64]*teamSlots]
	// generation moves with every change published: a query that read the mapping
	// before a change and began its snapshot after it reads again (Queries.open).
	generation atomic.Uint64
	// change orders the changes, and each against the backfill it stops and restarts.
	change   sync.Mutex
	backfill slotBackfill
}

// loadSlots reads the projects' slots.
func loadSlots(ctx context.Context, db *sql.DB, cfg *Config, fixed *rowBackfill) (*chosenSlots, error) {
	s := &chosenSlots{db: db}
	s.backfill = slotBackfill{slots: s, fixed: fixed, rows: int64(cfg.BackfillRows), nice: cfg.Query.Nice, log: cfg.Logger}
	rows, err := db.QueryContext(ctx, `SELECT team_id, slot, key, position, next_row, end_row FROM meta.materialized_slots`)
	if err != nil {
		return nil, fmt.Errorf("cannot read the materialized slots: %w", err)
	}
	defer rows.Close()
	teams := map[int64]*teamSlots{}
	for rows.Next() {
		var team, next int64
		var slot, position int
		st := &slotState{}
		if err := rows.Scan(&team, &slot, &st.key, &position, &next, &st.end); err != nil {
			return nil, fmt.Errorf("cannot read the materialized slots: %w", err)
		}
		if slot < 0 || slot >= slotCount {
			return nil, fmt.Errorf("cannot read the materialized slots: project %d uses slot %d of %d", team, slot, slotCount)
		}
		st.next.Store(next)
		t := teams[team]
		if t == nil {
			t = &teamSlots{}
			teams[team] = t
		}
		t.keys[slot], t.positions[slot], t.slots[slot] = st.key, position, st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the materialized slots: %w", err)
	}
	s.teams.Store(&teams)
	return s, nil
}

// of is the slots of team, nil when it chose no property.
func (s *chosenSlots) of(team int64) *teamSlots { return (*s.teams.Load())[team] }

// MaterializedProperties is the properties team chose, in the order it chose them.
func (w *Warehouse) MaterializedProperties(team int64) []string {
	t := w.slots.of(team)
	keys := []string{}
	if t == nil {
		return keys
	}
	var used []int
	for s, k := range t.keys {
		if k != "" {
			used = append(used, s)
		}
	}
	slices.SortFunc(used, func(a, b int) int { return t.positions[a] - t.positions[b] })
	for _, s := range used {
		keys = append(keys, t.keys[s])
	}
	return keys
}

// SetMaterializedProperties makes keys the properties team materializes, in slots of
// their own (a *MaterializedPropertiesError when CheckMaterializedProperties refuses
// them). A key kept keeps its slot; a new key takes a free slot, which the Writer
// fills from the next commit on, and whose rows of team stored before are filled in
// the background (slotBackfill), read from the JSON until then: every answer is the
// same throughout.
func (w *Warehouse) SetMaterializedProperties(ctx context.Context, team int64, keys []string) error {
	if err := CheckMaterializedProperties(keys); err != nil {
		return err
	}
	return w.slots.set(ctx, team, keys)
}

func (s *chosenSlots) set(ctx context.Context, team int64, keys []string) error {
	s.change.Lock()
	defer s.change.Unlock()
	old := s.of(team)
	if old == nil {
		old = &teamSlots{}
	}
	// The new slots: a key kept stays where it is, with the state of its backfill; a
	// new one takes the first slot free.
	var next teamSlots
	var added []int
	for position, k := range keys {
		if slot := slices.Index(old.keys[:], k); slot >= 0 {
			next.keys[slot], next.positions[slot], next.slots[slot] = k, position, old.slots[slot]
		} else {
			added = append(added, position)
		}
	}
	for _, position := range added {
		slot := slices.Index(next.keys[:], "")
		next.keys[slot], next.positions[slot], next.slots[slot] = keys[position], position, &slotState{key: keys[position]}
	}
	if next.keys == old.keys && next.positions == old.positions {
		return nil
	}
	// A running backfill of team's old keys would move rows of meta.materialized_slots
	// this changes: it stops (its chunk rolled back) and starts again after.
	if s.backfill.stop() {
		defer s.backfill.start()
	}
	s.mu.Lock() // the Writer waits between two commits
	defer s.mu.Unlock()
	var first, end int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(min(rowid), 0), coalesce(max(rowid) + 1, 0) FROM events WHERE team_id = ?`,
		team).Scan(&first, &end); err != nil {
		return fmt.Errorf("cannot read the rows of project %d: %w", team, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin a change of materialized properties: %w", err)
	}
	defer tx.Rollback()
	for slot := range slotCount {
		o, n := old.slots[slot], next.slots[slot]
		var err error
		switch {
		case n == nil && o == nil:
			continue
		case n == nil:
			_, err = tx.ExecContext(ctx, `DELETE FROM meta.materialized_slots WHERE team_id = ? AND slot = ?`, team, slot)
		case n == o:
			_, err = tx.ExecContext(ctx, `UPDATE meta.materialized_slots SET position = ? WHERE team_id = ? AND slot = ?`,
				next.positions[slot], team, slot)
		default:
			// The team's rows stored so far hold another key's value, or none.
			n.next.Store(first)
			n.end = end
			if o == nil {
				_, err = tx.ExecContext(ctx, `INSERT INTO meta.materialized_slots VALUES (?, ?, ?, ?, ?, ?)`,
					team, slot, n.key, next.positions[slot], first, end)
			} else {
				_, err = tx.ExecContext(ctx, `UPDATE meta.materialized_slots SET key = ?, position = ?, next_row = ?, end_row = ?
					WHERE team_id = ? AND slot = ?`, n.key, next.positions[slot], first, end, team, slot)
			}
		}
		if err != nil {
			return fmt.Errorf("cannot record slot %d of project %d: %w", slot, team, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a change of materialized properties: %w", err)
	}
	teams := maps.Clone(*s.teams.Load())
	if len(keys) == 0 {
		delete(teams, team)
	} else {
		teams[team] = &next
	}
	s.teams.Store(&teams)
	s.generation.Add(1)
	return nil
}

// slotBackfill fills the slots' rows [next, end) of each project, as the fixed
// columns' backfill does (backfill.go): a chunk of rowids at a time, each chunk one
// transaction that also moves next_row, at the priority of users' queries, resting as
// long as a chunk took while the Writer commits. The chunk reads only the project's
// rows, and fills at once the slots whose rows to fill are the same (those chosen
// together). It begins once the fixed columns' backfill is done, so that no two
// backfills update a row at once.
type slotBackfill struct {
	slots   *chosenSlots
	fixed   *rowBackfill
	rows    int64
	nice    int
	commits func() uint64
	log     *slog.Logger

	mu      sync.Mutex
	started bool // by StartBackfill: a change restarts it
	cancel  context.CancelFunc
	stopped chan struct{} // closed when the running backfill ends
	err     error
}

// start runs the backfill in the background until every slot is filled, or stop.
func (b *slotBackfill) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = true
	if b.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.stopped, b.err = cancel, make(chan struct{}), nil
	stopped := b.stopped
	go func() {
		defer close(stopped)
		begin := time.Now()
		err := b.run(ctx)
		switch {
		case err == nil:
			b.log.Debug("materialized slots backfilled", "took", time.Since(begin).Round(time.Millisecond))
		case ctx.Err() == nil:
			b.log.Error("cannot backfill the materialized slots", "err", err)
		}
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}()
}

// stop ends a running backfill and waits for it (its chunk in progress is rolled
// back), and reports whether it had been started: then a start resumes it.
func (b *slotBackfill) stop() (started bool) {
	b.mu.Lock()
	cancel, stopped, started := b.cancel, b.stopped, b.started
	b.cancel = nil
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
	return started
}

// wait blocks until the running backfill ends (nil, or its error) or ctx does.
func (b *slotBackfill) wait(ctx context.Context) error {
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	if stopped == nil {
		return errors.New("cannot wait for the slots' backfill: it was not started")
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// slotWork is the slots of one project whose rows [next, end) are still to fill.
type slotWork struct {
	team      int64
	slots     []int
	states    []*slotState
	next, end int64
}

// pending is the first slots still to fill, by project id then slot, with the slots
// of the project that have the same rows to fill; ok is false once all are filled.
func (s *chosenSlots) pending() (work slotWork, ok bool) {
	teams := *s.teams.Load()
	ids := make([]int64, 0, len(teams))
	for id := range teams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for slot, st := range teams[id].slots {
			if st == nil || st.next.Load() >= st.end {
				continue
			}
			if !ok {
				work, ok = slotWork{team: id, next: st.next.Load(), end: st.end}, true
			}
			if st.next.Load() == work.next && st.end == work.end {
				work.slots, work.states = append(work.slots, slot), append(work.states, st)
			}
		}
		if ok {
			return work, true
		}
	}
	return slotWork{}, false
}

// run fills chunks until no slot is left to fill.
func (b *slotBackfill) run(ctx context.Context) error {
	if err := b.fixed.wait(ctx); err != nil {
		return err
	}
	for {
		work, ok := b.slots.pending()
		if !ok {
			return nil
		}
		to := min(work.end, work.next+b.rows)
		commits := b.commits()
		begin := time.Now()
		_, err := onLoweredThread(b.nice, func() (struct{}, error) { return struct{}{}, b.chunk(ctx, work, to) })
		if err != nil {
			return err
		}
		took := time.Since(begin)
		for _, st := range work.states {
			st.next.Store(to)
		}
		b.log.Debug("materialized slots backfill chunk", "team", work.team, "slots", work.slots, "from", work.next, "to", to,
			"of", work.end, "took", took)
		if b.commits() != commits {
			select {
			case <-time.After(took):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// chunk fills work's slots for the project's rows [work.next, to) and records
// next_row = to, in one transaction. The keys are written in the paths as literals:
// checkChosenKey allows no quote in them.
func (b *slotBackfill) chunk(ctx context.Context, work slotWork, to int64) error {
	sets := make([]string, len(work.slots))
	paths := make([]string, len(work.slots))
	slots := make([]string, len(work.slots))
	for i, s := range work.slots {
		sets[i] = fmt.Sprintf(`"%s" = v[%d]`, slotColumn(s), i+1)
		paths[i] = `'$."` + work.states[i].key + `"'`
		slots[i] = strconv.Itoa(s)
	}
	tx, err := b.slots.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot begin a chunk of the slots' backfill: %w", err)
	}
	defer tx.Rollback()
	// The values of a chunk, each row's text parsed once, joined back on rowid.
	if _, err := tx.ExecContext(ctx, `UPDATE events SET `+strings.Join(sets, ", ")+`
		FROM (SELECT rowid AS r, json_extract_string(`+PropertiesText+`, [`+strings.Join(paths, ", ")+`]) AS v
			FROM events WHERE team_id = $1 AND rowid >= $2 AND rowid < $3) chunk
		WHERE events.rowid = chunk.r`, work.team, work.next, to); err != nil {
		return fmt.Errorf("cannot fill slots %v of project %d, rows %d to %d: %w", work.slots, work.team, work.next, to, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta.materialized_slots SET next_row = ? WHERE team_id = ? AND slot IN (`+
		strings.Join(slots, ", ")+`)`, to, work.team); err != nil {
		return fmt.Errorf("cannot record the slots' backfill position: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot commit a chunk of the slots' backfill: %w", err)
	}
	return nil
}
