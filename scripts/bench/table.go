package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// result is one row of one round. Zero means "not measured" for every
// column but errors.
type result struct {
	answered float64 // events/s answered
	written  float64 // events/s written end to end, where the peer answers first
	mbps     float64 // MB/s (Azurite rows: stored)
	diskMBps float64 // MB/s written to the disk that holds the servers' data
	cpuPerM  float64 // server CPU seconds per million events
	rssMiB   float64 // server peak RSS
	p50      float64 // latency, ms
	p99      float64
	p999     float64
	errors   int64
	stored   float64 // bytes stored (Azurite rows), not shown
}

// rate is what a row compares on: events written end to end where known,
// else answered.
func (r result) rate() float64 {
	if r.written > 0 {
		return r.written
	}
	return r.answered
}

// bench holds the settings and every round's rows.
type bench struct {
	o      options
	bin    string      // the ingest binary
	dir    string      // scratch directory, removed at exit
	mem    string      // scratch in memory for the plain side's load server (memDir), removed at exit
	disk   blockDevice // the disk that holds dir
	order  []string
	notes  map[string]string
	rounds []map[string]result
	ratios []ratio
}

// ratio is num's rate over den's, computed within each round.
type ratio struct {
	label    string
	num, den string
	col      func(result) float64 // what is compared; nil: the rate
}

func mbpsOf(r result) float64     { return r.mbps }
func diskMBpsOf(r result) float64 { return r.diskMBps }
func cpuPerMOf(r result) float64  { return r.cpuPerM }

func (b *bench) add(name, note string, r result) {
	if b.notes == nil {
		b.notes = map[string]string{}
	}
	if _, ok := b.notes[name]; !ok {
		b.order = append(b.order, name)
		b.notes[name] = note
	}
	b.rounds[len(b.rounds)-1][name] = r
	fmt.Fprintf(stderr, "bench:   %-34s %s\n", name, brief(r))
}

// registerRatios sets the ratios the bench prints; one whose rows did not
// run is left out.
func registerRatios(b *bench) {
	b.ratios = []ratio{
		{"ingest --ack wal / Fluent Bit (written end to end)", "lowcost: ingest --ack wal", "lowcost: fluent-bit", nil},
		{"ingest --ack wal / VictoriaLogs (answered)", "lowcost: ingest --ack wal", "lowcost: victoria-logs", nil},
		{"ingest --storage under load / azblob 4 MiB appends under the same load (MB/s)", "azurite: ingest --storage, under load", "azurite: azblob 4 MiB appends, under load", mbpsOf},
		{"ingest --storage draining / azblob 4 MiB appends (MB/s)", "azurite: ingest --storage, draining", "azurite: azblob 4 MiB appends", mbpsOf},
		{"fasthttp read-and-discard / ingest --ack wal (low-cost client)", "limit: fasthttp, read and discard", "lowcost: ingest --ack wal", nil},
		{"memcpy / ingest --ack wal (low-cost client)", "limit: memcpy", "lowcost: ingest --ack wal", nil},
		{"ingest --ack wal's disk writes (low-cost client) / the disk, both at once (MB/s)", "lowcost: ingest --ack wal", diskBothRow, diskMBpsOf},
		{coresRatio, coresRow(2), coresRow(1), cpuPerMOf},
	}
	b.ratios = append(b.ratios, protocolRatios()...)
}

func brief(r result) string {
	var parts []string
	add := func(v float64, format string) {
		if v > 0 {
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	add(r.answered, "%.0f events/s")
	add(r.written, "%.0f written/s")
	add(r.mbps, "%.1f MB/s")
	add(r.diskMBps, "disk %.1f MB/s")
	add(r.p99, "p99 %.1f ms")
	add(float64(r.errors), "%.0f errors")
	return strings.Join(parts, ", ")
}

// print writes the table of medians, the ratios, the targets and the
// rows' notes.
func (b *bench) print(w io.Writer) {
	const f = "%-34s %11s %11s %8s %10s %9s %8s %8s %8s %9s %7s\n"
	fmt.Fprintf(w, f, "row", "events/s", "written/s", "MB/s", "disk MB/s", "CPU-s/M", "RSS MiB", "p50 ms", "p99 ms", "p99.9 ms", "errors")
	cell := func(v float64, format string) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	for _, name := range b.order {
		m := b.medianRow(name)
		fmt.Fprintf(w, f, name, cell(m.answered, "%.0f"), cell(m.written, "%.0f"), cell(m.mbps, "%.1f"), cell(m.diskMBps, "%.1f"), cell(m.cpuPerM, "%.2f"),
			cell(m.rssMiB, "%.0f"), cell(m.p50, "%.1f"), cell(m.p99, "%.1f"), cell(m.p999, "%.1f"), fmt.Sprint(m.errors))
	}
	if len(b.ratios) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "ratios (median of the ratios within each round; rounds in brackets):")
	}
	for _, ra := range b.ratios {
		m, each := b.medianRatio(ra)
		if len(each) == 0 {
			continue
		}
		s := make([]string, len(each))
		for i, x := range each {
			s[i] = fmt.Sprintf("%.2f", x)
		}
		fmt.Fprintf(w, "  %-66s %6.2fx  [%s]\n", ra.label, m, strings.Join(s, " "))
	}
	b.printTargets(w)
	fmt.Fprintln(w)
	for _, name := range b.order {
		if n := b.notes[name]; n != "" {
			fmt.Fprintf(w, "%s: %s\n", name, n)
		}
	}
}

