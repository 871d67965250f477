package admin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/records"
)

// defaultPageSize is PostHog's PAGE_SIZE. PostHog sets no maximum, so neither do we.
const defaultPageSize = 100

// page is a limit/offset window over a list, read from the query string the way DRF's
// LimitOffsetPagination does: a limit that is not a positive integer gives the default
// page, an offset that is not a non-negative integer gives 0.
type page struct {
	limit, offset int
}

func pageOf(c *fiber.Ctx) page {
	p := page{limit: defaultPageSize}
	if n, err := strconv.Atoi(c.Query("limit")); err == nil && n > 0 {
		p.limit = n
	}
	if n, err := strconv.Atoi(c.Query("offset")); err == nil && n > 0 {
		p.offset = n
	}
	return p
}

// listQuery is what a list endpoint selects: count counts every record that list
// selects, in list's order; both take args. list ends with its ORDER BY: the page's
// LIMIT and OFFSET are added to it. what names the records in errors.
type listQuery[T any] struct {
	what        string
	count, list string
	args        []any
	scan        func(records.Scanner) (T, error)
}

// queryPage reads the page of the request's limit and offset, and how many records
// there are in all.
func queryPage[T any](c *fiber.Ctx, q querier, l listQuery[T]) (page, []T, int, error) {
	pg := pageOf(c)
	results, count, err := records.Page(c.UserContext(), q, l.what, l.scan, l.count, l.list, l.args, pg.limit, pg.offset)
	return pg, results, count, err
}

// scanID reads a record's integer id, scanUUID its UUID: for lists that load each
// record on its own after reading the page's ids.
func scanID(row records.Scanner) (id int64, err error) {
	err = row.Scan(&id)
	return id, err
}

func scanUUID(row records.Scanner) (id uuid.UUID, err error) {
	err = row.Scan(&id)
	return id, err
}

// listPage answers a list request with the page of the request's limit and offset.
func listPage[T any](c *fiber.Ctx, a *API, l listQuery[T]) error {
	pg, results, count, err := queryPage(c, a.db, l)
	if err != nil {
		return err
	}
	return a.sendPage(c, pg, count, results)
}

// paginated is the envelope of every limit/offset list: DRF's LimitOffsetPagination.
type paginated struct {
	Count    int     `json:"count"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  any     `json:"results"`
}

// sendPage answers a list request with results (one page of count records in all),
// with absolute next/previous links that keep the request's other query parameters.
func (a *API) sendPage(c *fiber.Ctx, p page, count int, results any) error {
	env := paginated{Count: count, Results: results}
	if p.offset < count && p.limit < count-p.offset { // offset+limit < count, without overflow
		next := a.pageURL(c, p.limit, p.offset+p.limit)
		env.Next = &next
	}
	if p.offset > 0 {
		prev := a.pageURL(c, p.limit, p.offset-p.limit)
		env.Previous = &prev
	}
	return c.JSON(env)
}

// pageURL is the request's own URL with limit and offset replaced; an offset of 0 or
// less is dropped, as DRF does. Query keys come out sorted (DRF re-encodes them so).
func (a *API) pageURL(c *fiber.Ctx, limit, offset int) string {
	return a.requestURL(c, func(query url.Values) {
		query.Set("limit", strconv.Itoa(limit))
		if offset > 0 {
			query.Set("offset", strconv.Itoa(offset))
		} else {
			query.Del("offset")
		}
	})
}

// requestURL is the request's own absolute URL (from --public-url when set) with its
// query parameters changed by edit.
func (a *API) requestURL(c *fiber.Ctx, edit func(url.Values)) string {
	query := url.Values{}
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		query.Add(string(k), string(v))
	})
	edit(query)
	base := a.publicURL
	if base == "" {
		base = c.BaseURL()
	}
	return base + c.Path() + "?" + query.Encode()
}

// cursorPage is DRF's CursorPagination envelope: no count.
type cursorPage struct {
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  any     `json:"results"`
}

// sendCursorPage answers with one page of a cursor-paginated list: results in list
// order, read from a cursor if fromCursor (backwards from it if reverse), with more
// when the read found results beyond the page in the direction it read. cursor is the
// position of a result: with reverse for the page before it, else for the page after.
func sendCursorPage[T any](c *fiber.Ctx, a *API, results []T, fromCursor, reverse, more bool, cursor func(T, bool) any) error {
	page := cursorPage{Results: results}
	if len(results) > 0 {
		// Forward: there is a next page if the read found more, or if this page was read
		// backwards (it came from there). Backward: the mirror image.
		if more || reverse {
			next := a.cursorURL(c, cursor(results[len(results)-1], false))
			page.Next = &next
		}
		if fromCursor && (!reverse || more) {
			prev := a.cursorURL(c, cursor(results[0], true))
			page.Previous = &prev
		}
	}
	return c.JSON(page)
}

// cursorURL is the request's URL with its cursor replaced by position, which is
// opaque to clients: base64url of its JSON.
func (a *API) cursorURL(c *fiber.Ctx, position any) string {
	text, err := json.Marshal(position)
	if err != nil {
		panic(fmt.Sprintf("BUG: cannot encode cursor %T: %v", position, err))
	}
	return a.requestURL(c, func(query url.Values) { query.Set("cursor", base64.RawURLEncoding.EncodeToString(text)) })
}

// decodeCursor reads a cursor that cursorURL made into position.
func decodeCursor(s string, position any) error {
	text, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(text, position)
	}
	if err != nil {
		return errInvalidCursor()
	}
	return nil
}

// errInvalidCursor is DRF's answer to a cursor it did not make.
func errInvalidCursor() error { return errNotFound("Invalid cursor") }
