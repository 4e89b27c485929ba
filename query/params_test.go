package query

import (
	"strings"
	"testing"
	"time"

	"ingest/logline"
)

func TestParamsParse(t *testing.T) {
	now := time.Date(2026, 11, 21, 18, 30, 0, 0, time.UTC)
	t.Run("defaults", func(t *testing.T) {
		q, err := Params{Service: "api, web"}.Parse(now, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if !q.From.Equal(now.Add(-time.Hour)) || !q.To.Equal(now) || q.Desc || q.Limit != 0 || q.Level != logline.LevelNone || q.Grep != nil {
			t.Fatalf("got %+v", q)
		}
		if strings.Join(q.Services, ",") != "api,web" {
			t.Fatalf("services %q", q.Services)
		}
	})
	t.Run("every field", func(t *testing.T) {
		q, err := Params{Service: "api", From: "2026-11-21T16:00:00Z", To: "-15m", Level: "warn", Text: "disk",
			Grep: "full$", Limit: "100", Order: "desc"}.Parse(now, Config{SortBytes: 2 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if !q.From.Equal(time.Date(2026, 11, 21, 16, 0, 0, 0, time.UTC)) || !q.To.Equal(now.Add(-15*time.Minute)) ||
			q.Level != logline.LevelWarn || q.Text != "disk" || q.Grep.String() != "full$" || q.Limit != 100 || !q.Desc ||
			q.Config.SortBytes != 2<<20 {
			t.Fatalf("got %+v", q)
		}
	})
	f := func(p Params, want string) {
		t.Helper()
		_, err := p.Parse(now, Config{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Parse(%+v) = %v, want an error with %q", p, err, want)
		}
	}
	f(Params{}, "no service given")
	f(Params{Service: "api", From: "yesterday"}, "bad from")
	f(Params{Service: "api", To: "2026-13-01T00:00:00Z"}, "bad to")
	f(Params{Service: "api", From: "now", To: "-1h"}, "is not before")
	f(Params{Service: "api", Level: "loud"}, "unknown level")
	f(Params{Service: "api", Grep: "(unclosed"}, "bad grep")
	f(Params{Service: "api", Limit: "-1"}, "bad limit")
	f(Params{Service: "api", Limit: "ten"}, "bad limit")
	f(Params{Service: "api", Order: "up"}, "bad order")
	if _, err := (Params{Service: "api"}).Parse(now, Config{SortBytes: -1}); err == nil || !strings.Contains(err.Error(), "--query-sort-bytes") {
		t.Fatalf("a negative sort buffer: %v", err)
	}
}

func FuzzParamsParse(f *testing.F) {
	f.Add("api", "-1h", "now", "warn", "x", "a.*b", "10", "desc")
	f.Add("*", "2026-11-21", "2026-11-22T00:00", "", "", "", "", "asc")
	now := time.Date(2026, 11, 21, 18, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, service, from, to, level, text, grep, limit, order string) {
		q, err := Params{service, from, to, level, text, grep, limit, order}.Parse(now, Config{})
		if err != nil {
			return
		}
		if !q.From.Before(q.To) || len(q.Services) == 0 || q.Limit < 0 {
			t.Fatalf("accepted an invalid query: %+v", q)
		}
	})
}
