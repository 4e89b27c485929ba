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
	"ingest/loadtest"
	"ingest/logline"
	"ingest/query"
	"ingest/stats"
	"ingest/tablesink"
)

func runLs(args []string) error {
	fs := pflag.NewFlagSet("ls", pflag.ContinueOnError)
	scfg := storageFlags(fs)
	if err := parse(fs, "ingest ls PREFIX [flags]", args); err != nil {
		return err
	}
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
		fmt.Fprintf(w, "%s\t%d", b.Name, b.Size)
		for _, k := range []string{blobsink.MetaLogVersion, blobsink.MetaStartTime, blobsink.MetaEndTime, blobsink.MetaLogType, blobsink.MetaEventCount, blobsink.MetaLateness} {
			if v, ok := blobsink.MetaValue(b.Metadata, k); ok {
				fmt.Fprintf(w, "\t%s=%s", k, v)
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

func runCat(args []string) error {
	fs := pflag.NewFlagSet("cat", pflag.ContinueOnError)
	scfg := storageFlags(fs)
	if err := parse(fs, "ingest cat BLOB [flags]", args); err != nil {
		return err
	}
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
	_, err = io.Copy(os.Stdout, rc)
	return err
}

func runQuery(args []string) error {
	fs := pflag.NewFlagSet("query", pflag.ContinueOnError)
	scfg := storageFlags(fs)
	filter := eventFilterFlags(fs)
	from := fs.String("from", "-1h", "start time, inclusive: RFC 3339 or relative (-15m, -2h, now)")
	to := fs.String("to", "now", "end time, exclusive: RFC 3339 or relative")
	grep := fs.String("grep", "", "regular expression the stored line must match")
	format := fs.String("format", "lines", "output: lines (as stored) or ndjson")
	limit := fs.Int("limit", 0, "stop after N events (0 = all)")
	reverse := fs.Bool("reverse", false, "newest first (with --limit: the latest N, reading only the newest blobs needed)")
	showStats := fs.Bool("stats", false, "print scan figures to stderr at the end")
	qcfg := query.DefaultConfig()
	qcfg.RegisterFlags(fs)
	if err := parse(fs, "ingest query --service S --from T --to T [--level L] [--grep RE] [--format lines|ndjson] [--limit N] [--reverse]", args); err != nil {
		return err
	}
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
	w := bufio.NewWriterSize(os.Stdout, 256<<10)
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

func runLogins(args []string) error {
	fs := pflag.NewFlagSet("logins", pflag.ContinueOnError)
	scfg, tcfg := tableFlags(fs)
	days := fs.Int("days", 7, "how many days back to read")
	limit := fs.Int("limit", 20, "how many attempts at most")
	format := fs.String("format", "table", "output: table or ndjson")
	if err := parse(fs, "ingest logins USER [--days D] [--limit N] [--format table|ndjson]", args); err != nil {
		return err
	}
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
		w := bufio.NewWriter(os.Stdout)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Time, r.success(), r.IP, r.ID, r.UA)
	}
	return nil
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

func rowOf(a *tablesink.Attempt) attemptRow {
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

func runStats(args []string) error {
	fs := pflag.NewFlagSet("stats", pflag.ContinueOnError)
	scfg := storageFlags(fs)
	day := fs.String("day", "", "UTC day, YYYY-MM-DD (default today)")
	if err := parse(fs, "ingest stats SERVICE [--day YYYY-MM-DD]", args); err != nil {
		return err
	}
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

func runRetention(args []string) error {
	fs := pflag.NewFlagSet("retention", pflag.ContinueOnError)
	scfg, tcfg := tableFlags(fs)
	dry := fs.Bool("dry-run", false, "print the tables that would be deleted, delete nothing")
	if err := parse(fs, "ingest retention [--dry-run]", args); err != nil {
		return err
	}
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
		fmt.Printf("%s %s\n", verb, t)
	}
	if err == nil && len(deleted) == 0 {
		fmt.Printf("no login table is older than %d days\n", retentionDays)
	}
	return err
}

func runLoadtest(args []string) error {
	fs := pflag.NewFlagSet("loadtest", pflag.ContinueOnError)
	cfg := loadtest.DefaultConfig()
	cfg.RegisterFlags(fs)
	if err := parse(fs, "ingest loadtest [flags]", args); err != nil {
		return err
	}
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
