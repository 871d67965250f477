package admin

import (
	"context"
	"fmt"
	"sync"
)

// ProjectTokens maps project API tokens (phc_...) to project ids for the capture
// listener. It is loaded from the database when the API starts, and every change this
// process makes to a project's token updates it after the change commits, so a lookup
// never reaches the database and a new project's token works at once.
type ProjectTokens struct {
	mu    sync.RWMutex
	teams map[string]int64
}

// Team returns the id of the project whose API token is token.
func (t *ProjectTokens) Team(token string) (int64, bool) {
	t.mu.RLock()
	team, ok := t.teams[token]
	t.mu.RUnlock()
	return team, ok
}

func (t *ProjectTokens) set(token string, team int64) {
	t.mu.Lock()
	t.teams[token] = team
	t.mu.Unlock()
}

func loadProjectTokens(ctx context.Context, q querier) (*ProjectTokens, error) {
	rows, err := q.QueryContext(ctx, `SELECT api_token, id FROM meta.projects`)
	if err != nil {
		return nil, fmt.Errorf("cannot load project tokens: %w", err)
	}
	defer rows.Close()
	t := &ProjectTokens{teams: make(map[string]int64)}
	for rows.Next() {
		var token string
		var team int64
		if err := rows.Scan(&token, &team); err != nil {
			return nil, fmt.Errorf("cannot load project tokens: %w", err)
		}
		t.teams[token] = team
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot load project tokens: %w", err)
	}
	return t, nil
}
