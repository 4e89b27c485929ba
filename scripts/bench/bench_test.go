package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"ingest/intake/syslog"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 9}, 2},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input: %v", in)
			}
		}
	}
}

func TestLowCostBody(t *testing.T) {
	b := lowCostBody(1000, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != 1000 {
		t.Fatalf("%d lines, want 1000", len(lines))
	}
	if per := len(b) / 1000; per < 150 || per > 190 {
		t.Errorf("%d bytes per event, want about 170", per)
	}
	for i, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i+1, err, l)
		}
		for _, k := range []string{"ts", "service", "host", "level", "msg"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("line %d has no %q: %s", i+1, k, l)
			}
		}
	}
}

func TestRatioUsesWrittenWhereKnown(t *testing.T) {
	if got := (result{answered: 10, written: 4}).rate(); got != 4 {
		t.Errorf("rate = %v, want the written rate 4", got)
	}
	if got := (result{answered: 10}).rate(); got != 10 {
		t.Errorf("rate = %v, want the answered rate 10", got)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		got, want float64
		most      bool
		met       bool
	}{
		{1.6e6, 1.5e6, false, true},
		{1.5e6, 1.5e6, false, true},
		{1.2e6, 1.5e6, false, false},
		{0.9, 1.0, true, true},
		{1.2, 1.0, true, false},
	} {
		if v := verdict(c.got, c.want, c.most); (v == "met") != c.met {
			t.Errorf("verdict(%v, %v, most=%v) = %q", c.got, c.want, c.most, v)
		}
	}
}

func TestTargetsNameRowsAndRatiosTheBenchMakes(t *testing.T) {
	// Every target reads a row or ratio by name: a renamed row would
	// silently drop its target from the summary.
	b := &bench{o: options{batches: []int{1000}, lowEvents: 1000, lowConns: 8, fluentBit: "fb", victoriaLogs: "vl"}}
	b.rounds = []map[string]result{{}}
	full := result{answered: 1, written: 1, mbps: 1, cpuPerM: 1, p99: 1, p999: 1}
	for _, name := range []string{"lowcost: ingest --ack wal", "lowcost: ingest --ack wal, gzip", "lowcost: ingest --ack wal, zstd",
		"lowcost: fluent-bit", "lowcost: victoria-logs", "loadgen: ingest --ack wal, batch 1000", "loadgen: ingest --ack memory, batch 1000",
		"openloop: ingest --ack wal, batch 1000", "azurite: azblob 4 MiB appends", "azurite: azblob 4 MiB appends, under load", "azurite: ingest --storage, under load",
		"azurite: ingest --storage, draining", coresRow(1), coresRow(2)} {
		b.rounds[0][name] = full
		if b.notes == nil {
			b.notes = map[string]string{}
		}
		b.notes[name] = ""
	}
	registerRatios(b)
	for _, tg := range targets {
		if _, ok := tg.got(b); !ok {
			t.Errorf("target %q finds no row or ratio", tg.what)
		}
	}
}

func TestGuardGoesOnAfterAFailedSection(t *testing.T) {
	b := &bench{}
	ran := false
	b.guard("first", func() { check(errors.New("peer did not start")) })
	b.guard("second", func() { ran = true })
	if !ran {
		t.Fatal("the section after a failed one did not run")
	}
	defer func() {
		if r := recover(); r != "bug" {
			t.Fatalf("recovered %v, want the programming error passed on", r)
		}
	}()
	b.guard("third", func() { panic("bug") })
}

