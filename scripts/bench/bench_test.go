package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
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
		"azurite: ingest --storage, draining"} {
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
