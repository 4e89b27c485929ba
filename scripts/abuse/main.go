// Command abuse measures what abuse costs the server, section by section,
// each against a fresh `ingest serve` with its default limits on 127.0.0.1
// (built here, or --binary), and prints what a client saw and the server's
// peak RSS (VmHWM). Bounded in time; it stops by itself.
//
//	connections  stalled uploads that declare 16 MiB and send 300 KB,
//	             slowloris connections (from several loopback addresses, so
//	             --max-conns-per-ip does not simply refuse them) and header
//	             floods past --max-header-bytes, at once, while a normal
//	             client posts small batches: its statuses and latency
//	             percentiles, the abusive connections the server held.
//	(memory)     one section per memory attack of memory.go (text, gzip,
//	             otlp, otlp-json, zstd-bombs, services, hostile): small
//	             requests that cost the server far more than they weigh, sent
//	             once, then by 24 clients at once, each against a fresh server.
//	(replays)    crashes, tokens, defaults, tail-readers (replay.go): the
//	             attacks the suite tests inside the process, against the
//	             binary, one PASS/FAIL line per attack.
//
// --sections picks some, comma separated (default: all). It exits 1 when a
// section fails: the normal client got anything but 202, a server's peak
// RSS passed --max-rss, or a replayed attack failed.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/ingestexec"
)

// options are the command's flags.
type options struct {
	sections                                    []string
	binary                                      string
	maxRSS                                      int64
	duration                                    time.Duration
	stalled, loris, lorisIPs, floods, floodRate int
	batch                                       int
	maxRequestCPU                               time.Duration
	tailReaders                                 int
}

// section is one named part of the run: it returns false when it failed.
type section struct {
	name, what string
	run        func(r *runner) bool
}

// sections is every section, in run order: the connection abuse, one per
// memory attack, then the attacks judged one by one (replay.go).
func sections() []section {
	all := []section{{"connections", "stalled uploads, slowloris and header floods while a normal client posts", runConnections}}
	for _, a := range memoryAttacks {
		all = append(all, section{a.name, a.what, func(r *runner) bool { return r.runMemory(a) }})
	}
	for _, rp := range replays {
		all = append(all, section{rp.name, rp.what, func(r *runner) bool { return r.runReplay(rp) }})
	}
	return all
}

func parseOptions() options {
	var o options
	names := []string{}
	for _, s := range sections() {
		names = append(names, s.name)
	}
	pflag.StringSliceVar(&o.sections, "sections", names, "sections to run, comma separated: "+strings.Join(names, ", "))
	pflag.StringVar(&o.binary, "binary", "", "an ingest executable to run instead of building this tree's (to measure another version)")
	pflag.Int64Var(&o.maxRSS, "max-rss", maxPeakRSS, "peak RSS a server may reach in a memory section, in bytes, before the section fails")
	pflag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the normal client posts under connection abuse")
	pflag.IntVar(&o.stalled, "stalled", 8, "uploads that declare 16 MiB, send 300 KB and stall")
	pflag.IntVar(&o.loris, "slowloris", 2000, "slowloris connections")
	pflag.IntVar(&o.lorisIPs, "slowloris-ips", 8, "loopback source addresses the slowloris connections come from (127.0.1.1 ...)")
	pflag.IntVar(&o.floods, "floods", 8, "connections flooding headers, each reconnecting when refused")
	pflag.IntVar(&o.floodRate, "flood-rate", 500, "header floods per second, all flooding connections together (0: as fast as they go)")
	pflag.IntVar(&o.batch, "batch", 10, "events per normal request")
	pflag.DurationVar(&o.maxRequestCPU, "max-request-cpu", 2*time.Second, "CPU time a server may spend on one far-range query of the crashes section before it fails")
	pflag.IntVar(&o.tailReaders, "tail-readers", 100, "tail readers that never read, in the tail-readers section (--duration long)")
	pflag.Parse()
	for _, n := range o.sections {
		if !slices.Contains(names, n) {
			check(fmt.Errorf("no section %q; the sections are %s", n, strings.Join(names, ", ")))
		}
	}
	return o
}

func main() {
	o := parseOptions()
	dir, err := os.MkdirTemp("", "ingest-abuse-")
	check(err)
	defer os.RemoveAll(dir)
	bin := o.binary
	if bin == "" {
		bin, err = ingestexec.Build(dir, false)
		check(err)
	}
	r := &runner{o: o, bin: bin, dir: dir}
	ok := true
	for _, s := range sections() {
		if !slices.Contains(o.sections, s.name) {
			continue
		}
		fmt.Printf("== %s: %s\n", s.name, s.what)
		if !s.run(r) {
			ok = false
		}
	}
	if !ok {
		os.Exit(1)
	}
}

// runner is what every section runs with.
type runner struct {
	o       options
	bin     string
	dir     string
	servers int
	// report, when set, takes the verdicts of the replayed attacks instead
	// of standard output.
	report func(verdict)
}

// serve starts a fresh server with its default limits and its data in a
// directory of its own, its standard error copied to this command's.
func (r *runner) serve(args ...string) *ingestexec.Process {
	p, err := r.start(os.Stderr, args...)
	check(err)
	return p
}

// start is serve returning the error (a build that does not know a flag,
// or refuses its configuration) instead of ending the command, and copying
// the server's standard error to tee only when it is not nil.
func (r *runner) start(tee *os.File, args ...string) (*ingestexec.Process, error) {
	r.servers++
	data := filepath.Join(r.dir, fmt.Sprintf("data-%d", r.servers))
	return ingestexec.Serve(r.bin, 0, tee, append([]string{"--data-dir", data, "--log-level", "error"}, args...)...)
}

// peakRSS is the server's VmHWM, the resident set's high-water mark.
func peakRSS(p *ingestexec.Process) int64 {
	v, ok := p.Status("VmHWM")
	if !ok {
		check(fmt.Errorf("cannot read the peak RSS of process %d", p.Cmd.Process.Pid))
	}
	return v
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}
