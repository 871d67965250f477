package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// A query of the query API that its client named (client_query_id in the body, as
// PostHog's clients send it) can be cancelled while it runs by
// DELETE /api/projects/{project_id}/query/{client_query_id}/, PostHog's route: its
// context is cancelled, which stops its statement in DuckDB and its Go loops, and
// frees its slot of the project's queries. A browser that stops waiting (an aborted
// fetch) does not stop the query; the console sends the DELETE too.

// maxClientQueryID bounds the length of a client_query_id (PostHog's clients send a
// UUID, 36 characters).
const maxClientQueryID = 200

// maxNamedQueries is how many named queries a project may have running or waiting for
// one of its slots at once (it runs warehouse.ProjectQueries at a time): the registry's
// bound. One more is refused with a 429.
const maxNamedQueries = 64

// errQueryCancelled is the cause of a named query's context that a DELETE cancelled.
var errQueryCancelled = errors.New("the query was cancelled")

// errQueryWasCancelled answers a query that a DELETE cancelled. PostHog answers a
// killed query with a 500, for it cannot tell a user's KILL from a deploy's; hedge
// cancels only when asked, so the answer is the client's own doing: a 400 with
// ClickHouse's name for it, which PostHog's errors carry as their code.
func errQueryWasCancelled() *Error {
	return errValidation("", "query_was_cancelled", "The query was cancelled before it finished.")
}

// runningQueries are the named queries running now, by project and client_query_id;
// its zero value is ready to use.
type runningQueries struct {
	mu        sync.Mutex
	byID      map[runningKey][]*runningQuery
	byProject map[int64]int
}

type runningKey struct {
	project int64
	id      string
}

// runningQuery is one query of the registry: clients may send the same id twice, and
// a DELETE cancels both, as PostHog's KILL QUERY does.
type runningQuery struct{ cancel context.CancelCauseFunc }

// start registers a query of project named id (none when id is ""): it answers the
// context the query runs under, which a DELETE cancels, and done, which the caller
// calls once the query is answered.
func (r *runningQueries) start(ctx context.Context, project int64, id string) (context.Context, func(), error) {
	if id == "" {
		return ctx, func() {}, nil
	}
	if len(id) > maxClientQueryID {
		return nil, nil, errMaxLength("client_query_id", maxClientQueryID)
	}
	key := runningKey{project, id}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byProject[project] >= maxNamedQueries {
		return nil, nil, &Error{Status: http.StatusTooManyRequests, Type: "throttled_error", Code: "throttled",
			Detail: fmt.Sprintf("The project has %d queries running or waiting: retry once some are done.", maxNamedQueries)}
	}
	if r.byID == nil {
		r.byID, r.byProject = map[runningKey][]*runningQuery{}, map[int64]int{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	q := &runningQuery{cancel: cancel}
	r.byID[key] = append(r.byID[key], q)
	r.byProject[project]++
	return ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		rest := r.byID[key][:0]
		for _, other := range r.byID[key] {
			if other != q {
				rest = append(rest, other)
			}
		}
		if len(rest) == 0 {
			delete(r.byID, key)
		} else {
			r.byID[key] = rest
		}
		if r.byProject[project]--; r.byProject[project] == 0 {
			delete(r.byProject, project)
		}
		cancel(nil)
	}, nil
}

// cancel cancels the queries of project named id, and reports whether there were any.
func (r *runningQueries) cancel(project int64, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	queries := r.byID[runningKey{project, id}]
	for _, q := range queries {
		q.cancel(errQueryCancelled)
	}
	return len(queries) > 0
}

// DELETE /api/projects/{project_id}/query/{query_id}/ (query:read, as PostHog's)
// cancels the project's running queries whose client_query_id is query_id. It answers
// 200 {"message"} as PostHog does, whether or not one was running: a query that
// finished in the meantime is not the client's mistake.
func (a *API) queryCancel(c *fiber.Ctx) error {
	pr, err := a.projectOf(c, principalOf(c))
	if err != nil {
		return err
	}
	if a.running.cancel(pr.id, c.Params("query_id")) {
		return c.JSON(fiber.Map{"message": "Query cancelled"})
	}
	return c.JSON(fiber.Map{"message": "No query with this id is running: it finished, or never started."})
}
