package admin

import (
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
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

// paginated is the list envelope of the spec.
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
	if p.offset+p.limit < count {
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
