package logql

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Supported describes the subset of LogQL this package takes, for error
// messages.
const Supported = `supported: a selector on service, host and level with =, !=, =~, !~ ({service="api", level=~"warn|error"}); ` +
	`line filters |= != |~ !~; | json, | logfmt and | drop __error__ (which change nothing); ` +
	`sum by (level) (count_over_time(<selector and filters> [range])); vector(n) and numbers with + - * /`

// Labels are the label names a selector may name: the fields of a stored
// event that are labels.
var Labels = []string{"host", "level", "service"}

// Kind is what a query computes.
type Kind uint8

const (
	// Logs selects log lines.
	Logs Kind = iota
	// Count counts the lines a log query selects per range (the volume).
	Count
	// Const is a constant: vector(n) or a number.
	Const
)

// Op is a matcher's or line filter's operator.
type Op uint8

const (
	Eq    Op = iota // label =, line |=
	Neq             // !=
	Re              // label =~, line |~
	NotRe           // !~
)

// Matcher is one label matcher of a selector.
type Matcher struct {
	Label string // service, host or level
	Op    Op
	Value string         // the text, or the regular expression
	re    *regexp.Regexp // anchored, for Re and NotRe
}

// Matches reports whether a label value satisfies m. An empty value is
// the label being absent, as in Loki.
func (m *Matcher) Matches(v []byte) bool {
	switch m.Op {
	case Eq:
		return string(v) == m.Value
	case Neq:
		return string(v) != m.Value
	case Re:
		return m.re.Match(v)
	}
	return !m.re.Match(v)
}

// Stage is one stage of a pipeline: a line filter, or a stage that changes
// nothing (json, logfmt, drop).
type Stage struct {
	Filter bool // a line filter; else a no-op stage named by Name
	Op     Op   // the filter's operator
	Value  string
	Name   string // json, logfmt or drop (with Value the dropped names)
	re     *regexp.Regexp
}

// Keep reports whether a line passes the filter s; a no-op stage keeps
// every line.
func (s *Stage) Keep(line []byte) bool {
	if !s.Filter {
		return true
	}
	switch s.Op {
	case Eq:
		return bytes.Contains(line, []byte(s.Value))
	case Neq:
		return !bytes.Contains(line, []byte(s.Value))
	case Re:
		return s.re.Match(line)
	}
	return !s.re.Match(line)
}

// Query is a parsed query.
type Query struct {
	Kind     Kind
	Selector []Matcher // Logs and Count
	Pipeline []Stage   // Logs and Count
	// Count: the range of count_over_time, and the labels it is grouped by
	// (nil: one series for everything; else ["level"] or
	// ["level", "detected_level"]).
	Range time.Duration
	By    []string
	// Const: the value, and whether it is a vector (else a scalar).
	Value  float64
	Vector bool
}

// Matches reports whether an event with these label values passes the
// selector.
func (q *Query) Matches(service, host, level []byte) bool {
	for i := range q.Selector {
		m := &q.Selector[i]
		v := service
		switch m.Label {
		case "host":
			v = host
		case "level":
			v = level
		}
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// Keep reports whether a line passes every line filter.
func (q *Query) Keep(line []byte) bool {
	for i := range q.Pipeline {
		if !q.Pipeline[i].Keep(line) {
			return false
		}
	}
	return true
}

// Filters reports whether the pipeline has any line filter.
func (q *Query) Filters() bool {
	for i := range q.Pipeline {
		if q.Pipeline[i].Filter {
			return true
		}
	}
	return false
}

// Only returns the matchers of label.
func (q *Query) Only(label string) []Matcher {
	var out []Matcher
	for _, m := range q.Selector {
		if m.Label == label {
			out = append(out, m)
		}
	}
	return out
}

var opNames = [...]struct{ label, line string }{Eq: {"=", "|="}, Neq: {"!=", "!="}, Re: {"=~", "|~"}, NotRe: {"!~", "!~"}}

// String writes q back in the form Parse takes.
func (q *Query) String() string {
	var b strings.Builder
	switch q.Kind {
	case Const:
		if q.Vector {
			b.WriteString("vector(")
			b.WriteString(strconv.FormatFloat(q.Value, 'g', -1, 64))
			b.WriteString(")")
		} else {
			b.WriteString(strconv.FormatFloat(q.Value, 'g', -1, 64))
		}
		return b.String()
	case Count:
		b.WriteString("sum")
		if q.By != nil {
			b.WriteString(" by (" + strings.Join(q.By, ", ") + ")")
		}
		b.WriteString(" (count_over_time(")
	}
	b.WriteString("{")
	for i, m := range q.Selector {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.Label + opNames[m.Op].label + strconv.Quote(m.Value))
	}
	b.WriteString("}")
	for _, s := range q.Pipeline {
		switch {
		case s.Filter:
			b.WriteString(" " + opNames[s.Op].line + " " + strconv.Quote(s.Value))
		case s.Name == "drop":
			b.WriteString(" | drop " + s.Value)
		default:
			b.WriteString(" | " + s.Name)
		}
	}
	if q.Kind == Count {
		b.WriteString(" [" + FormatDuration(q.Range) + "]))")
	}
	return b.String()
}
