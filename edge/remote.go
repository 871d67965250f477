package edge

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"
)

// Remote is the warehouse node's capture listener as an edge-only node of a cluster
// reaches it: the flag routes, which read the warehouse's definitions and persons,
// are forwarded to it as sent (method, path, query, headers, body), and its answer is
// the client's. An edge-only node's own edge reads the body first, under its limits.
type Remote struct {
	url    func() string
	client fasthttp.Client
}

// remoteTimeout bounds a forwarded request: a flags evaluation's deadline, and the
// SDKs' definitions, with room to spare.
const remoteTimeout = 10 * time.Second

// maxRemoteAnswer bounds the answer of a forwarded request read into memory.
const maxRemoteAnswer = 64 << 20

// NewRemote returns the Remote at url(), the warehouse node's capture URL as the
// cluster last told it ("" while it has not: requests are answered 503).
func NewRemote(url func() string) *Remote {
	return &Remote{url: url, client: fasthttp.Client{
		Name:                "hedge-edge",
		MaxConnsPerHost:     256,
		ReadTimeout:         remoteTimeout,
		WriteTimeout:        remoteTimeout,
		MaxResponseBodySize: maxRemoteAnswer,
		// The answer goes to the client as the warehouse node wrote it.
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
	}}
}

// errRemoteUnknown: the cluster has not said where the warehouse node is.
var errRemoteUnknown = errors.New("the warehouse node's address is not known yet")

// forward answers ctx with the warehouse node's answer to the same request, or 503
// when that node does not answer (it is down or restarting: the client retries).
func (r *Remote) forward(ctx *fasthttp.RequestCtx, s *Server) {
	q := requestPool.Get().(*request)
	q.res.budget = s.budget
	defer func() {
		q.release()
		requestPool.Put(q)
	}()
	if err := s.readRequestBody(ctx, q, maxFlagsBody); err != nil {
		s.answer(ctx, readError(err))
		return
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := r.do(ctx, req, q.body); err != nil {
		s.log.Warn("cannot forward a request to the warehouse node", "path", string(ctx.Path()), "err", err)
		ctx.Response.Reset()
		allowCORS(ctx)
		s.answer(ctx, errUnavailable)
	}
}

func (r *Remote) do(ctx *fasthttp.RequestCtx, req *fasthttp.Request, body []byte) error {
	base := r.url()
	if base == "" {
		return errRemoteUnknown
	}
	ctx.Request.Header.CopyTo(&req.Header)
	req.Header.Del(fasthttp.HeaderTransferEncoding) // the body goes whole, with its length
	req.SetRequestURI(base + string(ctx.Request.Header.RequestURI()))
	req.SetBody(body)
	return r.client.DoTimeout(req, &ctx.Response, remoteTimeout)
}
