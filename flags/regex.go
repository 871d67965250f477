package flags

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

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

// pattern is a regex filter's compiled pattern. A pattern that Go's linear-time engine
// takes runs there: no value can make it slow, so it needs no time limit, which counts
// wall-clock time and so could end a simple match on a machine busy enough to keep its
// goroutine waiting (a flag then answered false where it is true). The others (look-
// around, back-references, \b) run on a backtracking engine, within regexTimeout.
type pattern struct {
	linear       *regexp.Regexp
	backtracking *regexp2.Regexp
	// size is the length of the pattern in bytes.
	size int
}

// maxPatternLength is the longest pattern a regex filter may have, in characters. The
// linear engine's time grows with the pattern times the text (some 150 ms for 1,000
// characters against maxSearchText of text, at worst), and one match cannot be
// stopped: the flags API refuses longer patterns, and a longer one stored before that
// rule is invalid (it matches nothing, negated or not).
const maxPatternLength = 1000

// regexStepUnits is what the meter counts for the linear engine's step over one byte of
// text for one byte of pattern (its worst case, all of the pattern's states live at
// once).
const regexStepUnits = 16

// units is the meter's estimate of one match against n bytes of text: at most
// pattern × text steps on the linear engine; a whole clock period for the
// backtracking engine, so that the clock is read before each of its matches, which may
// each run regexTimeout.
func (p *pattern) units(n int) int {
	if p.linear != nil {
		return (n + 1) * (p.size + 1) * regexStepUnits
	}
	return clockEvery
}

// match reports whether the pattern matches s anywhere; ok is false when the match ran
// out of time.
func (p *pattern) match(s string) (matched, ok bool) {
	if p.linear != nil {
		return p.linear.MatchString(s), true
	}
	m, err := p.backtracking.MatchString(s)
	return m, err == nil
}

// compileRegex compiles a regex filter's pattern, or returns nil when the pattern is
// invalid or longer than maxPatternLength. It searches anywhere in the text, and is read as PostHog reads it (Python's
// syntax): (?P<name>...) names a group, $ outside a character class matches only at
// the very end of the text (unless the pattern sets the m flag), and \d, \w and \s are
// Unicode classes.
func compileRegex(source string) *pattern {
	if utf8.RuneCountInString(source) > maxPatternLength {
		return nil
	}
	translated := translatePattern(source)
	if linear, ok := linearPattern(translated); ok {
		if re, err := regexp.Compile(linear); err == nil {
			return &pattern{linear: re, size: len(source)}
		}
	}
	re, err := regexp2.Compile(translated, regexp2.None)
	if err != nil {
		return nil
	}
	re.MatchTimeout = regexTimeout
	return &pattern{backtracking: re, size: len(source)}
}

// Python's (and the backtracking engine's) shorthand classes are Unicode; Go's are
// ASCII. linearPattern spells them out.
const (
	unicodeDigit = `\p{Nd}`
	unicodeWord  = `\p{L}\p{M}\p{Nd}\p{Pc}`
	unicodeSpace = `\t\n\v\f\r \x{1c}-\x{1f}\x{85}\p{Z}`
)

// linearPattern rewrites a translated pattern (translatePattern) for Go's engine, with
// Unicode classes for \d, \w and \s; ok is false where it cannot say the same thing
// there: \b and \B (Go's word boundary is ASCII), and a negated class inside a class.
// What Go's engine does not take at all (look-around, back-references) fails its
// compilation.
func linearPattern(p string) (string, bool) {
	var b strings.Builder
	b.Grow(len(p) + 16)
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch e := p[i]; e {
			case 'd':
				b.WriteString(unicodeDigit)
			case 'w', 's':
				set := unicodeWord
				if e == 's' {
					set = unicodeSpace
				}
				if inClass {
					b.WriteString(set)
				} else {
					b.WriteString("[" + set + "]")
				}
			case 'D', 'W', 'S':
				if inClass {
					return "", false
				}
				set := map[byte]string{'D': unicodeDigit, 'W': unicodeWord, 'S': unicodeSpace}[e]
				b.WriteString("[^" + set + "]")
			case 'b', 'B':
				if !inClass { // [\b] is a backspace in both
					return "", false
				}
				b.WriteString(`\x08`)
			default:
				b.WriteByte(c)
				b.WriteByte(e)
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			i = openClass(&b, p, i, `\]`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
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
			i = openClass(&b, p, i, "]")
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

// openClass writes the opening of the character class at p[i], a [ and the ^ right
// after it, and a ] right after those, which is a literal member of the class, as
// literal; it returns the index of the last byte of p it read.
func openClass(b *strings.Builder, p string, i int, literal string) int {
	b.WriteByte('[')
	if i+1 < len(p) && p[i+1] == '^' {
		b.WriteByte('^')
		i++
	}
	if i+1 < len(p) && p[i+1] == ']' {
		b.WriteString(literal)
		i++
	}
	return i
}
