package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// bindBody decodes the request's JSON body into dst. Unknown fields are ignored, as
// DRF does; a body that is not JSON is a 400 parse_error, and a field of the wrong type
// a 400 naming the field in attr (nested fields joined with "__"). An empty body leaves
// dst as it is.
//
// encoding/json rather than sonic: it reports which field had the wrong type, and
// management bodies are small.
func bindBody(c *fiber.Ctx, dst any) error {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return nil
	}
	err := json.Unmarshal(body, dst)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return errValidation(strings.ReplaceAll(typeErr.Field, ".", "__"), "invalid_input", "Not a valid "+jsonKind(typeErr.Type.Kind().String())+".")
	case errors.As(err, &typeErr):
		return errValidation("", "invalid_input", "Invalid data. Expected a JSON "+jsonKind(typeErr.Type.Kind().String())+".")
	}
	return &Error{Status: fiber.StatusBadRequest, Type: "invalid_request", Code: "parse_error", Detail: "JSON parse error - the body is not valid JSON."}
}

// jsonKind names a Go kind as the JSON value a client should send.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "list"
	case "map", "struct":
		return "object"
	}
	return "value"
}
