package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// bindBody decodes the request's JSON body into dst. Unknown fields are ignored, as
// DRF does; a body that is not JSON is a 400 parse_error, and a field of the wrong type
// a 400 naming the field in attr (nested fields joined with "__"), in DRF's words. An
// empty body leaves dst as it is.
//
// encoding/json rather than sonic: it reports which field had the wrong type, and
// management bodies are small.
func bindBody(c *fiber.Ctx, dst any) error {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return nil
	}
	err := decodeJSON(body, dst, "")
	var apiErr *Error
	if err == nil || errors.As(err, &apiErr) {
		return err
	}
	return &Error{Status: fiber.StatusBadRequest, Type: "invalid_request", Code: "parse_error", Detail: "JSON parse error - the body is not valid JSON."}
}

// validator is a request body that checks itself once it is bound, in DRF's words.
type validator interface{ validate() error }

// bindValid binds the request's body into dst, as bindBody does, and has it check
// itself.
func bindValid(c *fiber.Ctx, dst validator) error {
	if err := bindBody(c, dst); err != nil {
		return err
	}
	return dst.validate()
}

// changeInput is a request body that, once bound, becomes a change of C, checked in
// DRF's words.
type changeInput[C any] interface{ change() (C, error) }

// bindChange binds the request's body into in, as bindBody does, and makes it a change.
func bindChange[C any](c *fiber.Ctx, in changeInput[C]) (C, error) {
	if err := bindBody(c, in); err != nil {
		var none C
		return none, err
	}
	return in.change()
}

// decodeJSON decodes doc into dst. A value of the wrong type is a 400 in DRF's words
// whose attr is prefix and the field's path (prefix alone, without its trailing "__",
// when doc itself has the wrong type); any other error (doc is not JSON) is returned
// as it is.
func decodeJSON(doc []byte, dst any, prefix string) error {
	err := json.Unmarshal(doc, dst)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return wrongType(withNumber(typeErr, doc), prefix)
	}
	return err
}

// wrongType is DRF's answer to a value of the wrong type for a field (its code
// "invalid", which PostHog's error body renders as invalid_input), naming the type that was sent
// as Python does.
func wrongType(e *json.UnmarshalTypeError, prefix string) *Error {
	attr := strings.TrimSuffix(prefix+strings.ReplaceAll(e.Field, ".", "__"), "__")
	got := pythonType(e.Value)
	switch e.Type.Kind() {
	case reflect.String:
		return errValidation(attr, "invalid_input", "Not a valid string.")
	case reflect.Bool:
		return errValidation(attr, "invalid_input", "Must be a valid boolean.")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return errValidation(attr, "invalid_input", "A valid integer is required.")
	case reflect.Float32, reflect.Float64:
		return errValidation(attr, "invalid_input", "A valid number is required.")
	case reflect.Slice, reflect.Array:
		return errValidation(attr, "not_a_list", fmt.Sprintf("Expected a list of items but got type %q.", got))
	case reflect.Map:
		return errValidation(attr, "not_a_dict", fmt.Sprintf("Expected a dictionary of items but got type %q.", got))
	}
	// A nested object (DRF: a nested serializer), or the body itself.
	return errValidation(attr, "invalid_input", fmt.Sprintf("Invalid data. Expected a dictionary, but got %s.", got))
}

// withNumber completes an UnmarshalTypeError about a number of no given value
// ("number") with the number itself ("number 1.5"), read back from doc, the document
// its Offset counts in, so that the number's Python type can be named.
func withNumber(e *json.UnmarshalTypeError, doc []byte) *json.UnmarshalTypeError {
	if e.Value != "number" || e.Offset <= 0 || e.Offset > int64(len(doc)) {
		return e
	}
	end := int(e.Offset)
	start := end
	for start > 0 && strings.IndexByte("0123456789+-.eE", doc[start-1]) >= 0 {
		start--
	}
	if start < end {
		e.Value = "number " + string(doc[start:end])
	}
	return e
}

// pythonType names the JSON value an UnmarshalTypeError describes ("string",
// "number 1.5", ...) as Python's json module would decode it.
func pythonType(value string) string {
	switch value {
	case "string":
		return "str"
	case "bool":
		return "bool"
	case "array":
		return "list"
	case "object":
		return "dict"
	case "null":
		return "NoneType"
	}
	if number, ok := strings.CutPrefix(value, "number "); ok && strings.ContainsAny(number, ".eE") {
		return "float"
	}
	return "int"
}

// pythonTypeOf names the type of a JSON value as Python's json module would decode it.
func pythonTypeOf(value []byte) string {
	value = bytes.TrimSpace(value)
	if len(value) == 0 {
		return "NoneType"
	}
	switch value[0] {
	case '"':
		return "str"
	case 't', 'f':
		return "bool"
	case 'n':
		return "NoneType"
	case '[':
		return "list"
	case '{':
		return "dict"
	}
	return pythonType("number " + string(value))
}
