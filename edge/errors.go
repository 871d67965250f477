package edge

import (
	"net/http"
	"strconv"

	"github.com/bytedance/sonic"
	"github.com/valyala/fasthttp"
)

// captureError is a refusal in PostHog's flat shape, {"type","code","detail","attr"}
// (the legacy capture's bodies). Fixed ones are encoded once, at start.
type captureError struct {
	status int
	body   []byte
	detail string // what body says, for the flag routes, which answer in plain text
}

func newCaptureError(status int, typ, code, detail string) *captureError {
	body, err := sonic.Marshal(struct {
		Type   string  `json:"type"`
		Code   string  `json:"code"`
		Detail string  `json:"detail"`
		Attr   *string `json:"attr"`
	}{typ, code, detail, nil})
	if err != nil {
		panic("BUG: cannot encode a capture error: " + err.Error())
	}
	return &captureError{status: status, body: body, detail: detail}
}

func (e *captureError) Error() string { return string(e.body) }

var (
	errMissingAPIKey = newCaptureError(http.StatusUnauthorized, "authentication_error", "missing_api_key",
		"API key not provided. You can find your project API key in PostHog project settings.")
	errInvalidAPIKey = newCaptureError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
		"Project API key invalid. You can find your project API key in PostHog project settings.")
	errPersonalAPIKey = newCaptureError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
		"This is a personal API key (phx_...). Send events with the project API key (phc_...), found in the project's settings.")
	errInconsistentTokens = newCaptureError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
		"The request holds events with different project API keys; send each project's events on their own.")
	errNoData = newCaptureError(http.StatusBadRequest, "validation_error", "no_data",
		"No data found. Make sure to use a POST request when sending the payload in the body of the request.")
	errTooLarge = newCaptureError(http.StatusRequestEntityTooLarge, "client_error", "request_too_large",
		"Request too large.")
	errDecompressedTooLarge = newCaptureError(http.StatusRequestEntityTooLarge, "client_error", "request_too_large",
		"Request too large: it decompresses to more than 100 MB.")
	errEventTooLarge = newCaptureError(http.StatusRequestEntityTooLarge, "client_error", "request_too_large",
		"Request too large: an event is larger than 1 MB.")
	errTooManyEventsAtOnce = newCaptureError(http.StatusRequestEntityTooLarge, "client_error", "request_too_large",
		"Request too large: it holds more events than the capture listener holds at once (--max-inflight-bytes); send smaller batches.")
	errMethodNotAllowed = newCaptureError(http.StatusMethodNotAllowed, "invalid_request", "method_not_allowed",
		"Method not allowed: send events with POST.")
	errNotFound = newCaptureError(http.StatusNotFound, "invalid_request", "not_found", "Not found.")
	// errUnavailable asks the client to retry: every PostHog SDK retries 5xx, and
	// posthog-js treats 429 as final, so overload is never a 4xx.
	errUnavailable = newCaptureError(http.StatusServiceUnavailable, "server_error", "unavailable",
		"The server cannot take events right now; retry shortly.")
)

// errInvalidPayload is a 400 for a body that is not what capture accepts; reason is
// shown to the client, so it must never hold internal detail.
func errInvalidPayload(reason string) *captureError {
	return newCaptureError(http.StatusBadRequest, "validation_error", "invalid_payload", "Malformed request data: "+reason)
}

// retryAfterSeconds is what 503 answers put in Retry-After.
const retryAfterSeconds = 1

func writeError(ctx *fasthttp.RequestCtx, e *captureError) {
	if e.status == http.StatusServiceUnavailable {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds))
	}
	if e.status == http.StatusMethodNotAllowed {
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "POST, OPTIONS")
	}
	ctx.SetStatusCode(e.status)
	ctx.SetContentType("application/json")
	ctx.SetBody(e.body)
}
