package admin

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// Error is an API error in PostHog's flat shape: {"type", "code", "detail", "attr"}.
// Handlers return it; handleError renders it, once. It never carries internal detail:
// anything that is not an *Error becomes a generic 500 and is logged instead.
type Error struct {
	Status int     `json:"-"`
	Type   string  `json:"type"`
	Code   string  `json:"code"`
	Detail string  `json:"detail"`
	Attr   *string `json:"attr"`
	// RetryAfter, when not 0, is the seconds a 429 asks to wait, in Retry-After.
	RetryAfter int `json:"-"`
}

func (e *Error) Error() string { return e.Detail }

func errNotAuthenticated() *Error {
	return &Error{Status: http.StatusUnauthorized, Type: "authentication_error", Code: "not_authenticated",
		Detail: "Authentication credentials were not provided."}
}

func errAuthenticationFailed(detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: "authentication_error", Code: "authentication_failed", Detail: detail}
}

func errPermissionDenied(detail string) *Error {
	return &Error{Status: http.StatusForbidden, Type: "authentication_error", Code: "permission_denied", Detail: detail}
}

func errNotFound(detail string) *Error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request", Code: "not_found", Detail: detail}
}

func errMethodNotAllowed(method string) *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Type: "invalid_request", Code: "method_not_allowed",
		Detail: fmt.Sprintf("Method %q not allowed.", method)}
}

// errConflict is PostHog's 409 (its Conflict exception, which declares no type).
func errConflict(detail string) *Error {
	return &Error{Status: http.StatusConflict, Type: "server_error", Code: "conflict", Detail: detail}
}

// errValidation is a 400 about one field of the request (attr, nested fields joined
// with "__"), or about the request as a whole when attr is "".
func errValidation(attr, code, detail string) *Error {
	e := &Error{Status: http.StatusBadRequest, Type: "validation_error", Code: code, Detail: detail}
	if attr != "" {
		e.Attr = &attr
	}
	return e
}

// The field errors of DRF's serializers, in its words.

// errRequired is DRF's error for a required field the request lacks.
func errRequired(attr string) *Error {
	return errValidation(attr, "required", "This field is required.")
}

// errNull is DRF's error for a field sent as null that may not be.
func errNull(attr string) *Error {
	return errValidation(attr, "null", "This field may not be null.")
}

// errBlank is DRF's error for a string field sent empty that may not be.
func errBlank(attr string) *Error {
	return errValidation(attr, "blank", "This field may not be blank.")
}

// errMaxLength is DRF's error for a string field longer than max characters.
func errMaxLength(attr string, max int) *Error {
	return errValidation(attr, "max_length", fmt.Sprintf("Ensure this field has no more than %d characters.", max))
}

// errInvalidChoice is DRF's ChoiceField error for a value that is not one of the
// field's choices, as the request wrote it.
func errInvalidChoice(attr, value string) *Error {
	return errValidation(attr, "invalid_choice", fmt.Sprintf("%q is not a valid choice.", value))
}

// errDatetimeFormat is DRF's DateTimeField error for a value that is not ISO 8601.
func errDatetimeFormat(attr string) *Error {
	return errValidation(attr, "invalid", "Datetime has wrong format. Use ISO 8601, e.g. 2024-01-31T00:00:00Z.")
}

// errShuttingDown is a 503 for a request that hedge's shutdown cut short.
func errShuttingDown(detail string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable", Detail: detail}
}

// errRecordNotFound is DRF's 404 for a record the path names that the caller cannot
// see, whether or not it exists.
func errRecordNotFound() *Error { return errNotFound("Not found.") }

// isRefusal reports an error that is an answer to the caller (an *Error), not a failure.
func isRefusal(err error) bool {
	var apiErr *Error
	return errors.As(err, &apiErr)
}

var errServer = &Error{Status: http.StatusInternalServerError, Type: "server_error", Code: "error",
	Detail: "A server error occurred."}

// handleError is Fiber's ErrorHandler: the one place where errors become responses and
// where unexpected errors are logged.
func (a *API) handleError(c *fiber.Ctx, err error) error {
	var apiErr *Error
	var fiberErr *fiber.Error
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &fiberErr):
		apiErr = fromFiberError(c, fiberErr)
	default:
		a.log.Error("request failed", "method", c.Method(), "path", c.Path(), "err", err)
		apiErr = errServer
	}
	if apiErr.Status == http.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, "Bearer")
	}
	if apiErr.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(apiErr.RetryAfter))
	}
	return c.Status(apiErr.Status).JSON(apiErr)
}

// responseHeaders marks every answer nosniff, so that no browser takes JSON for a page
// or a script, and makes it uncacheable unless its handler says otherwise: answers
// carry keys (a new personal API key, a project's token) and people's data, which no
// browser or shared cache may keep. It wraps every other handler, so errors and
// recovered panics get the headers too.
func responseHeaders(c *fiber.Ctx) error {
	err := c.Next()
	h := &c.Response().Header
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if len(h.Peek(fiber.HeaderCacheControl)) == 0 {
		h.Set(fiber.HeaderCacheControl, "no-store")
	}
	return err
}

// recoverPanic answers a handler's panic with the generic 500 and logs it once, with
// its stack, so that a bug in one handler fails one request and never the listener.
func (a *API) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("request panicked", "method", c.Method(), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
			err = errServer
		}
	}()
	return c.Next()
}

// fromFiberError maps the errors Fiber raises itself (routing, body limits, bad
// requests) to the flat shape.
func fromFiberError(c *fiber.Ctx, e *fiber.Error) *Error {
	switch e.Code {
	case http.StatusNotFound:
		return errRecordNotFound()
	case http.StatusMethodNotAllowed:
		return errMethodNotAllowed(c.Method())
	case http.StatusRequestEntityTooLarge:
		return &Error{Status: e.Code, Type: "invalid_request", Code: "request_too_large", Detail: "Request too large."}
	case http.StatusBadRequest:
		return &Error{Status: e.Code, Type: "invalid_request", Code: "parse_error", Detail: "Malformed request."}
	case http.StatusRequestTimeout:
		return &Error{Status: e.Code, Type: "invalid_request", Code: "timeout", Detail: "Request timed out."}
	}
	if e.Code >= http.StatusInternalServerError {
		return errServer
	}
	return &Error{Status: e.Code, Type: "invalid_request", Code: "invalid_request", Detail: http.StatusText(e.Code) + "."}
}
