// Command bench measures the whole server and sets it beside the systems
// users would pick instead, on the same machine in the same run. It builds
// ingest and prints one table, each row from a fresh process:
//
//   - low-cost client: 8 connections re-sending one pre-built body of 1,000
//     JSON events (~170 B each, Content-Type application/json) to ingest
//     (--ack wal; plain, gzip and zstd bodies), to Fluent Bit (in_http ->
//     out_file, counted on the lines written) and to VictoriaLogs
//     (/insert/jsonline) when their binaries are given; then the same events
//     as an Elasticsearch bulk body and as a Loki push (protobuf, snappy)
//     to ingest (/v1/es/_bulk, /loki/api/v1/push) and to VictoriaLogs on
//     the same protocol (/insert/elasticsearch/_bulk, /insert/loki/api/v1/push);
//     then as octet-counted RFC 5424 syslog over TCP to ingest
//     (--syslog-tcp) and VictoriaLogs (-syslog.listenAddr.tcp), counted
//     on each server's /metrics until it accepted every message sent;
//   - the load generator (package loadtest, in this process) at each
//     --batches and --acks, closed loop, then open loop at half the maximum
//     --ack wal rate just measured, for latency without coordinated omission;
//   - cores: the closed-loop --ack wal row with the server's GOMAXPROCS at
//     1 and then 2, for the CPU per event a second core costs;
//   - Azurite: ingest --storage, then 4 MiB appends from a plain azblob
//     client, each on a fresh Azurite, as MB/s stored;
//   - physical limits: a bare fasthttp server that reads and discards the
//     same bodies, a memcpy of them, and the disk's durable write rates.
//
// With --runs N every section runs N rounds; a row shows each column's
// median, and a ratio is the median of the ratios taken within each round.
// The peers are never needed: a peer whose path is not given is skipped.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/ingestexec"
)

type options struct {
	duration     time.Duration
	runs         int
	batches      []int
	acks         []string
	eventSize    int
	concurrency  int
	sections     map[string]bool
	fluentBit    string
	victoriaLogs string
	lowEvents    int
	lowConns     int
	openConns    int
	azWriters    int
	serveArgs    []string
}

var allSections = []string{"lowcost", "loadgen", "openloop", "cores", "azurite", "limits"}

func main() {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(failure); ok {
				fmt.Fprintln(os.Stderr, "bench:", f.err)
				os.Exit(1)
			}
			panic(r)
		}
	}()
	var o options
	prebuilt := pflag.String("ingest", "", "use this ingest binary instead of building one from the working tree (to compare versions)")
	discard := pflag.String("discard-server", "", "internal: serve a fasthttp server on this address that discards every body")
	pflag.DurationVar(&o.duration, "duration", 10*time.Second, "load per row and run")
	pflag.IntVar(&o.runs, "runs", 1, "rounds; each row shows the median of its rounds")
	pflag.IntSliceVar(&o.batches, "batches", []int{1000}, "load generator batch sizes (events per request)")
	pflag.StringSliceVar(&o.acks, "acks", []string{"wal", "memory"}, "load generator rows: --ack modes")
	pflag.IntVar(&o.eventSize, "event-size", 60, "load generator mean message bytes (60 gives events of about 250-300 bytes as sent)")
	pflag.IntVar(&o.concurrency, "concurrency", 8, "load generator connections (closed loop)")
	sections := pflag.StringSlice("sections", allSections, "what to run: "+strings.Join(allSections, ","))
	pflag.StringVar(&o.fluentBit, "fluent-bit", "", "path of a fluent-bit binary: adds its row (in_http -> out_file)")
	pflag.StringVar(&o.victoriaLogs, "victoria-logs", "", "path of a victoria-logs binary: adds its row (/insert/jsonline)")
	pflag.IntVar(&o.lowEvents, "lowcost-events", 1000, "events in the low-cost client's body")
	pflag.IntVar(&o.lowConns, "lowcost-conns", 8, "low-cost client connections")
	pflag.IntVar(&o.openConns, "open-conns", 32, "open-loop connections (enough that a slow answer does not hold back the schedule)")
	pflag.IntVar(&o.azWriters, "azurite-writers", 4, "blobs the plain azblob client appends to at once")
	pflag.StringArrayVar(&o.serveArgs, "serve-arg", nil, "one more argument for every ingest serve (repeat it: --serve-arg=--flush-bytes --serve-arg=16MiB)")
	pflag.Parse()
	if *discard != "" {
		serveDiscard(*discard)
		return
	}
	o.sections = map[string]bool{}
	for _, s := range *sections {
		o.sections[s] = true
	}
	check(checkPeer("--fluent-bit", o.fluentBit))
	check(checkPeer("--victoria-logs", o.victoriaLogs))

	dir, err := os.MkdirTemp("", "ingest-bench-")
	check(err)
	defer os.RemoveAll(dir)
	mem := dir
	if o.sections["azurite"] {
		mem = memDir(dir)
		defer os.RemoveAll(mem)
	}
	removeOnSignal(dir, mem)
	bin := *prebuilt
	if bin == "" {
		bin, err = ingestexec.Build(dir, false)
		check(err)
	} else {
		check(checkPeer("--ingest", bin))
	}
	b := &bench{o: o, bin: bin, dir: dir, mem: mem, disk: deviceHolding(dir)}
	registerRatios(b)
	b.header()
	for round := range o.runs {
		fmt.Fprintf(os.Stderr, "bench: round %d of %d\n", round+1, o.runs)
		b.round()
	}
	b.print(os.Stdout)
}

