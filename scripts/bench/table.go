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
	cpuPerM  float64 // server CPU seconds per million events
	rssMiB   float64 // server peak RSS
	p50      float64 // latency, ms
	p99      float64
	p999     float64
	errors   int64
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
	bin    string // the ingest binary
	dir    string // scratch directory, removed at exit
	order  []string
	notes  map[string]string
	rounds []map[string]result
	ratios []ratio
}

// ratio is num's rate over den's, computed within each round.
type ratio struct {
	label    string
	num, den string
	mbps     bool // compare MB/s instead of events/s
}

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

func (b *bench) addRatio(label, num, den string, mbps bool) {
	for _, r := range b.ratios {
		if r.label == label {
			return
		}
	}
	b.ratios = append(b.ratios, ratio{label, num, den, mbps})
}

func brief(r result) string {
	s := fmt.Sprintf("%.0f events/s", r.answered)
	if r.written > 0 {
		s += fmt.Sprintf(", %.0f written/s", r.written)
	}
	if r.mbps > 0 {
		s += fmt.Sprintf(", %.1f MB/s", r.mbps)
	}
	if r.p99 > 0 {
		s += fmt.Sprintf(", p99 %.1f ms", r.p99)
	}
	if r.errors > 0 {
		s += fmt.Sprintf(", %d errors", r.errors)
	}
	return s
}

// print writes the table of medians and the ratios.
func (b *bench) print(w io.Writer) {
	const f = "%-34s %11s %11s %8s %9s %8s %8s %8s %9s %7s\n"
	fmt.Fprintf(w, f, "row", "events/s", "written/s", "MB/s", "CPU-s/M", "RSS MiB", "p50 ms", "p99 ms", "p99.9 ms", "errors")
	for _, name := range b.order {
		var rs []result
		for _, rd := range b.rounds {
			if r, ok := rd[name]; ok {
				rs = append(rs, r)
			}
		}
		col := func(get func(result) float64, format string) string {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = get(r)
			}
			m := median(v)
			if m == 0 {
				return "-"
			}
			return fmt.Sprintf(format, m)
		}
		errs := col(func(r result) float64 { return float64(r.errors) }, "%.0f")
		if errs == "-" {
			errs = "0"
		}
		fmt.Fprintf(w, f, name,
			col(func(r result) float64 { return r.answered }, "%.0f"),
			col(func(r result) float64 { return r.written }, "%.0f"),
			col(func(r result) float64 { return r.mbps }, "%.1f"),
			col(func(r result) float64 { return r.cpuPerM }, "%.2f"),
			col(func(r result) float64 { return r.rssMiB }, "%.0f"),
			col(func(r result) float64 { return r.p50 }, "%.1f"),
			col(func(r result) float64 { return r.p99 }, "%.1f"),
			col(func(r result) float64 { return r.p999 }, "%.1f"),
			errs)
	}
	if len(b.ratios) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "ratios (median of the ratios within each round; rounds in brackets):")
	}
	for _, ra := range b.ratios {
		var v []float64
		for _, rd := range b.rounds {
			n, ok1 := rd[ra.num]
			d, ok2 := rd[ra.den]
			if !ok1 || !ok2 {
				continue
			}
			x, y := n.rate(), d.rate()
			if ra.mbps {
				x, y = n.mbps, d.mbps
			}
			if y > 0 {
				v = append(v, x/y)
			}
		}
		if len(v) == 0 {
			continue
		}
		each := make([]string, len(v))
		for i, x := range v {
			each[i] = fmt.Sprintf("%.2f", x)
		}
		fmt.Fprintf(w, "  %-58s %6.2fx  [%s]\n", ra.label, median(v), strings.Join(each, " "))
	}
	fmt.Fprintln(w)
	for _, name := range b.order {
		if n := b.notes[name]; n != "" {
			fmt.Fprintf(w, "%s: %s\n", name, n)
		}
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
