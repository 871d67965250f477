package hogql

import "strings"

type tokenKind uint8

const (
	tokSpace tokenKind = iota
	tokComment
	tokString // '...'
	tokQuoted // "...", or ClickHouse's `...` (which Rewrite makes "...")
	// tokOpen is a string or quoted name the query never closes: the rest of the
	// query. It is neither a string nor a name, so nothing rewrites it, and DuckDB
	// refuses the query when it parses it.
	tokOpen
	tokIdent // including $name, which HogQL uses for PostHog's properties
	tokPunct
)

type token struct {
	kind tokenKind
	text string
}

// lex splits a query into tokens that, concatenated, give it back unchanged.
func lex(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		c := q[i]
		start := i
		kind := tokPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			kind = tokSpace
			for i < len(q) && strings.IndexByte(" \t\n\r", q[i]) >= 0 {
				i++
			}
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			kind = tokComment
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			kind = tokComment
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 4
			}
		case c == '\'' || c == '"' || c == '`':
			kind = tokString
			if c != '\'' {
				kind = tokQuoted
			}
			closed := false
			for i++; i < len(q) && !closed; i++ {
				if q[i] == c {
					if i+1 < len(q) && q[i+1] == c { // a doubled quote is one quote
						i++
						continue
					}
					closed = true
				}
			}
			if !closed {
				kind = tokOpen
			}
		case isIdentRune(rune(c)):
			kind = tokIdent
			for i < len(q) && isIdentRune(rune(q[i])) {
				i++
			}
		default:
			i++
		}
		if i > len(q) {
			i = len(q)
		}
		toks = append(toks, token{kind, q[start:i]})
	}
	return toks
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
}
