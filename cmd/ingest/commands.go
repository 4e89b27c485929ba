package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"ingest/blobsink"
	"ingest/httpapi"
	"ingest/intake/login"
	"ingest/loadtest"
	"ingest/logline"
	"ingest/query"
	"ingest/stats"
	"ingest/tablesink"
)

// lsCommand lists the blobs under a prefix with their size and metadata.
func lsCommand(fs *pflag.FlagSet) func() error {
	scfg := storageFlags(fs)
	return func() error {
		prefix := ""
		if fs.NArg() > 1 {
			return fmt.Errorf("want at most one PREFIX argument")
		}
		if fs.NArg() == 1 {
			prefix = fs.Arg(0)
		}
		ctx := context.Background()
		be, err := openBackend(ctx, scfg, false)
		if err != nil {
			return err
		}
		defer be.close()
		var blobs []blobsink.BlobInfo
		if err := be.blobs.List(ctx, prefix, func(b blobsink.BlobInfo) error { blobs = append(blobs, b); return nil }); err != nil {
			return err
		}
		sort.Slice(blobs, func(i, j int) bool { return blobs[i].Name < blobs[j].Name })
		w := bufio.NewWriter(os.Stdout)
		defer w.Flush()
		for _, b := range blobs {
			// Names and metadata are whatever a writer of the container set.
			fmt.Fprintf(w, "%s\t%d", termSafe(b.Name), b.Size)
			for _, k := range []string{blobsink.MetaLogVersion, blobsink.MetaStartTime, blobsink.MetaEndTime, blobsink.MetaLogType, blobsink.MetaEventCount, blobsink.MetaLateness} {
				if v, ok := blobsink.MetaValue(b.Metadata, k); ok {
					fmt.Fprintf(w, "\t%s=%s", k, termSafe(v))
				}
			}
			fmt.Fprintln(w)
		}
		return nil
	}
}

// catCommand prints a blob's lines, decompressed.
func catCommand(fs *pflag.FlagSet) func() error {
	scfg := storageFlags(fs)
	return func() error {
		name, err := oneArg(fs, "BLOB")
		if err != nil {
			return err
		}
		ctx := context.Background()
		be, err := openBackend(ctx, scfg, false)
		if err != nil {
			return err
		}
		defer be.close()
		rc, err := query.OpenBlob(ctx, be.blobs, name)
		if err != nil {
			return fmt.Errorf("cannot open blob %s: %w", name, err)
		}
		defer rc.Close()
		out := termLines(os.Stdout)
		if _, err = io.Copy(out, rc); err != nil {
			return err
		}
		return out.Flush()
	}
}

// queryCommand reads the events of a time range from the blobs, as
// GET /v1/logs does.
func queryCommand(fs *pflag.FlagSet) func() error {
	filter := eventFilterFlags(fs)
	from := fs.String("from", "-1h", "start `TIME`, inclusive: RFC 3339 or relative (-15m, -2h, now)")
	to := fs.String("to", "now", "end `TIME`, exclusive: RFC 3339 or relative")
	grep := fs.String("grep", "", "regular expression (`RE`) the stored line must match")
	format := fs.String("format", "lines", "output, `lines|ndjson`: the lines as stored, or the JSON objects of GET /v1/logs")
	limit := fs.Int("limit", 0, "stop after `N` events (0 = all)")
	reverse := fs.Bool("reverse", false, "newest first (with --limit: the latest N, reading only the newest blobs needed)")
	showStats := fs.Bool("stats", false, "print scan figures to stderr at the end")
	qcfg := query.DefaultConfig()
	addGroup(fs, groupQuery, qcfg.RegisterFlags)
	scfg := storageFlags(fs)
	return func() error {
		if *format != "lines" && *format != "ndjson" {
			return fmt.Errorf("bad --format %q: want lines or ndjson", *format)
		}
		order := "asc"
		if *reverse {
			order = "desc"
		}
		q, err := query.Params{Service: *filter.service, From: *from, To: *to, Level: *filter.level, Text: *filter.text, Grep: *grep,
			Limit: strconv.Itoa(*limit), Order: order}.Parse(time.Now(), qcfg)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		be, err := openBackend(ctx, scfg, false)
		if err != nil {
			return err
		}
		defer be.close()
		out := termLines(os.Stdout)
		defer out.Flush()
		w := bufio.NewWriterSize(out, 256<<10)
		defer w.Flush()
		var st query.Stats
		if *format == "ndjson" {
			st, err = query.RunNDJSON(ctx, be.blobs, q, w)
		} else {
			st, err = query.Run(ctx, be.blobs, q, func(line []byte, _ *logline.Event) error {
				_, err := w.Write(line)
				return err
			})
		}
		if *showStats {
			fmt.Fprintf(os.Stderr, "prefixes=%d blobs_listed=%d blobs_skipped=%d blobs_read=%d bytes_read=%d lines_scanned=%d lines_matched=%d lines_out_of_order=%d\n",
				st.Prefixes, st.BlobsListed, st.BlobsSkipped, st.BlobsRead, st.BytesRead, st.LinesScanned, st.LinesMatched, st.LinesOutOfOrder)
		}
		return err
	}
}

