package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// Error is an API error in PostHog's flat shape (reference/posthog-behaviour.md §0.1).
// Handlers return it; handleError renders it, once. It never carries internal detail:
// anything that is not an *Error becomes a generic 500 and is logged instead.
type Error struct {
	Status int     `json:"-"`
	Type   string  `json:"type"`
	Code   string  `json:"code"`
	Detail string  `json:"detail"`
	Attr   *string `json:"attr"`
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

// errValidation is a 400 about one field of the request (attr, nested fields joined
// with "__"), or about the request as a whole when attr is "".
func errValidation(attr, code, detail string) *Error {
	e := &Error{Status: http.StatusBadRequest, Type: "validation_error", Code: code, Detail: detail}
	if attr != "" {
		e.Attr = &attr
	}
	return e
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
	return c.Status(apiErr.Status).JSON(apiErr)
}

// fromFiberError maps the errors Fiber raises itself (routing, body limits, bad
// requests) to the flat shape.
func fromFiberError(c *fiber.Ctx, e *fiber.Error) *Error {
	switch e.Code {
	case http.StatusNotFound:
		return errNotFound("Not found.")
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
