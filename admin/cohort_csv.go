package admin

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/hedge-analytics/hedge/flags"
)

// Static cohorts from a CSV, as PostHog's: a multipart/form-data POST (or PATCH, which
// adds to the cohort's list) whose file field csv lists distinct ids, one a row in the
// first column, beside the cohort's fields as form fields. A first row whose first
// cell is distinct_id is a header. The ids are kept as listed (warehouse/cohorts.go):
// an id no event has named yet is kept, and its person counts once it comes.

const (
	// maxCohortCSVBytes bounds the csv file, within the API's 4 MiB body limit.
	maxCohortCSVBytes = 3 << 20
	// maxCohortCSVRows bounds the distinct ids of one upload.
	maxCohortCSVRows = 100_000
	// maxDistinctIDLength is PostHog's bound on a distinct id, in characters.
	maxDistinctIDLength = 200
)

// isMultipart reports a multipart/form-data request.
func isMultipart(c *fiber.Ctx) bool {
	return strings.HasPrefix(strings.ToLower(c.Get(fiber.HeaderContentType)), fiber.MIMEMultipartForm)
}

// cohortForm reads a multipart body: its fields as the JSON body's would be (filters
// as JSON text, is_static and deleted as DRF reads booleans), and the distinct ids of
// its csv file (csv false: it has none).
func cohortForm(c *fiber.Ctx) (ch flags.CohortChange, ids []string, hasCSV bool, err error) {
	form, err := c.MultipartForm()
	if err != nil {
		return ch, nil, false, &Error{Status: fiber.StatusBadRequest, Type: "invalid_request", Code: "parse_error",
			Detail: "Multipart form parse error - " + err.Error()}
	}
	fields := map[string]any{}
	for _, name := range []string{"name", "description", "is_static", "deleted", "filters"} {
		values := form.Value[name]
		if len(values) == 0 {
			continue
		}
		v := values[0]
		switch name {
		case "is_static", "deleted":
			b, ok := map[string]bool{"true": true, "True": true, "1": true, "false": false, "False": false, "0": false}[v]
			if !ok {
				return ch, nil, false, errValidation(name, "invalid", "Must be a valid boolean.")
			}
			fields[name] = b
		case "filters":
			if !json.Valid([]byte(v)) {
				return ch, nil, false, errValidation(name, "invalid_input", "Filters must be a dictionary with a 'properties' key.")
			}
			fields[name] = json.RawMessage(v)
		default:
			fields[name] = v
		}
	}
	var in cohortInput
	if err := decodeJSON([]byte(mustJSON(fields)), &in, ""); err != nil {
		return ch, nil, false, err
	}
	if ch, err = in.change(); err != nil {
		return ch, nil, false, err
	}
	files := form.File["csv"]
	if len(files) == 0 {
		return ch, nil, false, nil
	}
	if len(files) > 1 {
		return ch, nil, false, errValidation("csv", "invalid_input", "Send one CSV file.")
	}
	if files[0].Size > maxCohortCSVBytes {
		return ch, nil, false, errValidation("csv", "invalid_input", fmt.Sprintf("The CSV file is %d bytes: at most %d.", files[0].Size, maxCohortCSVBytes))
	}
	f, err := files[0].Open()
	if err != nil {
		return ch, nil, false, fmt.Errorf("cannot open the uploaded CSV: %w", err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxCohortCSVBytes+1))
	if err != nil {
		return ch, nil, false, fmt.Errorf("cannot read the uploaded CSV: %w", err)
	}
	ids, err = csvDistinctIDs(text)
	return ch, ids, true, err
}

// csvDistinctIDs are the distinct ids a CSV lists: the first cell of each row,
// trimmed, empty cells skipped, a header row (distinct_id) skipped; a file that is not
// UTF-8 or not CSV, lists none, more than maxCohortCSVRows, or an id longer than
// maxDistinctIDLength is a 400 saying which.
func csvDistinctIDs(text []byte) ([]string, error) {
	if len(text) > maxCohortCSVBytes {
		return nil, errValidation("csv", "invalid_input", fmt.Sprintf("The CSV file is more than %d bytes.", maxCohortCSVBytes))
	}
	text = bytes.TrimPrefix(text, []byte("\ufeff"))
	if !utf8.Valid(text) {
		return nil, errValidation("csv", "invalid_input", "The CSV file is not UTF-8 text.")
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	var ids []string
	for row := 1; ; row++ {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var parseErr *csv.ParseError
		if errors.As(err, &parseErr) {
			return nil, errValidation("csv", "invalid_input", fmt.Sprintf("The CSV file is not valid: line %d: %v.", parseErr.Line, parseErr.Err))
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read the uploaded CSV: %w", err)
		}
		id := strings.TrimSpace(record[0])
		if id == "" || row == 1 && strings.EqualFold(id, "distinct_id") {
			continue
		}
		if utf8.RuneCountInString(id) > maxDistinctIDLength {
			line, _ := r.FieldPos(0)
			return nil, errValidation("csv", "invalid_input", fmt.Sprintf("Line %d: a distinct id is at most %d characters.", line, maxDistinctIDLength))
		}
		if len(ids) == maxCohortCSVRows {
			return nil, errValidation("csv", "invalid_input", fmt.Sprintf("The CSV file lists more than %d distinct ids: upload them in parts.", maxCohortCSVRows))
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, errValidation("csv", "invalid_input", "The CSV file lists no distinct ids: put one in the first column of each row.")
	}
	return ids, nil
}