// loginsCommand prints a user's latest login attempts, asking the server
// running on --data-dir when there is one.
func loginsCommand(fs *pflag.FlagSet) func() error {
	days := fs.Int("days", 7, "read `N` days back, today included")
	limit := fs.Int("limit", 20, "print `N` attempts at most")
	format := fs.String("format", "table", "output, `table|ndjson`")
	scfg, tcfg := tableFlags(fs)
	return func() error {
		user, err := oneArg(fs, "USER")
		if err != nil {
			return err
		}
		if *format != "table" && *format != "ndjson" {
			return fmt.Errorf("bad --format %q: want table or ndjson", *format)
		}
		if *days <= 0 || *limit <= 0 {
			return fmt.Errorf("cannot use --days %d --limit %d: want both above 0", *days, *limit)
		}
		ctx := context.Background()
		var rows []attemptRow
		if srv, ok, err := beside(scfg); err != nil {
			return err
		} else if ok {
			if rows, err = srv.logins(user, *days, *limit); err != nil {
				return err
			}
		} else {
			sink, closeSink, err := openTableSink(ctx, scfg, *tcfg)
			if err != nil {
				return err
			}
			defer closeSink()
			attempts, err := sink.Tail(ctx, user, *days, *limit)
			if err != nil {
				return err
			}
			for i := range attempts {
				rows = append(rows, rowOf(&attempts[i]))
			}
		}
		if *format == "ndjson" {
			out := termLines(os.Stdout)
			defer out.Flush()
			w := bufio.NewWriter(out)
			defer w.Flush()
			for _, r := range rows {
				w.Write(r.json)
				w.WriteByte('\n')
			}
			return nil
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		defer tw.Flush()
		fmt.Fprintln(tw, "TIME\tSUCCESS\tIP\tID\tUSER AGENT")
		for _, r := range rows {
			// IP, id and user agent are what the client sent.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termSafe(r.Time), r.success(), termSafe(r.IP), termSafe(r.ID), termSafe(r.UA))
		}
		return nil
	}
}

// attemptRow is one login attempt as the logins command prints it: its
// NDJSON form and the columns of the table.
type attemptRow struct {
	json    []byte
	Time    string `json:"ts"`
	Success *bool  `json:"success"`
	IP      string `json:"ip"`
	ID      string `json:"id"`
	UA      string `json:"ua"`
}

func rowOf(a *login.Attempt) attemptRow {
	r := attemptRow{json: tablesink.AppendAttemptJSON(nil, a), Time: string(logline.AppendTime(nil, a.Time)),
		IP: string(a.IP), ID: string(a.ID), UA: string(a.UA)}
	if a.HasSuccess {
		r.Success = &a.Success
	}
	return r
}

func (r attemptRow) success() string {
	if r.Success == nil {
		return "-"
	}
	return fmt.Sprint(*r.Success)
}

// statsCommand prints a service's hour-by-hour event counts of a day.
func statsCommand(fs *pflag.FlagSet) func() error {
	day := fs.String("day", "", "the UTC day, `YYYY-MM-DD` (default today)")
	scfg := storageFlags(fs)
	return func() error {
		service, err := oneArg(fs, "SERVICE")
		if err != nil {
			return err
		}
		d := time.Now().UTC().Truncate(24 * time.Hour)
		if *day != "" {
			if d, err = time.Parse("2006-01-02", *day); err != nil {
				return fmt.Errorf("bad --day %q: want YYYY-MM-DD", *day)
			}
		}
		ctx := context.Background()
		var hours [24]stats.HourStats
		if srv, ok, err := beside(scfg); err != nil {
			return err
		} else if ok {
			if hours, err = srv.stats(service, d); err != nil {
				return err
			}
		} else {
			be, err := openBackend(ctx, scfg, true)
			if err != nil {
				return err
			}
			defer be.close()
			if hours, err = stats.Read(ctx, be.tables, service, d); err != nil {
				return err
			}
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		defer tw.Flush()
		levels := logline.Levels()
		header := []string{"HOUR", "TOTAL"}
		for _, l := range levels {
			header = append(header, strings.ToUpper(l.String()))
		}
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		for h, hs := range hours {
			row := []string{fmt.Sprintf("%02d:00", h), fmt.Sprint(hs.Total)}
			for _, l := range levels {
				row = append(row, fmt.Sprint(hs.Levels[l]))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		return nil
	}
}

// retentionCommand deletes the login tables past the retention, through
// the server running on --data-dir when there is one.
func retentionCommand(fs *pflag.FlagSet) func() error {
	dry := fs.Bool("dry-run", false, "print the tables that would be deleted, delete nothing")
	scfg, tcfg := tableFlags(fs)
	return func() error {
		ctx := context.Background()
		var deleted []string
		retentionDays := tcfg.RetentionDays
		srv, ok, err := beside(scfg)
		if err != nil {
			return err
		}
		if ok {
			if fs.Changed("login-retention-days") {
				fmt.Fprintln(os.Stderr, "note: the server running on this --data-dir applies its own --login-retention-days")
			}
			var ans httpapi.RetentionAnswer
			err = srv.retention(*dry, &ans)
			deleted, retentionDays = ans.Tables, ans.RetentionDays
		} else {
			sink, closeSink, err2 := openTableSink(ctx, scfg, *tcfg)
			if err2 != nil {
				return err2
			}
			defer closeSink()
			deleted, err = sink.Maintain(ctx, *dry)
		}
		verb := "deleted"
		if *dry {
			verb = "would delete"
		}
		for _, t := range deleted {
			fmt.Printf("%s %s\n", verb, termSafe(t))
		}
		if err == nil && len(deleted) == 0 {
			fmt.Printf("no login table is older than %d days\n", retentionDays)
		}
		return err
	}
}

// loadtestCommand runs the load generator.
func loadtestCommand(fs *pflag.FlagSet) func() error {
	cfg := loadtest.DefaultConfig()
	addGroup(fs, groupLoadtest, cfg.RegisterFlags)
	return func() error {
		if err := cfg.Validate(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		rep, err := loadtest.Run(ctx, cfg, os.Stderr)
		if rep != nil {
			rep.WriteText(os.Stdout)
		}
		return err
	}
}
