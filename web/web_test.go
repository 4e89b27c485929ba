package web

import (
	"strings"
	"testing"

	"ingest/query"
)

func TestAsset(t *testing.T) {
	for _, c := range []struct {
		path, ctype, contains string
		ok                    bool
	}{
		{"/", "text/html; charset=utf-8", `<script src="/ui/app.js">`, true},
		{"/index.html", "text/html; charset=utf-8", "<!doctype html>", true},
		{"/ui/app.js", "text/javascript; charset=utf-8", "/v1/tail?", true},
		{"/ui/style.css", "text/css; charset=utf-8", "#results", true},
		{"/ui/missing.js", "", "", false},
		{"/ui/../web.go", "", "", false},
		{"/v1/logs", "", "", false},
	} {
		body, ctype, ok := Asset(c.path)
		if ok != c.ok || ctype != c.ctype || !strings.Contains(string(body), c.contains) {
			t.Errorf("Asset(%q) = %d bytes, %q, %v; want %q containing %q, %v", c.path, len(body), ctype, ok, c.ctype, c.contains, c.ok)
		}
	}
}

// TestSelfContained guards the air-gapped promise: nothing the page loads
// comes from another origin.
func TestSelfContained(t *testing.T) {
	for _, p := range []string{"/", "/ui/app.js", "/ui/style.css"} {
		body, _, _ := Asset(p)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(body), bad) {
				t.Errorf("%s refers to %q: the page must load nothing from outside the server", p, bad)
			}
		}
	}
}

// TestPageKnowsTheControlKey: the page tells control lines by the key the
// server reserves for them, and by nothing else.
func TestPageKnowsTheControlKey(t *testing.T) {
	js, _, _ := Asset("/ui/app.js")
	if !strings.Contains(string(js), "const CONTROL = '"+query.ControlKey+"';") {
		t.Fatalf("app.js does not name the control key %q", query.ControlKey)
	}
	for _, field := range []string{"if (o.error)", "if (o.stats)", "if (o.dropped)", "e.marker"} {
		if strings.Contains(string(js), field) {
			t.Errorf("app.js looks at an event field, %q, to tell a control line", field)
		}
	}
}
