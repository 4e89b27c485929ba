package intake

import (
	"fmt"
	"strings"
	"testing"

	"ingest/logline"
)

func TestText(t *testing.T) {
	body := "first line\r\n\n   \nsecond; \"quoted\" {json}\n" + strings.Repeat("x", MaxLineBytes+1) + "\n\xff third"
	evs, res, err := parseAll(t, body, FormatText, Defaults{Service: []byte("app"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Rejected != 1 || res.Errors[0].Line != 5 {
		t.Fatalf("result %+v, want 3 accepted and line 5 rejected as too long", res)
	}
	want := []string{"first line", `second; "quoted" {json}`, "\xff third"}
	for i, e := range evs {
		if e.Message != want[i] || e.Service != "app" || e.Time != now || e.Level != logline.LevelNone ||
			e.Attrs != "" || len(e.ID) != IDLen {
			t.Errorf("event %d = %v, want message %q, service app, the request time and a generated id", i, e, want[i])
		}
	}
	if evs[0].ID == evs[1].ID {
		t.Errorf("two events share the id %s", evs[0].ID)
	}
}

func TestTextDefaultService(t *testing.T) {
	evs, _, _ := parseAll(t, "x", FormatText, Defaults{Now: now})
	if fmt.Sprint(len(evs)) != "1" || evs[0].Service != "default" {
		t.Fatalf("events %v, want one with service default", evs)
	}
}
