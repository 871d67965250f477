package warehouse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A trend's formula (trendsFilter.formula, as PostHog's "A/B") combines its series
// interval by interval: A is the first series, B the second, and so on; numbers,
// + - * /, unary minus and parentheses. The answer is the formula's lines instead of
// the series': one, or with a breakdown one per value (a series without that value
// counts 0 there), labelled with the formula. A division by zero is 0, as a chart of
// a rate over an empty interval shows nothing rather than infinity.

// maxFormulaLength bounds a formula's text, which is parsed on every request.
const maxFormulaLength = 256

// formula is a parsed formula: a tree of nodes.
type formula interface {
	eval(values []float64) float64
}

type (
	formulaNumber float64
	formulaSeries int // index into the series
	formulaNegate struct{ x formula }
	formulaBinary struct {
		op   byte
		l, r formula
	}
)

func (n formulaNumber) eval([]float64) float64   { return float64(n) }
func (s formulaSeries) eval(v []float64) float64 { return v[s] }
func (n formulaNegate) eval(v []float64) float64 { return -n.x.eval(v) }
func (b formulaBinary) eval(v []float64) float64 {
	l, r := b.l.eval(v), b.r.eval(v)
	switch b.op {
	case '+':
		return l + r
	case '-':
		return l - r
	case '*':
		return l * r
	}
	if r == 0 {
		return 0
	}
	return l / r
}

// parseFormula parses text over series series (A to the series' letter).
func parseFormula(text string, series int) (formula, error) {
	if len(text) > maxFormulaLength {
		return nil, queryErrorf("a formula is at most %d characters", maxFormulaLength)
	}
	p := &formulaParser{text: strings.ToUpper(text), series: series}
	f, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.at < len(p.text) {
		return nil, queryErrorf("the formula %q has %q where it should end", text, p.text[p.at:])
	}
	return f, nil
}

type formulaParser struct {
	text   string
	at     int
	series int
	depth  int
}

func (p *formulaParser) space() {
	for p.at < len(p.text) && p.text[p.at] == ' ' {
		p.at++
	}
}

// sum is terms joined by + and -.
func (p *formulaParser) sum() (formula, error) {
	l, err := p.product()
	for err == nil {
		p.space()
		if p.at == len(p.text) || (p.text[p.at] != '+' && p.text[p.at] != '-') {
			return l, nil
		}
		op := p.text[p.at]
		p.at++
		var r formula
		if r, err = p.product(); err == nil {
			l = formulaBinary{op, l, r}
		}
	}
	return nil, err
}

// product is factors joined by * and /.
func (p *formulaParser) product() (formula, error) {
	l, err := p.factor()
	for err == nil {
		p.space()
		if p.at == len(p.text) || (p.text[p.at] != '*' && p.text[p.at] != '/') {
			return l, nil
		}
		op := p.text[p.at]
		p.at++
		var r formula
		if r, err = p.factor(); err == nil {
			l = formulaBinary{op, l, r}
		}
	}
	return nil, err
}

// factor is a series' letter, a number, a negated factor or a parenthesized sum.
func (p *formulaParser) factor() (formula, error) {
	p.space()
	if p.at == len(p.text) {
		return nil, queryErrorf("the formula %q ends where a series or a number should come", p.text)
	}
	c := p.text[p.at]
	switch {
	case c == '-':
		p.at++
		x, err := p.factor()
		return formulaNegate{x}, err
	case c == '(':
		if p.depth++; p.depth > 32 {
			return nil, queryErrorf("the formula %q nests too deep", p.text)
		}
		p.at++
		x, err := p.sum()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.at == len(p.text) || p.text[p.at] != ')' {
			return nil, queryErrorf("the formula %q has a ( without its )", p.text)
		}
		p.at++
		p.depth--
		return x, nil
	case c >= 'A' && c <= 'Z':
		p.at++
		if i := int(c - 'A'); i < p.series {
			return formulaSeries(i), nil
		}
		return nil, queryErrorf("the formula %q names series %c, and there are %d", p.text, c, p.series)
	case c >= '0' && c <= '9' || c == '.':
		start := p.at
		for p.at < len(p.text) && (p.text[p.at] >= '0' && p.text[p.at] <= '9' || p.text[p.at] == '.') {
			p.at++
		}
		n, err := strconv.ParseFloat(p.text[start:p.at], 64)
		if err != nil {
			return nil, queryErrorf("the formula %q has %q, which is not a number", p.text, p.text[start:p.at])
		}
		return formulaNumber(n), nil
	}
	return nil, queryErrorf("the formula %q has %q: use series letters, numbers, + - * / and parentheses", p.text, string(c))
}

// applyFormula replaces the lines of every series (series of them, in series
// order, each series' lines together) with the formula's: one per breakdown value,
// in the order the values first come.
func applyFormula(f formula, text string, lines []TrendsLine, series int) []TrendsLine {
	type group struct {
		out    TrendsLine
		values [][]float64 // per series: its line's data, or its aggregated value alone
	}
	var order []string
	groups := map[string]*group{}
	for _, l := range lines {
		key := fmt.Sprint(l.BreakdownValue)
		g := groups[key]
		if g == nil {
			g = &group{out: l, values: make([][]float64, series)}
			g.out.Label, g.out.Action.ID, g.out.Action.Name, g.out.Action.Math, g.out.Action.Order = text, "", text, "", 0
			if l.BreakdownValue != nil {
				g.out.Label = text + " - " + breakdownLabel(fmt.Sprint(l.BreakdownValue))
			}
			groups[key] = g
			order = append(order, key)
		}
		if l.AggregatedValue != nil {
			g.values[l.Action.Order] = []float64{*l.AggregatedValue}
		} else {
			g.values[l.Action.Order] = l.Data
		}
	}
	out := make([]TrendsLine, 0, len(order))
	values := make([]float64, series)
	for _, key := range order {
		g := groups[key]
		n := len(g.out.Data)
		if g.out.AggregatedValue != nil {
			n = 1
		}
		data := make([]float64, n)
		for i := range n {
			for s := range series {
				values[s] = 0
				if i < len(g.values[s]) {
					values[s] = g.values[s][i]
				}
			}
			if data[i] = f.eval(values); math.IsNaN(data[i]) || math.IsInf(data[i], 0) {
				data[i] = 0
			}
		}
		if g.out.AggregatedValue != nil {
			g.out.AggregatedValue = &data[0]
		} else {
			g.out.Data, g.out.Count = data, 0
			for _, v := range data {
				g.out.Count += v
			}
		}
		out = append(out, g.out)
	}
	return out
}