// serve starts ingest with env added to its environment, args and the
// --serve-arg arguments.
func (b *bench) serve(env []string, args ...string) (*ingestexec.Process, error) {
	return ingestexec.ServeEnv(b.bin, 0, os.Stderr, env, append(args, b.o.serveArgs...)...)
}

// serveFresh starts ingest serve on a data directory of its own with
// warnings only, plus args; cleanup kills it and removes the directory.
func (b *bench) serveFresh(args ...string) (srv *ingestexec.Process, cleanup func()) {
	return b.serveFreshIn(b.dir, nil, args...)
}

// serveFreshIn is serveFresh with the data directory made in dir and env
// added to the server's environment.
func (b *bench) serveFreshIn(dir string, env []string, args ...string) (srv *ingestexec.Process, cleanup func()) {
	data, err := os.MkdirTemp(dir, "data-")
	check(err)
	srv, err = b.serve(env, append([]string{"--data-dir", data, "--log-level", "warn"}, args...)...)
	if err != nil {
		os.RemoveAll(data)
		check(err)
	}
	return srv, func() {
		srv.Kill()
		os.RemoveAll(data)
	}
}

func checkPeer(flag, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot use %s %s: %v", flag, path, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("cannot use %s %s: not an executable file", flag, path)
	}
	return nil
}

func (b *bench) header() {
	load, _ := os.ReadFile("/proc/loadavg")
	if len(b.o.serveArgs) > 0 {
		fmt.Printf("every ingest serve with: %s\n", strings.Join(b.o.serveArgs, " "))
	}
	fmt.Printf("ingest bench: %d CPUs, load average %s, clients in the same machine, %s per row, median of %d rounds\n",
		ingestexec.MachineCPUs(), strings.Join(strings.Fields(string(load))[:3], " "), b.o.duration, b.o.runs)
	for _, p := range []struct{ name, path, arg string }{{"fluent-bit", b.o.fluentBit, "--version"}, {"victoria-logs", b.o.victoriaLogs, "-version"}} {
		if p.path != "" {
			fmt.Printf("%s: %s (%s)\n", p.name, peerVersion(p.path, p.arg), filepath.Clean(p.path))
		}
	}
	fmt.Println()
}

// round runs every selected section once.
func (b *bench) round() {
	b.rounds = append(b.rounds, map[string]result{})
	if b.o.sections["lowcost"] {
		b.guard("lowcost", b.lowCost)
	}
	if b.o.sections["loadgen"] || b.o.sections["openloop"] {
		b.guard("loadgen", b.loadGen)
	}
	if b.o.sections["cores"] {
		b.guard("cores", b.cores)
	}
	if b.o.sections["azurite"] {
		b.guard("azurite", b.azurite)
	}
	if b.o.sections["limits"] {
		b.guard("limits", b.limits)
	}
}

// removeOnSignal removes dirs when the bench is interrupted (Ctrl-C) or
// terminated, before it exits: a scratch directory in memory left behind
// would hold its gigabyte until the machine restarts. The servers it
// started get the same Ctrl-C from the terminal.
func removeOnSignal(dirs ...string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		for _, d := range dirs {
			os.RemoveAll(d)
		}
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
}

// check stops on an error: the section running is given up (guard), or
// the whole bench outside a section.
func check(err error) {
	if err != nil {
		panic(failure{err})
	}
}

type failure struct{ err error }

// guard runs one section of a round; a failure there is reported and the
// bench goes on with the next section, so one bad row does not cost the
// rounds already measured. The section's processes are stopped by its
// deferred calls as the failure unwinds.
func (b *bench) guard(section string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			fmt.Fprintf(os.Stderr, "bench: section %s failed, going on without it: %v\n", section, f.err)
		}
	}()
	fn()
}
