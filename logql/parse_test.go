package logql

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParse: every form of the subset parses to what it means, and writes
// back (String) in a form that parses the same.
func TestParse(t *testing.T) {
	f := func(in, want string, kind Kind) {
		t.Helper()
		q, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if q.Kind != kind || q.String() != want {
			t.Fatalf("Parse(%q) = kind %d %q, want kind %d %q", in, q.Kind, q.String(), kind, want)
		}
		again, err := Parse(q.String())
		if err != nil || again.String() != want {
			t.Fatalf("Parse(%q) again = %v, %v", q.String(), again, err)
		}
	}
	f(`{service="api"}`, `{service="api"}`, Logs)
	f(` { service = "api" , host!="web-1", level=~"warn|error" , } `, `{service="api", host!="web-1", level=~"warn|error"}`, Logs)
	f("{service=`a\\b`}", `{service="a\\b"}`, Logs)
	f(`{}`, `{}`, Logs)
	f(`{service!~"test.*"} |= "disk" != "debug" |~ "err(or)?" !~ "^x"`, `{service!~"test.*"} |= "disk" != "debug" |~ "err(or)?" !~ "^x"`, Logs)
	f(`{service="api"}|json|logfmt|drop __error__,__error_details__`, `{service="api"} | json | logfmt | drop __error__, __error_details__`, Logs)
	f(`{service="api"} |= "\"quoted\"\n"`, `{service="api"} |= "\"quoted\"\n"`, Logs)
	// Grafana's log volume: 10.x, then 11.x with detected_level and the
	// drop it adds after a selector without parser errors.
	f(`sum by (level) (count_over_time({service="api"}[1m]))`, `sum by (level) (count_over_time({service="api"} [1m]))`, Count)
	f(`sum by (level, detected_level) (count_over_time({service="api"} |= "x" | drop __error__[15s]))`,
		`sum by (level, detected_level) (count_over_time({service="api"} |= "x" | drop __error__ [15s]))`, Count)
	f(`sum(count_over_time({host="h"} | json [1h30m])) by (level)`, `sum by (level) (count_over_time({host="h"} | json [1h30m]))`, Count)
	f(`sum(count_over_time({host="h"}[300ms]))`, `sum (count_over_time({host="h"} [300ms]))`, Count)
	// The data source's health check.
	f(`vector(1)+vector(1)`, `vector(2)`, Const)
	f(`1 + 2 * 3`, `7`, Const)
	f(`(1+2)*-vector(3)`, `vector(-9)`, Const)
	f(`vector(1.5e3) / 2`, `vector(750)`, Const)
}

// TestParseRefuses: everything outside the subset is an *Error naming the
// subset, at the column of the problem.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ in, why string }{
		{``, "ends too soon"},
		{`{app="x"}`, `unknown label "app"`},
		{`{service="api"`, `want , or }`},
		{`1/0`, "not a finite number"},
		{`{service=api}`, "quoted string"},
		{`{service=~"("}`, "bad regular expression"},
		{`{service="api"} |~ "[z-a]"`, "bad regular expression"},
		{`{service="api"} | line_format "{{.x}}"`, "| line_format is not supported"},
		{`{service="api"} | json a="b"`, "takes no parameters"},
		{`{service="api"} | drop host`, "only __error__"},
		{`{service="api"} | level="error"`, "| level is not supported"},
		{`{service="api"} |= "a" or "b"`, "joined with or"},
		{`{service="api"} |= "unterminated`, "unterminated string"},
		{`rate({service="api"}[1m])`, "want a selector"},
		{`sum by (level) (rate({service="api"}[1m]))`, "only count_over_time"},
		{`sum by (host) (count_over_time({service="api"}[1m]))`, "grouped by (level)"},
		{`sum by (level) (count_over_time({service="api"}[1m])) by (level)`, "twice"},
		{`sum by (level) (count_over_time({service="api"}[0s]))`, "zero"},
		{`sum by (level) (count_over_time({service="api"}[1x]))`, "bad range"},
		{`sum by (level) (count_over_time({service="api"}[1m])) > 2`, "unexpected"},
		{`count_over_time({service="api"}[1m])`, "want a selector"},
		{`vector(1)+`, "ends too soon"},
		{`{service="api"} {`, "unexpected"},
		{"{service=\"\xff\"}", "UTF-8"},
		{`{service="` + strings.Repeat("a", MaxLength) + `"}`, "more than"},
		{strings.Repeat("1+", maxTerms) + "1", "terms"},
		{"{" + strings.Repeat(`host="a",`, maxMatchers+1) + "}", "matchers"},
		{`{host="a"}` + strings.Repeat(` |= "a"`, maxStages+1), "stages"},
	} {
		_, err := Parse(c.in)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), Supported) {
			t.Errorf("Parse(%.40q) = %v, want an *Error saying %q and naming the subset", c.in, err, c.why)
		}
	}
}

// TestMatch: matchers compare whole label values (regular expressions
// anchored), an absent label is the empty value, and line filters look
// anywhere in the line.
func TestMatch(t *testing.T) {
	q, err := Parse(`{service=~"api|web", host!="h2", level!~"debug|trace"} |= "disk" != "tmp" |~ "disk (full|gone)" !~ "ignored$"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		svc, host, level, line string
		want                   bool
	}{
		{"api", "h1", "error", "disk full", true},
		{"web", "", "", "the disk gone", true},
		{"apix", "h1", "error", "disk full", false}, // anchored
		{"api", "h2", "error", "disk full", false},
		{"api", "h1", "debug", "disk full", false},
		{"api", "h1", "info", "memory full", false},
		{"api", "h1", "info", "disk full, ignored", false},
		{"api", "h1", "info", "disk full in /tmp", false},
		{"api", "h1", "info", "disk usage high", false},
	} {
		got := q.Matches([]byte(c.svc), []byte(c.host), []byte(c.level)) && q.Keep([]byte(c.line))
		if got != c.want {
			t.Errorf("%+v: matched %v, want %v", c, got, c.want)
		}
	}
	if !q.Filters() || len(q.Only("service")) != 1 || len(q.Only("host")) != 1 {
		t.Fatalf("Filters %v, Only %v", q.Filters(), q.Only("service"))
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1m": time.Minute, "1h30m": 90 * time.Minute, "300ms": 300 * time.Millisecond, "2d": 48 * time.Hour,
		"1w": 7 * 24 * time.Hour, "1y": 365 * 24 * time.Hour, "1m30s500ms": 90500 * time.Millisecond, "100y": 100 * 365 * 24 * time.Hour,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if got, err := ParseDuration(FormatDuration(want)); err != nil || got != want {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", want, got, err)
		}
	}
	for _, bad := range []string{"", "m", "1", "1x", "30s1m", "1m1m", "1.5m", "-1m", "101y", "9999999999999s", "1h 2m"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts writes back
// into a query that parses to the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{service="api"}`, `{host=~"a|b", level!="info"} |= "x" !~ "y" | json | drop __error__`,
		`sum by (level, detected_level) (count_over_time({service="api"} | drop __error__ [1m]))`, `vector(1)+vector(1)`, "{service=`x`}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			return
		}
		out := q.String()
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", s, out, err)
		}
		if again.String() != out {
			t.Fatalf("Parse(%q) = %q, then %q", s, out, again.String())
		}
		q.Matches([]byte("api"), nil, []byte("info"))
		q.Keep([]byte("line"))
	})
}
