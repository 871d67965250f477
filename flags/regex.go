package flags

import (
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// regexTimeout bounds one match of a regex or not_regex filter: a pattern that
// backtracks catastrophically on a value (which the caller chooses) stops after about
// this long, and the filter does not match, negated or not. The timer of the regex
// engine ticks every regexClockPeriod, so a match stops within their sum.
const (
	regexTimeout     = 20 * time.Millisecond
	regexClockPeriod = 10 * time.Millisecond
)

func init() {
	// The engine's clock ticks every 100 ms by default, which would let a match run
	// for 100 ms past its timeout. This is process-wide and must be set before any
	// match with a timeout starts.
	regexp2.SetTimeoutCheckPeriod(regexClockPeriod)
}

// compileRegex compiles a regex filter's pattern for a backtracking engine (look-around
// and back-references work) that searches anywhere in the text, or returns nil when
// the pattern is invalid. The pattern is read as PostHog reads it: (?P<name>...) names a
// group, and $ outside a character class matches only at the very end of the text
// (unless the pattern sets the m flag).
func compileRegex(pattern string) *regexp2.Regexp {
	re, err := regexp2.Compile(translatePattern(pattern), regexp2.None)
	if err != nil {
		return nil
	}
	re.MatchTimeout = regexTimeout
	return re
}

// translatePattern rewrites the syntax where the engine differs from PostHog's: the
// group names (?P<name> and back-references (?P=name), and a $ that would also match
// before a final newline.
func translatePattern(p string) string {
	if !strings.Contains(p, "(?P") && !strings.Contains(p, "$") {
		return p
	}
	multiline := hasInlineFlag(p, 'm')
	var b strings.Builder
	b.Grow(len(p) + 8)
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ] right after [ or [^ is a literal member of the class.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case strings.HasPrefix(p[i:], "(?P<"):
			b.WriteString("(?<")
			i += len("(?P<") - 1
		case strings.HasPrefix(p[i:], "(?P="):
			end := strings.IndexByte(p[i:], ')')
			if end < 0 {
				b.WriteString(p[i:])
				i = len(p)
				break
			}
			b.WriteString(`\k<`)
			b.WriteString(p[i+len("(?P=") : i+end])
			b.WriteByte('>')
			i += end
		case c == '$' && !multiline:
			b.WriteString(`\z`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hasInlineFlag reports whether the pattern sets flag in a (?flags) or (?flags:...)
// group.
func hasInlineFlag(p string, flag byte) bool {
	for i := strings.Index(p, "(?"); i >= 0; {
		j := i + 2
		// Flags after a - are turned off: (?i-m) does not set m.
		for j < len(p) && p[j] >= 'a' && p[j] <= 'z' {
			if p[j] == flag {
				return true
			}
			j++
		}
		next := strings.Index(p[i+2:], "(?")
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return false
}
