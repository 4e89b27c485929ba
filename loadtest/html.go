package loadtest

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// The HTML report is one self-contained page: inline CSS and hand-drawn
// SVG, no scripts and nothing fetched, so it renders offline and can be
// attached to a ticket as is.

const (
	colBlue   = "#2563eb"
	colOrange = "#f59e0b"
	colRed    = "#dc2626"
	colGreen  = "#059669"
	colPurple = "#7c3aed"
	colGrid   = "#e5e7eb"
	colAxis   = "#6b7280"
)

const pageCSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#111827;background:#f3f4f6}
header{background:linear-gradient(135deg,#1e3a8a,#2563eb 60%,#0ea5e9);color:#fff;padding:28px 0 72px}
.wrap{max-width:1180px;margin:0 auto;padding:0 24px}
h1{margin:0 0 4px;font-size:26px;font-weight:650;letter-spacing:-.01em}
header .sub{opacity:.85;font-size:13px}
header code{background:rgba(255,255,255,.15);padding:1px 6px;border-radius:4px}
.kpis{display:grid;grid-template-columns:repeat(5,1fr);gap:14px;margin-top:-52px}
.kpi{background:#fff;border-radius:12px;padding:14px 16px;box-shadow:0 1px 3px rgba(0,0,0,.08),0 6px 16px rgba(0,0,0,.05)}
.kpi .v{font-size:26px;font-weight:650;letter-spacing:-.02em;white-space:nowrap}
.kpi .l{color:#6b7280;font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.kpi .s{color:#6b7280;font-size:12px}
.good{color:#059669}.bad{color:#dc2626}.warn{color:#d97706}
.card{background:#fff;border-radius:12px;padding:18px 20px;margin-top:18px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.card h2{margin:0 0 2px;font-size:16px;font-weight:620}
.card .hint{color:#6b7280;font-size:12.5px;margin-bottom:8px}
.row{display:grid;grid-template-columns:3fr 2fr;gap:18px}
.row .card{margin-top:18px}
svg{display:block;width:100%;height:auto}
svg text.halo{paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;fill:#6b7280}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #f0f0f0}
th{color:#6b7280;font-weight:560;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
td.n,th.n{text-align:right}
.pill{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600}
.p2{background:#d1fae5;color:#065f46}.p4{background:#fef3c7;color:#92400e}.p5{background:#fee2e2;color:#991b1b}
.legend{display:flex;gap:16px;font-size:12px;color:#374151;margin:2px 0 4px}
.legend i{display:inline-block;width:14px;height:3px;border-radius:2px;margin-right:6px;vertical-align:middle}
footer{color:#9ca3af;font-size:12px;padding:24px 0 40px}
`

// WriteHTML writes the report as a self-contained HTML page with charts.
func (r *Report) WriteHTML(w io.Writer) error {
	var b strings.Builder
	htmlHeader(&b, r)
	kpiSection(&b, r)
	throughputSection(&b, r)
	latencySection(&b, r)
	distributionSection(&b, r)
	if pr := r.Partitions; pr != nil {
		partitionSection(&b, pr)
	}
	if v := r.Verify; v != nil || r.VerifyErr != "" {
		verifySection(&b, v, r.VerifyErr)
	}
	summarySection(&b, r)
	fmt.Fprintf(&b, "<footer>ingest loadtest &middot; run %s &middot; %s</footer>\n", html.EscapeString(r.RunID), r.End.UTC().Format("2006-01-02 15:04:05 UTC"))
	b.WriteString("</main></body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlHeader writes the document head and the page header with the run's
// parameters.
func htmlHeader(b *strings.Builder, r *Report) {
	e := html.EscapeString
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	b.WriteString(`<meta name="viewport" content="width=device-width,initial-scale=1">`)
	fmt.Fprintf(b, "<title>ingest loadtest %s</title>\n<style>%s</style></head><body>\n", e(r.RunID), pageCSS)

	fmt.Fprintf(b, `<header><div class="wrap"><h1>ingest load test</h1><div class="sub">run <code>%s</code> against <code>%s</code> &middot; %s &middot; %d workers &middot; batch %d &middot; %s &middot; %s, %.1fs`,
		e(r.RunID), e(r.Target), e(r.Mode), r.Concurrency, r.Batch, e(r.Encoding), r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), r.Seconds)
	if r.Interrupted {
		b.WriteString(" &middot; <b>interrupted</b>")
	}
	b.WriteString("</div></div></header>\n<main class=\"wrap\">\n")
}

// kpiSection writes the headline numbers.
func kpiSection(b *strings.Builder, r *Report) {
	e := html.EscapeString
	b.WriteString(`<div class="kpis">`)
	kpi := func(label, value, sub, class string) {
		fmt.Fprintf(b, `<div class="kpi"><div class="l">%s</div><div class="v %s">%s</div><div class="s">%s</div></div>`, label, class, value, sub)
	}
	kpi("Throughput", short(r.EventsPerSec), "events/s accepted", "")
	kpi("Events", short(float64(r.EventsAccepted)), "accepted of "+short(float64(r.EventsSent))+" sent", "")
	kpi("p99 latency", e(ms(r.Latency.P99)), "p50 "+e(ms(r.Latency.P50))+" &middot; max "+e(ms(r.Latency.Max)), "")
	errClass := "good"
	if r.Errors > 0 {
		errClass = "bad"
	}
	kpi("Errors", human(r.Errors), fmt.Sprintf("failed requests &middot; %s retried after 429/503", human(r.Retry429+r.Retry503)), errClass)
	kpi("Bandwidth", fmt.Sprintf("%.0f MB/s", r.MBPerSecRaw), fmt.Sprintf("raw &middot; %.0f MB/s on the wire", r.MBPerSecWire), "")
	b.WriteString("</div>\n")
}

// throughputSection writes the throughput-over-time card.
func throughputSection(b *strings.Builder, r *Report) {
	b.WriteString(`<div class="card"><h2>Throughput</h2><div class="hint">Accepted events per second; the dashed line is the run's mean`)
	if r.Rate > 0 {
		b.WriteString(", the dotted one the target rate")
	}
	b.WriteString("; red marks are seconds with errors.</div>")
	throughputChart(b, r)
	b.WriteString("</div>\n")
}

// latencySection writes the latency-over-time card.
func latencySection(b *strings.Builder, r *Report) {
	b.WriteString(`<div class="card"><h2>Latency over time</h2><div class="hint">Per second, measured from each request's intended send time (so stalls are not hidden by coordinated omission). Log scale.</div>`)
	b.WriteString(`<div class="legend"><span><i style="background:` + colBlue + `"></i>p50</span><span><i style="background:` + colOrange + `"></i>p99</span><span><i style="background:` + colRed + `"></i>max</span></div>`)
	latencyChart(b, r)
	b.WriteString("</div>\n")
}

// distributionSection writes the latency histogram beside the percentile
// and answer tables.
func distributionSection(b *strings.Builder, r *Report) {
	e := html.EscapeString
	b.WriteString(`<div class="row"><div class="card"><h2>Latency distribution</h2><div class="hint">Requests per latency bucket (four buckets per decade).</div>`)
	histogramChart(b, r)
	b.WriteString(`</div><div class="card"><h2>Latency percentiles</h2>`)
	b.WriteString(`<table><tr><th>percentile</th><th class="n">latency</th></tr>`)
	for _, p := range []struct {
		n string
		v float64
	}{{"p50", r.Latency.P50}, {"p90", r.Latency.P90}, {"p99", r.Latency.P99}, {"p99.9", r.Latency.P999}, {"max", r.Latency.Max}, {"mean", r.Latency.Mean}} {
		fmt.Fprintf(b, `<tr><td>%s</td><td class="n">%s</td></tr>`, p.n, e(ms(p.v)))
	}
	b.WriteString(`</table><h2 style="margin-top:16px">Answers</h2><table><tr><th>status</th><th class="n">requests</th></tr>`)
	for _, k := range sortedKeys(r.Status) {
		cls := "p5"
		switch {
		case strings.HasPrefix(k, "2"):
			cls = "p2"
		case strings.HasPrefix(k, "4"):
			cls = "p4"
		}
		fmt.Fprintf(b, `<tr><td><span class="pill %s">%s</span></td><td class="n">%s</td></tr>`, cls, e(k), human(r.Status[k]))
	}
	fmt.Fprintf(b, `<tr><td>429 honoured (retried)</td><td class="n">%s</td></tr><tr><td>503 honoured (retried)</td><td class="n">%s</td></tr>`, human(r.Retry429), human(r.Retry503))
	b.WriteString("</table></div></div>\n")
}

// summarySection writes the table of totals.
func summarySection(b *strings.Builder, r *Report) {
	b.WriteString(`<div class="card"><h2>Summary</h2><table>`)
	row := func(k, v string) { fmt.Fprintf(b, `<tr><td>%s</td><td class="n">%s</td></tr>`, k, v) }
	row("events sent", human(r.EventsSent))
	row("events accepted", human(r.EventsAccepted))
	row("events rejected (bad lines, 4xx)", human(r.EventsRejected))
	row("events failed (5xx, transport, retries given up)", human(r.EventsFailed))
	row("login attempts sent (attack)", human(r.LoginsSent)+" ("+human(r.AttackSent)+")")
	row("requests", human(r.Requests))
	row("events/s accepted", human(int64(r.EventsPerSec)))
	row("raw bytes (uncompressed)", fmt.Sprintf("%s &middot; %.1f MB/s", bytesHuman(r.BytesRaw), r.MBPerSecRaw))
	row("bytes on the wire ("+html.EscapeString(r.Encoding)+")", fmt.Sprintf("%s &middot; %.1f MB/s", bytesHuman(r.BytesWire), r.MBPerSecWire))
	row("mean message size", fmt.Sprintf("%d bytes (long-tailed)", r.EventSize))
	row("seed", fmt.Sprint(r.Seed))
	b.WriteString("</table></div>\n")
}

// plot maps data to an SVG viewport with margins.
type plot struct {
	b              *strings.Builder
	w, h           float64
	ml, mr, mt, mb float64
	x0, x1, y0, y1 float64
	xlog, ylog     bool
}

func (p *plot) tx(v float64) float64 {
	a, b := p.x0, p.x1
	if p.xlog {
		v, a, b = math.Log10(math.Max(v, p.x0)), math.Log10(a), math.Log10(b)
	}
	if b == a {
		return p.ml
	}
	return p.ml + (v-a)/(b-a)*(p.w-p.ml-p.mr)
}

func (p *plot) ty(v float64) float64 {
	a, b := p.y0, p.y1
	if p.ylog {
		v, a, b = math.Log10(math.Max(v, p.y0)), math.Log10(a), math.Log10(b)
	}
	if b == a {
		return p.h - p.mb
	}
	return p.h - p.mb - (v-a)/(b-a)*(p.h-p.mt-p.mb)
}

func (p *plot) open() {
	fmt.Fprintf(p.b, `<svg viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg" role="img">`, p.w, p.h)
}

func (p *plot) close() { p.b.WriteString("</svg>") }

// yAxis draws horizontal grid lines with labels.
func (p *plot) yAxis(ticks []float64, label func(float64) string) {
	for _, t := range ticks {
		y := p.ty(t)
		fmt.Fprintf(p.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, p.ml, p.w-p.mr, y, y, colGrid)
		fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, p.ml-8, y, html.EscapeString(label(t)))
	}
}

// xAxis draws the baseline with tick labels.
func (p *plot) xAxis(ticks []float64, label func(float64) string) {
	y := p.h - p.mb
	fmt.Fprintf(p.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, p.ml, p.w-p.mr, y, y, colAxis)
	for _, t := range ticks {
		x := p.tx(t)
		fmt.Fprintf(p.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, x, x, y, y+4, colAxis)
		fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, y+17, html.EscapeString(label(t)))
	}
}

func (p *plot) polyline(xs, ys []float64, color string, width float64, dash string) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	for i := range xs {
		fmt.Fprintf(&pts, "%.1f,%.1f ", p.tx(xs[i]), p.ty(ys[i]))
	}
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(p.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round" stroke-linecap="round"%s/>`, strings.TrimSpace(pts.String()), color, width, d)
}

func (p *plot) empty(msg string) {
	fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" text-anchor="middle" style="font-size:13px">%s</text>`, p.w/2, p.h/2, html.EscapeString(msg))
}

// niceTicks returns about n round ticks from 0 to at least hi.
func niceTicks(hi float64, n int) []float64 {
	if hi <= 0 {
		return []float64{0}
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// The last tick is the first at or above hi, so the data fits under it.
	var out []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, v)
		if v >= hi*0.9999 {
			return out
		}
	}
}

// logTicks returns 1-2-5 ticks in [lo, hi], or decades when there are many.
func logTicks(lo, hi float64) []float64 {
	var out []float64
	mults := []float64{1, 2, 5}
	if hi/lo > 1e4 {
		mults = []float64{1}
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if v >= lo*0.999 && v <= hi*1.001 {
				out = append(out, v)
			}
		}
	}
	return out
}

// short formats a number with a k/M/G suffix.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func bytesHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func secondsLabel(v float64) string {
	if v >= 120 {
		return fmt.Sprintf("%.0fm%02.0fs", math.Floor(v/60), math.Mod(v, 60))
	}
	return fmt.Sprintf("%.0fs", v)
}

func timeTicks(span float64) []float64 {
	ticks := niceTicks(span, 10)
	if len(ticks) > 0 && ticks[len(ticks)-1] > span {
		ticks = ticks[:len(ticks)-1]
	}
	return ticks
}

func throughputChart(b *strings.Builder, r *Report) {
	p := &plot{b: b, w: 1100, h: 270, ml: 64, mr: 20, mt: 14, mb: 30}
	p.open()
	defer p.close()
	s := r.Series
	if len(s) == 0 {
		p.empty("no complete second of data")
		return
	}
	peak := 0.0
	for _, x := range s {
		peak = math.Max(peak, x.EventsPerSec)
	}
	peak = math.Max(peak, r.Rate)
	ticks := niceTicks(peak*1.08, 5)
	p.x0, p.x1 = 0, float64(len(s))
	p.y0, p.y1 = 0, ticks[len(ticks)-1]
	fmt.Fprintf(b, `<defs><linearGradient id="tp" x1="0" x2="0" y1="0" y2="1"><stop offset="0" stop-color="%s" stop-opacity=".35"/><stop offset="1" stop-color="%s" stop-opacity=".03"/></linearGradient></defs>`, colBlue, colBlue)
	p.yAxis(ticks, short)
	// Each second is a step: its rate held over its whole second.
	xs := make([]float64, 0, 2*len(s))
	ys := make([]float64, 0, 2*len(s))
	for _, x := range s {
		xs = append(xs, x.T, x.T+1)
		ys = append(ys, x.EventsPerSec, x.EventsPerSec)
	}
	var area strings.Builder
	fmt.Fprintf(&area, "M%.1f,%.1f ", p.tx(xs[0]), p.ty(0))
	for i := range xs {
		fmt.Fprintf(&area, "L%.1f,%.1f ", p.tx(xs[i]), p.ty(ys[i]))
	}
	fmt.Fprintf(&area, "L%.1f,%.1f Z", p.tx(xs[len(xs)-1]), p.ty(0))
	fmt.Fprintf(b, `<path d="%s" fill="url(#tp)"/>`, area.String())
	p.polyline(xs, ys, colBlue, 2.2, "")
	if r.EventsPerSec > 0 {
		y := p.ty(r.EventsPerSec)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`, p.ml, p.w-p.mr, y, y, colPurple)
		fmt.Fprintf(b, `<text class="halo" x="%.1f" y="%.1f" text-anchor="end" style="fill:%s;font-weight:600">mean %s/s</text>`, p.w-p.mr-4, y-6, colPurple, short(r.EventsPerSec))
	}
	if r.Rate > 0 {
		y := p.ty(r.Rate)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`, p.ml, p.w-p.mr, y, y, colGreen)
		fmt.Fprintf(b, `<text class="halo" x="%.1f" y="%.1f" style="fill:%s;font-weight:600">target %s/s</text>`, p.ml+6, y-6, colGreen, short(r.Rate))
	}
	for _, x := range s {
		if x.Errors > 0 {
			x0, x1 := p.tx(x.T), p.tx(x.T+1)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="5" fill="%s"><title>%d errors</title></rect>`, x0, p.h-p.mb-5, math.Max(1, x1-x0), colRed, x.Errors)
		}
	}
	p.xAxis(timeTicks(float64(len(s))), secondsLabel)
}

func latencyChart(b *strings.Builder, r *Report) {
	p := &plot{b: b, w: 1100, h: 270, ml: 64, mr: 20, mt: 14, mb: 30, ylog: true}
	p.open()
	defer p.close()
	s := r.Series
	var xs, p50, p99, mx []float64
	lo, hi := math.Inf(1), 0.0
	for _, x := range s {
		if x.Requests == 0 {
			continue
		}
		xs = append(xs, x.T+0.5)
		p50 = append(p50, x.P50Ms)
		p99 = append(p99, x.P99Ms)
		mx = append(mx, x.MaxMs)
		lo = math.Min(lo, x.P50Ms)
		hi = math.Max(hi, x.MaxMs)
	}
	if len(xs) == 0 {
		p.empty("no latency data")
		return
	}
	p.x0, p.x1 = 0, float64(len(s))
	p.y0 = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.001))))
	p.y1 = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, p.y0*10))))
	p.yAxis(logTicks(p.y0, p.y1), func(v float64) string { return ms(v) })
	p.polyline(xs, mx, colRed, 1.2, "3 3")
	p.polyline(xs, p99, colOrange, 2.2, "")
	p.polyline(xs, p50, colBlue, 2.2, "")
	p.xAxis(timeTicks(float64(len(s))), secondsLabel)
}

func histogramChart(b *strings.Builder, r *Report) {
	p := &plot{b: b, w: 660, h: 400, ml: 56, mr: 16, mt: 40, mb: 30, xlog: true}
	p.open()
	defer p.close()
	hs := r.Histogram
	if len(hs) == 0 {
		p.empty("no requests")
		return
	}
	const ratio = 1.7782794100389228 // 10^(1/4): one bucket's width
	var top int64
	for _, h := range hs {
		top = max(top, h.Count)
	}
	ticks := niceTicks(float64(top)*1.1, 4)
	p.x0, p.x1 = hs[0].UpToMs/ratio, hs[len(hs)-1].UpToMs
	p.y0, p.y1 = 0, ticks[len(ticks)-1]
	p.yAxis(ticks, short)
	for _, h := range hs {
		x0, x1 := p.tx(h.UpToMs/ratio), p.tx(h.UpToMs)
		y := p.ty(float64(h.Count))
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s" opacity=".85"><title>≤ %s: %s requests</title></rect>`,
			x0+1, y, math.Max(1, x1-x0-2), p.ty(0)-y, colBlue, html.EscapeString(ms(h.UpToMs)), human(h.Count))
	}
	marks := []struct {
		name  string
		v     float64
		color string
	}{{"p50", r.Latency.P50, colGreen}, {"p99", r.Latency.P99, colOrange}, {"p99.9", r.Latency.P999, colRed}}
	lastX := -100.0
	for _, m := range marks {
		if m.v <= 0 {
			continue
		}
		x := p.tx(math.Min(math.Max(m.v, p.x0), p.x1))
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`, x, x, p.mt-4, p.h-p.mb, m.color)
		ly := p.mt - 22
		if x-lastX < 46 {
			ly += 13 // keep close labels apart
		}
		fmt.Fprintf(b, `<text class="halo" x="%.1f" y="%.1f" text-anchor="middle" style="fill:%s;font-weight:600">%s</text>`, x, ly, m.color, m.name)
		lastX = x
	}
	p.xAxis(logTicks(p.x0, p.x1), func(v float64) string { return ms(v) })
}

func partitionSection(b *strings.Builder, pr *PartitionReport) {
	e := html.EscapeString
	fmt.Fprintf(b, `<div class="card"><h2>Login table partitions</h2><div class="hint">%s login attempts over %.1fs, keyed under each scheme. Azure's scalability target is %s entities/s per partition: a partition above it is throttled.</div>`,
		human(pr.Attempts), pr.Seconds, human(int64(pr.Target)))
	// Bars: mean, hottest (run average) and hottest peak second per scheme,
	// on a log scale with the target as a line.
	hi := pr.Target * 2
	lo := math.Inf(1)
	for _, s := range pr.Schemes {
		hi = math.Max(hi, math.Max(s.PeakRate, s.HottestPeak)*1.5)
		if s.MeanRate > 0 {
			lo = math.Min(lo, s.MeanRate)
		}
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.01))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	rowH := 20.0
	groupH := rowH*3 + 22
	p := &plot{b: b, w: 1100, h: 36 + groupH*float64(len(pr.Schemes)) + 20, ml: 330, mr: 60, mt: 10, mb: 30, xlog: true, x0: lo, x1: hi}
	p.open()
	for _, t := range logTicks(lo, hi) {
		x := p.tx(t)
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, x, x, p.mt, p.h-p.mb, colGrid)
	}
	bars := []struct {
		name  string
		get   func(SchemeReport) float64
		color string
	}{
		{"mean partition, run average", func(s SchemeReport) float64 { return s.MeanRate }, "#93c5fd"},
		{"hottest partition, run average", func(s SchemeReport) float64 { return s.HottestRate }, colBlue},
		{"busiest partition-second", func(s SchemeReport) float64 { return s.PeakRate }, colOrange},
	}
	y := p.mt + 4
	for _, s := range pr.Schemes {
		fmt.Fprintf(b, `<text x="4" y="%.1f" style="font-size:13px;font-weight:650;fill:#111827">%s</text>`, y+12, e(s.Name))
		fmt.Fprintf(b, `<text x="4" y="%.1f">%s partitions</text>`, y+28, human(int64(s.Partitions)))
		for i, bar := range bars {
			v := bar.get(s)
			by := y + float64(i)*rowH
			color := bar.color
			if i == 2 && v > pr.Target {
				color = colRed
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, p.ml-8, by+rowH/2-1, bar.name)
			if v > 0 {
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" fill="%s"/>`, p.ml, by+2, math.Max(2, p.tx(v)-p.ml), rowH-5, color)
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle" style="fill:#111827">%s/s</text>`, math.Max(p.ml, p.tx(v))+6, by+rowH/2-1, short(v))
		}
		y += groupH
	}
	tx := p.tx(pr.Target)
	fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="5 4"/>`, tx, tx, p.mt, p.h-p.mb, colRed)
	fmt.Fprintf(b, `<text class="halo" x="%.1f" y="%.1f" style="fill:%s;font-weight:600">Azure target %s/s</text>`, tx+5, p.mt+10, colRed, short(pr.Target))
	p.xAxis(logTicks(lo, hi), func(v float64) string { return short(v) + "/s" })
	p.close()

	b.WriteString(`<table style="margin-top:10px"><tr><th>scheme</th><th class="n">partitions</th><th class="n">mean/s</th><th class="n">hottest/s</th><th class="n">hottest peak second</th><th class="n">busiest second vs target</th><th>hottest key</th></tr>`)
	for _, s := range pr.Schemes {
		cls := "good"
		if s.PeakVsTarget > 1 {
			cls = "bad"
		} else if s.PeakVsTarget > 0.5 {
			cls = "warn"
		}
		fmt.Fprintf(b, `<tr><td><b>%s</b><br><span style="color:#6b7280;font-size:12px">%s</span></td><td class="n">%s</td><td class="n">%.1f</td><td class="n">%.1f</td><td class="n">%s</td><td class="n %s"><b>%.2f&times;</b></td><td><code>%s</code></td></tr>`,
			e(s.Name), e(s.Description), human(int64(s.Partitions)), s.MeanRate, s.HottestRate, human(int64(s.HottestPeak)), cls, s.PeakVsTarget, e(s.HottestKey))
	}
	b.WriteString("</table></div>\n")
}

func verifySection(b *strings.Builder, v *VerifyReport, verr string) {
	b.WriteString(`<div class="card"><h2>Read-back verification</h2><div class="hint">Every event id of this run, read back through the query API.</div>`)
	if verr != "" {
		fmt.Fprintf(b, `<p class="bad">%s</p>`, html.EscapeString(verr))
	}
	if v == nil {
		b.WriteString("</div>\n")
		return
	}
	cls := func(n int64) string {
		if n > 0 {
			return "bad"
		}
		return "good"
	}
	b.WriteString(`<div class="kpis" style="margin-top:6px;grid-template-columns:repeat(4,1fr)">`)
	fmt.Fprintf(b, `<div class="kpi"><div class="l">accepted</div><div class="v">%s</div><div class="s">of %s sent</div></div>`, human(v.Accepted), human(v.Sent))
	fmt.Fprintf(b, `<div class="kpi"><div class="l">found</div><div class="v">%s</div><div class="s">%s records read</div></div>`, human(v.Found), human(v.Lines))
	fmt.Fprintf(b, `<div class="kpi"><div class="l">lost</div><div class="v %s">%s</div><div class="s">accepted, never found</div></div>`, cls(v.Lost), human(v.Lost))
	fmt.Fprintf(b, `<div class="kpi"><div class="l">duplicated</div><div class="v %s">%s</div><div class="s">%s extra copies</div></div>`, cls(v.Duplicated), human(v.Duplicated), human(v.Copies))
	b.WriteString(`</div><table style="margin-top:12px"><tr><th></th><th class="n">accepted</th><th class="n">found</th><th class="n">lost</th><th class="n">duplicated</th></tr>`)
	for _, part := range []struct {
		n string
		c VerifyCounts
	}{{"logs", v.Logs}, {"logins", v.Logins}} {
		fmt.Fprintf(b, `<tr><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n %s">%s</td><td class="n %s">%s</td></tr>`,
			part.n, human(part.c.Accepted), human(part.c.Found), cls(part.c.Lost), human(part.c.Lost), cls(part.c.Duplicated), human(part.c.Duplicated))
	}
	b.WriteString("</table>")
	if len(v.LostSample) > 0 {
		fmt.Fprintf(b, `<p>lost, e.g. <code>%s</code></p>`, html.EscapeString(strings.Join(v.LostSample, " ")))
	}
	if len(v.Failed) > 0 {
		failed := append([]string(nil), v.Failed...)
		sort.Strings(failed)
		if len(failed) > 5 {
			failed = append(failed[:5], fmt.Sprintf("... and %d more", len(v.Failed)-5))
		}
		fmt.Fprintf(b, `<p class="bad">failed queries: %s</p>`, html.EscapeString(strings.Join(failed, "; ")))
	}
	b.WriteString("</div>\n")
}
