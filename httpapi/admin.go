package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"

	"ingest/logline"
)

// StatsHour is one hour of GET /v1/stats/{service}: events per level
// ("none" for events without a level).
type StatsHour struct {
	Hour   int              `json:"hour"`
	Total  int64            `json:"total"`
	Levels map[string]int64 `json:"levels"`
}

// StatsAnswer is the body of GET /v1/stats/{service}?day=YYYY-MM-DD.
type StatsAnswer struct {
	Service string      `json:"service"`
	Day     string      `json:"day"`
	Hours   []StatsHour `json:"hours"`
}

// RetentionAnswer is the body of POST /v1/retention[?dry-run=1].
type RetentionAnswer struct {
	DryRun        bool     `json:"dry_run"`
	RetentionDays int      `json:"retention_days"`
	Tables        []string `json:"tables"` // deleted, or that would be with dry_run
}

// stats handles GET /v1/stats/{service}?day=YYYY-MM-DD (default today, UTC):
// what `ingest stats` prints, for the command line beside a running server
// whose table store it cannot open.
func (s *Server) stats(ctx *fasthttp.RequestCtx) {
	p := ctx.Path()
	service, err := url.PathUnescape(string(p[min(len(p), len("/v1/stats/")):]))
	if err != nil || service == "" {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "want GET /v1/stats/{service}[?day=YYYY-MM-DD]"})
		return
	}
	if s.deps.Stats == nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusNotFound, Msg: "this server keeps no stats"})
		return
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if v := ctx.QueryArgs().Peek("day"); len(v) > 0 {
		if day, err = time.Parse("2006-01-02", string(v)); err != nil {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad day: want YYYY-MM-DD"})
			return
		}
	}
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hours, err := s.deps.Stats.ReadStats(c, service, day)
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error()})
		return
	}
	ans := StatsAnswer{Service: service, Day: day.Format("2006-01-02"), Hours: make([]StatsHour, len(hours))}
	for h, hs := range hours {
		sh := StatsHour{Hour: h, Total: hs.Total, Levels: map[string]int64{}}
		for l, n := range hs.Levels {
			name := logline.Level(l).String()
			if name == "" {
				name = "none"
			}
			sh.Levels[name] = n
		}
		ans.Hours[h] = sh
	}
	writeJSON(ctx, ans)
}

// retention handles POST /v1/retention[?dry-run=1]: deletes the login
// tables older than the server's --login-retention-days, as `ingest
// retention` does.
func (s *Server) retention(ctx *fasthttp.RequestCtx) {
	dry := false
	switch v := string(ctx.QueryArgs().Peek("dry-run")); v {
	case "", "0", "false":
	case "1", "true":
		dry = true
	default:
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: "bad dry-run: want 1 or 0"})
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tables, err := s.deps.Logins.Maintain(c, dry)
	if err != nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: "cannot apply the login retention: " + err.Error()})
		return
	}
	writeJSON(ctx, RetentionAnswer{DryRun: dry, RetentionDays: s.deps.Logins.RetentionDays(), Tables: append([]string{}, tables...)})
}

func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(ctx, err)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(append(b, '\n'))
}