func TestSectorsWritten(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		// reads, merges, sectors, ms; writes, merges, sectors, ms; ...
		{"  139456     8766 11062434   57012 23022735  1402831 11198843488 21440183        0 ...", 11198843488, true},
		{"1 2 3 4 5 6 7", 7, true},
		{"1 2 3 4 5 6", 0, false},
		{"1 2 3 4 5 6 many", 0, false},
		{"", 0, false},
	} {
		got, ok := sectorsWritten(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("sectorsWritten(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDeviceCountsTheWritesToIt(t *testing.T) {
	dir := t.TempDir()
	dev := deviceHolding(dir)
	if dev.stat == "" {
		t.Skipf("%s is on no block device (tmpfs, overlay): the bench leaves the disk column empty there", dir)
	}
	before := dev.written()
	if _, err := diskRate(dir, 50*time.Millisecond, newOverwriter); err != nil {
		t.Fatal(err)
	}
	// The file is filled and synced first, then overwritten.
	if got := dev.written() - before; got < overwriteFile {
		t.Errorf("the device counts %.0f bytes written, want at least the %d synced", got, overwriteFile)
	}
}

func TestDiskRatesLeaveNothing(t *testing.T) {
	for name, kinds := range map[string][]func(string) (*diskWriter, error){
		"append": {newAppender}, "overwrite": {newOverwriter}, "both": {newAppender, newOverwriter},
	} {
		dir := t.TempDir()
		r, err := diskRate(dir, 50*time.Millisecond, kinds...)
		if err != nil {
			t.Fatal(err)
		}
		if r.diskMBps <= 0 {
			t.Errorf("%s: diskMBps = %v, want > 0", name, r.diskMBps)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: %d files left behind", name, len(left))
		}
	}
}

func TestDiskRateKeepsWritersToEqualBytes(t *testing.T) {
	var steps [2]int
	writer := func(i int, size int64) func(string) (*diskWriter, error) {
		return func(dir string) (*diskWriter, error) {
			f, err := os.CreateTemp(dir, "w-")
			return &diskWriter{f: f, size: size, step: func() error { steps[i]++; return nil }}, err
		}
	}
	if _, err := diskRate(t.TempDir(), 20*time.Millisecond, writer(0, appendSize), writer(1, overwriteSize)); err != nil {
		t.Fatal(err)
	}
	big, small := int64(steps[0])*appendSize, int64(steps[1])*overwriteSize
	if steps[0] < 10 || big-small > appendSize || small-big > appendSize {
		t.Errorf("%d steps of %d B and %d of %d B: want many, within %d B of each other", steps[0], appendSize, steps[1], overwriteSize, appendSize)
	}
}

func TestDiskRateStopsAtAWriterError(t *testing.T) {
	failing := func(dir string) (*diskWriter, error) {
		f, err := os.CreateTemp(dir, "w-")
		return &diskWriter{f: f, size: 1, step: func() error { return errors.New("disk full") }}, err
	}
	// An hour: were the error not to stop the others, the test would time out.
	if _, err := diskRate(t.TempDir(), time.Hour, newAppender, failing); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v, want the writer's error, at once", err)
	}
}

func TestRatioComparesItsColumn(t *testing.T) {
	b := &bench{rounds: []map[string]result{
		{"a": {answered: 10, mbps: 300}, "b": {answered: 40, mbps: 400}},
		{"a": {answered: 10, mbps: 200}, "b": {answered: 20, mbps: 400}},
	}}
	if m, each := b.medianRatio(ratio{num: "a", den: "b", col: mbpsOf}); m != 0.625 || len(each) != 2 {
		t.Errorf("MB/s ratio = %v %v, want the median 0.625 of 0.75 and 0.5", m, each)
	}
	if m, _ := b.medianRatio(ratio{num: "a", den: "b"}); m != 0.375 {
		t.Errorf("rate ratio = %v, want the median 0.375 of 0.25 and 0.5", m)
	}
}

func TestBriefShowsWhatWasMeasured(t *testing.T) {
	for _, c := range []struct {
		r    result
		want string
	}{
		{result{answered: 1200, diskMBps: 500.25, p99: 20}, "1200 events/s, disk 500.2 MB/s, p99 20.0 ms"},
		{result{diskMBps: 900}, "disk 900.0 MB/s"},
		{result{answered: 10, written: 8, mbps: 1.5, errors: 2}, "10 events/s, 8 written/s, 1.5 MB/s, 2 errors"},
	} {
		if got := brief(c.r); got != c.want {
			t.Errorf("brief(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

// TestProtocolBodies: the bulk and Loki bodies carry the low-cost events,
// each once, in the protocol's shape.
func TestProtocolBodies(t *testing.T) {
	evs := lowCostEvents(1000, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	bulk := bulkBody(evs)
	lines := bytes.Split(bytes.TrimSuffix(bulk, []byte("\n")), []byte("\n"))
	if len(lines) != 2000 || string(lines[0]) != `{"create":{"_index":"logs"}}` || !bytes.Contains(lines[1], []byte(`"message":"`+evs[0].msg+`"`)) {
		t.Fatalf("bulk body: %d lines, first %s %s", len(lines), lines[0], lines[1])
	}
	raw, err := s2.Decode(nil, lokiBody(evs))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if bytes.Count(raw, []byte(e.msg)) != 1 {
			t.Fatalf("the Loki push holds %q %d times, want once", e.msg, bytes.Count(raw, []byte(e.msg)))
		}
	}
	if n := bytes.Count(raw, []byte("service_name=")); n != 24 {
		t.Errorf("%d streams, want 24 (8 services x 24 hosts x 6 levels of the events)", n)
	}
}

// TestSyslogBody: ingest's own framer and parser read the syslog body back
// into the low-cost events, each once, in order.
func TestSyslogBody(t *testing.T) {
	evs := lowCostEvents(1000, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	body := syslogBody(evs)
	f := syslog.Framer{Max: 64 << 10}
	var p syslog.Parser
	i := 0
	for len(body) > 0 {
		msg, used, err := f.Next(body)
		if err != nil || used == 0 {
			t.Fatalf("message %d: cannot frame it (used %d): %v", i+1, used, err)
		}
		body = body[used:]
		ev, err := p.Parse(msg, 0)
		if err != nil {
			t.Fatalf("message %d: %v: %s", i+1, err, msg)
		}
		e := evs[i]
		if string(ev.Service) != e.service || string(ev.Host) != e.host || ev.Level.String() != e.level ||
			string(ev.Message) != e.msg || ev.Time != e.ts.UnixNano() {
			t.Fatalf("message %d read as %s/%s/%s/%d %q, want %s/%s/%s/%d %q", i+1, ev.Service, ev.Host, ev.Level, ev.Time, ev.Message,
				e.service, e.host, e.level, e.ts.UnixNano(), e.msg)
		}
		i++
	}
	if i != len(evs) {
		t.Fatalf("%d messages, want %d", i, len(evs))
	}
}

// TestProtocolTargetsNameTheirRatios: a renamed protocol row or ratio
// would silently drop its target from the summary.
func TestProtocolTargetsNameTheirRatios(t *testing.T) {
	b := &bench{rounds: []map[string]result{{}}, notes: map[string]string{}}
	for _, name := range []string{"lowcost: ingest --ack wal", "lowcost: ingest _bulk", "lowcost: victoria-logs _bulk",
		"lowcost: ingest loki protobuf", "lowcost: victoria-logs loki protobuf", "lowcost: ingest syslog tcp"} {
		b.rounds[0][name], b.notes[name] = result{answered: 1}, ""
	}
	registerRatios(b)
	for _, tg := range protocolTargets() {
		if _, ok := tg.got(b); !ok {
			t.Errorf("target %q finds no ratio", tg.what)
		}
	}
}
