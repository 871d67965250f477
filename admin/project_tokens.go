package admin

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// ProjectTokens maps project API tokens (phc_...) to project ids for the capture
// listener, and projects to their time zones, which flag evaluation reads dates in. It
// is loaded from the database when the API starts, and every change this process makes
// to a project's token updates it after the change commits, so a lookup never reaches
// the database and a new project's token works at once. (A project's time zone is set
// when it is created and never changes.)
type ProjectTokens struct {
	mu        sync.RWMutex
	teams     map[string]int64
	locations map[int64]*time.Location
	// changed receives a value after set, unless one waits already (Changed).
	changed chan struct{}
}

// Changed receives after a token is added or changed, at least once after any number
// of changes since it was last read; a reader then reads Tokens.
func (t *ProjectTokens) Changed() <-chan struct{} { return t.changed }

// Tokens is a copy of every token and its project's id.
func (t *ProjectTokens) Tokens() map[string]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.teams)
}

// Team returns the id of the project whose API token is token.
func (t *ProjectTokens) Team(token string) (int64, bool) {
	t.mu.RLock()
	team, ok := t.teams[token]
	t.mu.RUnlock()
	return team, ok
}

// Location returns the time zone of the project with id team, nil for UTC (or a
// project it does not know).
func (t *ProjectTokens) Location(team int64) *time.Location {
	t.mu.RLock()
	loc := t.locations[team]
	t.mu.RUnlock()
	return loc
}

// set indexes the project's token and its time zone (an IANA name; "" or one that
// does not load is UTC).
func (t *ProjectTokens) set(token string, team int64, timezone string) {
	loc := locationOf(timezone)
	t.mu.Lock()
	t.teams[token] = team
	if loc != nil {
		t.locations[team] = loc
	}
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func locationOf(timezone string) *time.Location {
	if timezone == "" || timezone == "UTC" {
		return nil
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return nil
	}
	return loc
}

func loadProjectTokens(ctx context.Context, q querier) (*ProjectTokens, error) {
	rows, err := q.QueryContext(ctx, `SELECT api_token, id, timezone FROM meta.projects`)
	if err != nil {
		return nil, fmt.Errorf("cannot load project tokens: %w", err)
	}
	defer rows.Close()
	t := &ProjectTokens{teams: make(map[string]int64), locations: make(map[int64]*time.Location), changed: make(chan struct{}, 1)}
	for rows.Next() {
		var token, timezone string
		var team int64
		if err := rows.Scan(&token, &team, &timezone); err != nil {
			return nil, fmt.Errorf("cannot load project tokens: %w", err)
		}
		t.set(token, team, timezone)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot load project tokens: %w", err)
	}
	return t, nil
}
