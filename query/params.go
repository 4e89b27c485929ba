package query

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"ingest/logline"
)

// Params are a query as text, the way both the HTTP API
// (GET /v1/logs?service=&from=&to=&level=&q=&grep=&limit=&order=) and
// `ingest query` (--service --from --to --level --q --grep --limit
// --reverse) take it. Parse turns them into a Query with the same defaults
// and the same error messages for both.
type Params struct {
	Service string // comma list, or * for all
	From    string // default -1h
	To      string // default now
	Level   string // minimum level; empty for all
	Text    string // text the message must contain
	Grep    string // regular expression the stored line must match
	Limit   string // events at most; empty or 0 for all
	Order   string // asc (default) or desc
}

// Parse checks p and returns the Query it names, relative times taken
// against now, bounded by cfg. The error says which parameter is wrong and
// what it wants.
func (p Params) Parse(now time.Time, cfg Config) (Query, error) {
	q := Query{Services: ParseServices(p.Service), Text: p.Text, Config: cfg}
	from, to := p.From, p.To
	if from == "" {
		from = "-1h"
	}
	if to == "" {
		to = "now"
	}
	var err error
	if q.From, err = ParseTime(from, now); err != nil {
		return q, fmt.Errorf("bad from: %w", err)
	}
	if q.To, err = ParseTime(to, now); err != nil {
		return q, fmt.Errorf("bad to: %w", err)
	}
	if p.Level != "" {
		l, ok := logline.ParseLevel([]byte(p.Level))
		if !ok {
			return q, fmt.Errorf("unknown level %q: want trace, debug, info, warn, error or fatal", p.Level)
		}
		q.Level = l
	}
	if p.Grep != "" {
		if q.Grep, err = regexp.Compile(p.Grep); err != nil {
			return q, fmt.Errorf("bad grep: %w", err)
		}
	}
	if p.Limit != "" {
		if q.Limit, err = strconv.Atoi(p.Limit); err != nil || q.Limit < 0 {
			return q, fmt.Errorf("bad limit %q: want a number >= 0", p.Limit)
		}
	}
	switch p.Order {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return q, fmt.Errorf("bad order %q: want asc or desc", p.Order)
	}
	return q, q.Validate()
}
