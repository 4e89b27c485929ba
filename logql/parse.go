package logql

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds on what one query may hold, checked as it is parsed.
const (
	MaxLength   = 16 << 10 // bytes of query text
	maxMatchers = 64       // matchers in a selector
	maxStages   = 64       // stages in a pipeline
	maxTerms    = 64       // terms of a constant expression
)

// Error is a query Parse refuses: where, and why.
type Error struct {
	Col int // 1-based byte column
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cannot run this LogQL query: at column %d, %s; %s", e.Col, e.Msg, Supported)
}

// parser reads one query; pos is the next byte of src.
type parser struct {
	src string
	pos int
}

func (p *parser) fail(format string, args ...any) error {
	return &Error{Col: p.pos + 1, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a query of the subset the package comment describes.
func Parse(s string) (*Query, error) {
	if len(s) > MaxLength {
		return nil, &Error{Col: MaxLength + 1, Msg: fmt.Sprintf("the query is %d bytes, more than %d", len(s), MaxLength)}
	}
	if !utf8.ValidString(s) {
		return nil, &Error{Col: 1, Msg: "the query is not valid UTF-8"}
	}
	p := &parser{src: s}
	var q *Query
	var err error
	switch p.space(); {
	case p.peek("{"):
		q = &Query{Kind: Logs}
		err = p.logExpr(q)
	case p.peekWord("sum"):
		q, err = p.count()
	default:
		q, err = p.constant()
	}
	if err != nil {
		return nil, err
	}
	if p.space(); p.pos < len(p.src) {
		return nil, p.fail("unexpected %q", p.rest(12))
	}
	return q, nil
}

// space skips white space.
func (p *parser) space() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// rest is up to n bytes of what is left, for messages.
func (p *parser) rest(n int) string {
	r := p.src[p.pos:]
	if len(r) > n {
		r = r[:n] + "..."
	}
	return r
}

func (p *parser) peek(tok string) bool { return strings.HasPrefix(p.src[p.pos:], tok) }

// accept consumes tok (after white space) if it comes next.
func (p *parser) accept(tok string) bool {
	p.space()
	if p.peek(tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *parser) expect(tok string) error {
	if !p.accept(tok) {
		if p.pos >= len(p.src) {
			return p.fail("want %q, the query ends", tok)
		}
		return p.fail("want %q, found %q", tok, p.rest(12))
	}
	return nil
}

// ident reads a name: a letter or '_', then letters, digits and '_'.
func (p *parser) ident() string {
	p.space()
	i := p.pos
	for i < len(p.src) {
		c := p.src[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > p.pos && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	w := p.src[p.pos:i]
	p.pos = i
	return w
}

// peekWord reports whether the name w comes next.
func (p *parser) peekWord(w string) bool {
	save := p.pos
	got := p.ident()
	p.pos = save
	return got == w
}

// str reads a string literal: "..." with Go escapes, or `...` raw.
func (p *parser) str() (string, error) {
	p.space()
	if p.pos >= len(p.src) || (p.src[p.pos] != '"' && p.src[p.pos] != '`') {
		return "", p.fail("want a quoted string, found %q", p.rest(12))
	}
	quote := p.src[p.pos]
	for i := p.pos + 1; i < len(p.src); i++ {
		switch c := p.src[i]; {
		case c == '\\' && quote == '"':
			i++
		case c == quote:
			lit := p.src[p.pos : i+1]
			if quote == '`' {
				p.pos = i + 1
				return lit[1 : len(lit)-1], nil
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", p.fail("bad string %s", lit)
			}
			p.pos = i + 1
			return v, nil
		}
	}
	return "", p.fail("unterminated string")
}

// logExpr reads a selector and its pipeline into q.
func (p *parser) logExpr(q *Query) error {
	if err := p.selector(q); err != nil {
		return err
	}
	for {
		p.space()
		start := p.pos
		var op Op
		switch {
		case p.accept("|="):
			op = Eq
		case p.accept("!="):
			op = Neq
		case p.accept("|~"):
			op = Re
		case p.accept("!~"):
			op = NotRe
		case p.accept("|"):
			if err := p.noopStage(q); err != nil {
				return err
			}
			continue
		default:
			return nil
		}
		if len(q.Pipeline) >= maxStages {
			p.pos = start
			return p.fail("more than %d stages", maxStages)
		}
		v, err := p.str()
		if err != nil {
			return err
		}
		s := Stage{Filter: true, Op: op, Value: v}
		if op == Re || op == NotRe {
			if s.re, err = regexp.Compile(v); err != nil {
				p.pos = start
				return p.fail("bad regular expression %q: %v", v, err)
			}
		}
		if p.accept("or") {
			p.pos = start
			return p.fail("line filters joined with or are not supported")
		}
		q.Pipeline = append(q.Pipeline, s)
	}
}

// noopStage reads the stage after a '|' that is not a line filter: json,
// logfmt or drop of the error labels, which change nothing here.
func (p *parser) noopStage(q *Query) error {
	start := p.pos
	name := p.ident()
	s := Stage{Name: name}
	switch name {
	case "json", "logfmt":
		p.space()
		// Parameters (| json a="b", | logfmt --strict) would extract or
		// check something.
		if p.pos < len(p.src) && p.src[p.pos] != '|' && p.src[p.pos] != '!' && p.src[p.pos] != '[' && p.src[p.pos] != ')' {
			return p.fail("| %s takes no parameters here", name)
		}
	case "drop":
		var names []string
		for {
			n := p.ident()
			if n != "__error__" && n != "__error_details__" {
				p.pos = start
				return p.fail("| drop takes only __error__ and __error_details__ here")
			}
			names = append(names, n)
			if !p.accept(",") {
				break
			}
		}
		s.Value = strings.Join(names, ", ")
	default:
		p.pos = start
		if name == "" {
			return p.fail("want a stage after |, found %q", p.rest(12))
		}
		return p.fail("the stage | %s is not supported", name)
	}
	if len(q.Pipeline) >= maxStages {
		p.pos = start
		return p.fail("more than %d stages", maxStages)
	}
	q.Pipeline = append(q.Pipeline, s)
	return nil
}

// selector reads {matcher, ...}.
func (p *parser) selector(q *Query) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	for !p.accept("}") {
		if len(q.Selector) > 0 {
			if !p.accept(",") {
				return p.fail("want , or } after a matcher, found %q", p.rest(12))
			}
			if p.accept("}") {
				return nil
			}
		}
		if len(q.Selector) >= maxMatchers {
			return p.fail("more than %d matchers", maxMatchers)
		}
		m, err := p.matcher()
		if err != nil {
			return err
		}
		q.Selector = append(q.Selector, m)
	}
	return nil
}

func (p *parser) matcher() (Matcher, error) {
	start := p.pos
	label := p.ident()
	if label == "" {
		return Matcher{}, p.fail("want a label name, found %q", p.rest(12))
	}
	if !slices.Contains(Labels, label) {
		p.pos = start
		return Matcher{}, p.fail("unknown label %q: the labels are service, host and level", label)
	}
	m := Matcher{Label: label}
	switch {
	case p.accept("=~"):
		m.Op = Re
	case p.accept("!~"):
		m.Op = NotRe
	case p.accept("!="):
		m.Op = Neq
	case p.accept("="):
		m.Op = Eq
	default:
		return m, p.fail("want =, !=, =~ or !~ after %s", label)
	}
	at := p.pos
	v, err := p.str()
	if err != nil {
		return m, err
	}
	m.Value = v
	if m.Op == Re || m.Op == NotRe {
		if m.re, err = regexp.Compile("^(?:" + v + ")$"); err != nil {
			p.pos = at
			return m, p.fail("bad regular expression %q: %v", v, err)
		}
	}
	return m, nil
}

// count reads sum [by (...)] (count_over_time(<log expr> [range])) [by (...)].
func (p *parser) count() (*Query, error) {
	q := &Query{Kind: Count}
	p.ident() // sum
	by, err := p.grouping()
	if err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	if fn := p.ident(); fn != "count_over_time" {
		return nil, p.fail("only count_over_time may be summed, not %q", fn)
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	if err := p.logExpr(q); err != nil {
		return nil, err
	}
	if err := p.expect("["); err != nil {
		return nil, err
	}
	end := strings.IndexByte(p.src[p.pos:], ']')
	if end < 0 {
		return nil, p.fail("want a range like [1m] and its ]")
	}
	if q.Range, err = ParseDuration(strings.TrimSpace(p.src[p.pos : p.pos+end])); err != nil || q.Range == 0 {
		if err == nil {
			err = fmt.Errorf("it is zero")
		}
		return nil, p.fail("bad range: %v", err)
	}
	p.pos += end + 1
	for _, t := range []string{")", ")"} {
		if err := p.expect(t); err != nil {
			return nil, err
		}
	}
	after, err := p.grouping()
	if err != nil {
		return nil, err
	}
	switch {
	case by != nil && after != nil:
		return nil, p.fail("the grouping is given twice")
	case after != nil:
		by = after
	}
	if by != nil && len(by) > 0 && !slices.Equal(by, []string{"level"}) && !slices.Equal(by, []string{"level", "detected_level"}) {
		return nil, p.fail("the volume is grouped by (level) or (level, detected_level) only, not by (%s)", strings.Join(by, ", "))
	}
	q.By = by
	return q, nil
}

// grouping reads an optional "by (label, ...)"; nil when absent, empty for
// "by ()".
func (p *parser) grouping() ([]string, error) {
	if !p.peekWord("by") {
		return nil, nil
	}
	p.ident()
	if err := p.expect("("); err != nil {
		return nil, err
	}
	by := []string{}
	for !p.accept(")") {
		if len(by) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		n := p.ident()
		if n == "" || len(by) >= maxMatchers {
			return nil, p.fail("want a label name in by (...)")
		}
		by = append(by, n)
	}
	return by, nil
}

// constant reads term (op term)*, with * and / before + and -.
func (p *parser) constant() (*Query, error) {
	terms := 0
	v, vec, err := p.sum(&terms)
	if err != nil {
		return nil, err
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, p.fail("the value is not a finite number")
	}
	return &Query{Kind: Const, Value: v, Vector: vec}, nil
}

func (p *parser) sum(terms *int) (float64, bool, error) { return p.binary(terms, "+-", p.product) }

func (p *parser) product(terms *int) (float64, bool, error) { return p.binary(terms, "*/", p.term) }

// binary reads operand (op operand)*, left to right, for the operators of
// ops, each operand read by next.
func (p *parser) binary(terms *int, ops string, next func(*int) (float64, bool, error)) (float64, bool, error) {
	v, vec, err := next(terms)
	for err == nil {
		p.space()
		if p.pos >= len(p.src) || strings.IndexByte(ops, p.src[p.pos]) < 0 {
			return v, vec, nil
		}
		op := p.src[p.pos]
		p.pos++
		var w float64
		var wvec bool
		w, wvec, err = next(terms)
		switch op {
		case '+':
			v += w
		case '-':
			v -= w
		case '*':
			v *= w
		case '/':
			v /= w
		}
		vec = vec || wvec
	}
	return 0, false, err
}

// term reads vector(n), a number, -term or (expression).
func (p *parser) term(terms *int) (float64, bool, error) {
	if *terms++; *terms > maxTerms {
		return 0, false, p.fail("more than %d terms", maxTerms)
	}
	switch p.space(); {
	case p.accept("("):
		v, vec, err := p.sum(terms)
		if err == nil {
			err = p.expect(")")
		}
		return v, vec, err
	case p.accept("-"):
		v, vec, err := p.term(terms)
		return -v, vec, err
	case p.peekWord("vector"):
		p.ident()
		if err := p.expect("("); err != nil {
			return 0, false, err
		}
		v, err := p.number()
		if err == nil {
			err = p.expect(")")
		}
		return v, true, err
	}
	v, err := p.number()
	return v, false, err
}

// number reads a decimal number.
func (p *parser) number() (float64, error) {
	p.space()
	i := p.pos
	if i < len(p.src) && (p.src[i] == '-' || p.src[i] == '+') {
		i++
	}
	for i < len(p.src) && strings.IndexByte("0123456789.eE", p.src[i]) >= 0 {
		if (p.src[i] == 'e' || p.src[i] == 'E') && i+1 < len(p.src) && (p.src[i+1] == '-' || p.src[i+1] == '+') {
			i++
		}
		i++
	}
	if i == p.pos || i == p.pos+1 && (p.src[p.pos] == '-' || p.src[p.pos] == '+') {
		if p.pos >= len(p.src) {
			return 0, p.fail("the query is empty or ends too soon")
		}
		return 0, p.fail("want a selector {...}, sum by (level) (count_over_time(...)) or vector(n), found %q", p.rest(12))
	}
	v, err := strconv.ParseFloat(p.src[p.pos:i], 64)
	if err != nil {
		return 0, p.fail("bad number %q", p.src[p.pos:i])
	}
	p.pos = i
	return v, nil
}

// ParseDuration parses a Prometheus-style duration: number-unit pairs, the
// units y (365 d), w (7 d), d (24 h), h, m, s and ms, largest first ("1m",
// "1h30m", "300ms", "2d"). It is at most 100 years.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	const most = 100 * 365 * 24 * time.Hour
	var total time.Duration
	last := -1
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, fmt.Errorf("bad duration %q: want number-unit pairs like 1m or 1h30m", s)
		}
		n, _ := strconv.ParseInt(rest[:i], 10, 64) // at most 12 digits
		rest = rest[i:]
		u := -1
		if strings.HasPrefix(rest, "ms") {
			u = len(durationUnits) - 1
		} else if len(rest) > 0 {
			u = strings.IndexByte("ywdhms", rest[0])
		}
		if u <= last {
			return 0, fmt.Errorf("bad duration %q: want units y, w, d, h, m, s or ms, largest first", s)
		}
		last = u
		unit := durationUnits[u]
		rest = rest[len(unit.name):]
		// Checked before multiplying: n is below 10^12.
		if n > int64(most/unit.d) || total+time.Duration(n)*unit.d > most {
			return 0, fmt.Errorf("bad duration %q: more than 100 years", s)
		}
		total += time.Duration(n) * unit.d
	}
	return total, nil
}

// durationUnits are ParseDuration's units, largest first.
var durationUnits = []struct {
	name string
	d    time.Duration
}{{"y", 365 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}}

// FormatDuration writes d, a whole number of milliseconds, in the form
// ParseDuration reads.
func FormatDuration(d time.Duration) string {
	if d < time.Millisecond {
		return "0s"
	}
	var b strings.Builder
	for _, u := range durationUnits[2:] { // days and below: no year or week is ambiguous
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.d
		}
	}
	return b.String()
}
