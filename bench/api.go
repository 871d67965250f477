package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// apiClient reads hedge's management listener: the query API (visibility and row
// counts), the management API (the mixed scenario) and /metrics.
type apiClient struct {
	client   *fasthttp.Client
	adminURL string
	key      string
	project  int64
	timeout  time.Duration // of one call
}

// apiTimeout bounds one call; hedge's own query timeout is 30 s.
const apiTimeout = time.Minute

func newAPIClient(adminURL, key string, project int64) *apiClient {
	return newAPIClientTimeout(adminURL, key, project, apiTimeout)
}

// newAPIClientTimeout is an apiClient whose calls may take up to timeout: a dashboard
// computes its insights one after another, each within hedge's query timeout.
func newAPIClientTimeout(adminURL, key string, project int64, timeout time.Duration) *apiClient {
	return &apiClient{
		client:   &fasthttp.Client{Name: "hedge-bench", MaxConnsPerHost: 16, ReadTimeout: timeout, WriteTimeout: timeout},
		adminURL: adminURL, key: key, project: project, timeout: timeout,
	}
}

// do sends one request and returns the answer's status and a copy of its body.
func (a *apiClient) do(method, path string, body []byte) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(a.adminURL + path)
	req.Header.SetMethod(method)
	req.Header.Set(fasthttp.HeaderAuthorization, "Bearer "+a.key)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
	}
	if err := a.client.DoTimeout(req, resp, a.timeout); err != nil {
		return 0, nil, fmt.Errorf("cannot %s %s: %w", method, path, err)
	}
	return resp.StatusCode(), bytes.Clone(resp.Body()), nil
}

// query runs a query of the query API (a {"kind": ...} object) and returns its status.
func (a *apiClient) query(q any) (int, []byte, error) {
	body, err := json.Marshal(map[string]any{"query": q})
	if err != nil {
		return 0, nil, fmt.Errorf("cannot encode a query: %w", err)
	}
	return a.do(fasthttp.MethodPost, fmt.Sprintf("/api/projects/%d/query/", a.project), body)
}

// hogql runs SQL through the query API and returns its rows of integers.
func (a *apiClient) hogql(sql string) ([][]int64, error) {
	status, body, err := a.query(map[string]string{"kind": "HogQLQuery", "query": sql})
	if err != nil {
		return nil, err
	}
	if status != fasthttp.StatusOK {
		return nil, fmt.Errorf("cannot run %q: the query API answered %d: %.300s", sql, status, body)
	}
	var result struct {
		Results [][]json.Number `json:"results"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&result); err != nil {
		return nil, fmt.Errorf("cannot read the answer to %q: %w", sql, err)
	}
	rows := make([][]int64, len(result.Results))
	for i, r := range result.Results {
		for _, v := range r {
			n, err := v.Int64()
			if err != nil {
				return nil, fmt.Errorf("cannot read the answer to %q: %q is not an integer", sql, v)
			}
			rows[i] = append(rows[i], n)
		}
	}
	return rows, nil
}

// count runs SQL that answers one row and returns it.
func (a *apiClient) count(sql string) ([]int64, error) {
	rows, err := a.hogql(sql)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%q answered %d rows, want 1", sql, len(rows))
	}
	return rows[0], nil
}

// metrics reads the named counters and gauges (without labels) from /metrics.
func (a *apiClient) metrics(names ...string) (map[string]float64, error) {
	status, body, err := a.do(fasthttp.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	if status != fasthttp.StatusOK {
		return nil, fmt.Errorf("cannot read /metrics: %d", status)
	}
	m := map[string]float64{}
	for line := range bytes.Lines(body) {
		name, value, ok := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		if !ok {
			continue
		}
		for _, want := range names {
			if string(name) == want {
				if v, err := strconv.ParseFloat(string(value), 64); err == nil {
					m[want] = v
				}
			}
		}
	}
	for _, want := range names {
		if _, ok := m[want]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", want)
		}
	}
	return m, nil
}