// medianRow is each column's median over the rounds that have the row.
func (b *bench) medianRow(name string) result {
	var rs []result
	for _, rd := range b.rounds {
		if r, ok := rd[name]; ok {
			rs = append(rs, r)
		}
	}
	col := func(get func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return median(v)
	}
	return result{
		answered: col(func(r result) float64 { return r.answered }),
		written:  col(func(r result) float64 { return r.written }),
		mbps:     col(mbpsOf),
		diskMBps: col(diskMBpsOf),
		cpuPerM:  col(cpuPerMOf),
		rssMiB:   col(func(r result) float64 { return r.rssMiB }),
		p50:      col(func(r result) float64 { return r.p50 }),
		p99:      col(func(r result) float64 { return r.p99 }),
		p999:     col(func(r result) float64 { return r.p999 }),
		errors:   int64(col(func(r result) float64 { return float64(r.errors) })),
	}
}

// medianRatio is the median of the ratio taken within each round that has
// both rows, and those ratios.
func (b *bench) medianRatio(ra ratio) (float64, []float64) {
	var v []float64
	for _, rd := range b.rounds {
		n, ok1 := rd[ra.num]
		d, ok2 := rd[ra.den]
		if !ok1 || !ok2 {
			continue
		}
		x, y := n.rate(), d.rate()
		if ra.col != nil {
			x, y = ra.col(n), ra.col(d)
		}
		if y > 0 {
			v = append(v, x/y)
		}
	}
	return median(v), v
}

// coresRatio is the CPU per event of the server at GOMAXPROCS=2 over 1.
const coresRatio = "ingest --ack wal at GOMAXPROCS=2 / 1 (CPU-s per million events)"

// target is one of the performance goals, checked on the medians.
type target struct {
	what string
	got  func(b *bench) (float64, bool) // the measure, and whether it was measured
	want float64
	most bool // want is an upper bound
	unit string
}

var targets = []target{
	{"low-cost client, ingest --ack wal", rowCol("lowcost: ingest --ack wal", func(r result) float64 { return r.answered }), 1.5e6, false, "events/s"},
	{"  ... / Fluent Bit written end to end", ratioOf("ingest --ack wal / Fluent Bit (written end to end)"), 4, false, "x"},
	{"  ... / VictoriaLogs answered", ratioOf("ingest --ack wal / VictoriaLogs (answered)"), 2, false, "x"},
	{"low-cost client, gzip body", rowCol("lowcost: ingest --ack wal, gzip", func(r result) float64 { return r.answered }), 6e5, false, "events/s"},
	{"low-cost client, zstd body", rowCol("lowcost: ingest --ack wal, zstd", func(r result) float64 { return r.answered }), 6e5, false, "events/s"},
	{"load generator --ack wal, CPU per million events", rowCol("loadgen: ingest --ack wal, batch 1000", cpuPerMOf), 1.0, true, "CPU-s"},
	{"load generator --ack memory, CPU per million events", rowCol("loadgen: ingest --ack memory, batch 1000", cpuPerMOf), 0.8, true, "CPU-s"},
	{"open loop at half the maximum, p99", rowCol("openloop: ingest --ack wal, batch 1000", func(r result) float64 { return r.p99 }), 20, true, "ms"},
	{"open loop at half the maximum, p99.9", rowCol("openloop: ingest --ack wal, batch 1000", func(r result) float64 { return r.p999 }), 50, true, "ms"},
	{"scales with cores: CPU per event, 2 procs / 1", ratioOf(coresRatio), 1.1, true, "x"},
	{"Azurite, under load, ingest / raw appends", ratioOf("ingest --storage under load / azblob 4 MiB appends under the same load (MB/s)"), 0.9, false, "x"},
	{"Azurite, draining, ingest / raw appends", ratioOf("ingest --storage draining / azblob 4 MiB appends (MB/s)"), 0.9, false, "x"},
}

func rowCol(name string, get func(result) float64) func(b *bench) (float64, bool) {
	return func(b *bench) (float64, bool) {
		if _, ok := b.notes[name]; !ok {
			return 0, false
		}
		return get(b.medianRow(name)), true
	}
}

func ratioOf(label string) func(b *bench) (float64, bool) {
	return func(b *bench) (float64, bool) {
		for _, ra := range b.ratios {
			if ra.label == label {
				m, each := b.medianRatio(ra)
				return m, len(each) > 0
			}
		}
		return 0, false
	}
}

// verdict says whether got meets want, and by how much it misses.
func verdict(got, want float64, most bool) string {
	if (most && got <= want) || (!most && got >= want) {
		return "met"
	}
	return fmt.Sprintf("NOT met (%.2fx of the target)", got/want)
}

func (b *bench) printTargets(w io.Writer) {
	first := true
	for _, t := range append(targets, protocolTargets()...) {
		got, ok := t.got(b)
		if !ok {
			continue
		}
		if first {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "targets (on the medians):")
			first = false
		}
		bound := ">="
		if t.most {
			bound = "<="
		}
		prec := 2
		if t.unit == "events/s" {
			prec = 0
		}
		fmt.Fprintf(w, "  %-52s %12.*f %-8s (want %s %.*f)  %s\n", t.what, prec, got, t.unit, bound, prec, t.want, verdict(got, t.want, t.most))
	}
}

// median is the middle value (the mean of the two middle ones for an even
// count); 0 for none. It does not reorder v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
