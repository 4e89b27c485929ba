package syslog

import (
	"strings"
	"testing"
	"time"

	"ingest/logline"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).UnixNano()

func TestParse(t *testing.T) {
	cases := []struct {
		name, msg                  string
		time                       string // RFC 3339, "" for now
		level                      logline.Level
		service, host, text, attrs string
	}{
		{"5424 full", `<165>1 2026-11-28T10:14:15.003Z mymachine.example.com evntslog 1234 ID47 [exampleSDID@32473 iut="3" eventSource="Application"] An application event`,
			"2026-11-28T10:14:15.003Z", logline.LevelInfo, "evntslog", "mymachine.example.com", "An application event",
			`{"facility":"local4","procid":"1234","msgid":"ID47","exampleSDID@32473.iut":"3","exampleSDID@32473.eventSource":"Application"}`},
		{"5424 nil values, BOM, offset", "<34>1 2026-11-28T12:14:15.5+02:00 - - - - - \xef\xbb\xbf'su root' failed",
			"2026-11-28T10:14:15.5Z", logline.LevelFatal, DefaultService, "", "'su root' failed", `{"facility":"auth"}`},
		{"5424 two SD elements, escapes, no message", `<11>1 - host app - - [a x="q\"\\\]"][b y="1"]`,
			"", logline.LevelError, "app", "host", "", `{"facility":"user","a.x":"q\"\\]","b.y":"1"}`},
		{"5424 header ends at msgid", `<15>1 2026-11-28T10:00:00Z h a p m`,
			"2026-11-28T10:00:00Z", logline.LevelDebug, "a", "h", "", `{"facility":"user","procid":"p","msgid":"m"}`},
		{"3164", `<13>Nov 28 10:14:15 web-1 sshd[4321]: Accepted publickey for git`,
			"2026-11-28T10:14:15Z", logline.LevelInfo, "sshd", "web-1", "Accepted publickey for git", `{"facility":"user","procid":"4321"}`},
		{"3164 padded day, no host", `<12>Nov  3 01:02:03 cron: job done`,
			"2026-11-03T01:02:03Z", logline.LevelWarn, "cron", "", "job done", `{"facility":"user"}`},
		{"3164 from last year", `<14>Dec 31 23:59:59 h app: late`,
			"2025-12-31T23:59:59Z", logline.LevelInfo, "app", "h", "late", `{"facility":"user"}`},
		{"3164 rfc3339 time", `<14>2026-11-28T10:00:00.123456+00:00 h app[7]: x`,
			"2026-11-28T10:00:00.123456Z", logline.LevelInfo, "app", "h", "x", `{"facility":"user","procid":"7"}`},
		{"3164 no tag", `<14>Nov 28 10:00:00 just a message`,
			"2026-11-28T10:00:00Z", logline.LevelInfo, DefaultService, "", "just a message", `{"facility":"user"}`},
		{"no priority", `plain text line`,
			"", logline.LevelInfo, DefaultService, "", "plain text line", `{"facility":"user"}`},
		{"trailing newline", "<14>Nov 28 10:00:00 h app: x\r\n",
			"2026-11-28T10:00:00Z", logline.LevelInfo, "app", "h", "x", `{"facility":"user"}`},
	}
	var p Parser
	for _, c := range cases {
		ev, err := p.Parse([]byte(c.msg), now)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		wantTime := now
		if c.time != "" {
			tm, err := time.Parse(time.RFC3339Nano, c.time)
			if err != nil {
				t.Fatal(err)
			}
			wantTime = tm.UnixNano()
		}
		if ev.Time != wantTime || ev.Level != c.level || string(ev.Service) != c.service || string(ev.Host) != c.host ||
			string(ev.Message) != c.text || string(ev.Attrs) != c.attrs || len(ev.ID) == 0 {
			t.Errorf("%s: got time %s level %s service %q host %q message %q attrs %s id %q\nwant time %s level %s service %q host %q message %q attrs %s",
				c.name, time.Unix(0, ev.Time).UTC().Format(time.RFC3339Nano), ev.Level, ev.Service, ev.Host, ev.Message, ev.Attrs, ev.ID,
				time.Unix(0, wantTime).UTC().Format(time.RFC3339Nano), c.level, c.service, c.host, c.text, c.attrs)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	var p Parser
	for _, msg := range []string{"", "  \r\n", "<192>x", "<>x", "<1x", "<14>1 notatime h a p m - x",
		`<14>1 2026-11-28T10:00:00Z h a p m [broken`, `<14>1 2026-11-28T10:00:00Z h a p m [id x=1]`, `<14>1 2026-11-28T10:00:00Z h a p m x`} {
		if ev, err := p.Parse([]byte(msg), now); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", msg, ev)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	var p Parser
	msgs := [][]byte{
		[]byte(`<165>1 2026-11-28T10:14:15.003Z mymachine evntslog 1234 ID47 [ex@1 iut="3" e="A\"pp"] An application event`),
		[]byte(`<13>Nov 28 10:14:15 web-1 sshd[4321]: Accepted publickey for git`),
	}
	for _, m := range msgs {
		p.Parse(m, now)
	}
	n := testing.AllocsPerRun(1000, func() {
		for _, m := range msgs {
			if _, err := p.Parse(m, now); err != nil {
				t.Fatal(err)
			}
		}
	})
	if n != 0 {
		t.Fatalf("parsing allocates %.1f times per two messages, want 0", n)
	}
}

func BenchmarkParse(b *testing.B) {
	var p Parser
	m := []byte(`<165>1 2026-11-28T10:14:15.003Z mymachine.example.com evntslog 1234 ID47 [exampleSDID@32473 iut="3" eventSource="Application"] An application event log entry`)
	b.ReportAllocs()
	b.SetBytes(int64(len(m)))
	for range b.N {
		p.Parse(m, now)
	}
}

// FuzzParse: no message panics, and an event's attributes are a JSON
// object a stored line can carry.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`<165>1 2026-11-28T10:14:15.003Z h a 1 ID [x@1 a="b\"c"] m`, `<13>Nov 28 10:14:15 web-1 sshd[4321]: ok`, "x", `<14>1 - - - - - -`} {
		f.Add([]byte(s))
	}
	var p Parser
	f.Fuzz(func(t *testing.T, msg []byte) {
		ev, err := p.Parse(msg, now)
		if err != nil {
			return
		}
		line := logline.AppendLine(nil, ev)
		var back logline.Event
		if err := logline.Parse(line, &back); err != nil {
			t.Fatalf("the line of %q does not parse back: %v\n%s", msg, err, line)
		}
		if !strings.HasPrefix(string(ev.Attrs), "{") {
			t.Fatalf("attrs %q", ev.Attrs)
		}
	})
}
