package main

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/encoding/protowire"
)

// The shippers' protocols: the low-cost client's events as an
// Elasticsearch bulk body and as a Loki push (and as syslog over TCP, in
// syslog.go), to ingest and to VictoriaLogs on the same protocol, in the
// same round as ingest's own NDJSON row.

// bulkBody is evs as an Elasticsearch bulk body: a create action, then the
// event under the names Filebeat and Logstash give them.
func bulkBody(evs []lowEvent) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, `{"create":{"_index":"logs"}}`+"\n"+`{"@timestamp":"%s","service":"%s","host":"%s","level":"%s","message":"%s"}`+"\n",
			e.ts.Format("2006-01-02T15:04:05.000000Z"), e.service, e.host, e.level, e.msg)
	}
	return b.Bytes()
}

// lokiBody is evs as Promtail pushes them: a PushRequest with one stream
// per label set {host, level, service_name}, protobuf, snappy-compressed.
func lokiBody(evs []lowEvent) []byte {
	streams := map[string][]byte{}
	for _, e := range evs {
		labels := fmt.Sprintf(`{host=%q, level=%q, service_name=%q}`, e.host, e.level, e.service)
		var ts, entry []byte
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.ts.Unix()))
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.ts.Nanosecond()))
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendBytes(entry, ts)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendString(entry, e.msg)
		s := streams[labels]
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		streams[labels] = protowire.AppendBytes(s, entry)
	}
	names := make([]string, 0, len(streams))
	for l := range streams {
		names = append(names, l)
	}
	sort.Strings(names)
	var req []byte
	for _, l := range names {
		var s []byte
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendString(s, l)
		s = append(s, streams[l]...)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, s)
	}
	return s2.EncodeSnappy(nil, req)
}

// protocol is one shipper protocol's load: the body, where each server
// takes it, and how ingest says it stored every event.
type protocol struct {
	name, ctype string
	body        []byte
	ingestPath  string
	victoria    string // VictoriaLogs' path and query
	stored      func(status int, answer []byte) bool
}

// bulkFilter is the filter_path Filebeat and Logstash send with every bulk
// request: the answer keeps each item's status (and error), not its
// _index, _id, _version and result.
const bulkFilter = "filter_path=errors,items.*.error,items.*.status"

func protocols(evs []lowEvent) []protocol {
	return []protocol{
		{name: "_bulk", ctype: "application/x-ndjson", body: bulkBody(evs), ingestPath: "/v1/es/_bulk?" + bulkFilter,
			victoria: "/insert/elasticsearch/_bulk?_stream_fields=service,host&_msg_field=message&_time_field=@timestamp&" + bulkFilter,
			stored: func(status int, a []byte) bool {
				return status == http.StatusOK && bytes.Contains(a, []byte(`"errors":false`))
			}},
		{name: "loki protobuf", ctype: "application/x-protobuf", body: lokiBody(evs), ingestPath: "/loki/api/v1/push",
			victoria: "/insert/loki/api/v1/push",
			stored:   func(status int, _ []byte) bool { return status == http.StatusNoContent }},
	}
}

// protocolRows runs each protocol's load against ingest and, when given,
// VictoriaLogs.
func (b *bench) protocolRows(evs []lowEvent) {
	for _, p := range protocols(evs) {
		per := fmt.Sprintf("%d conns x %d events, %d B/event, %s", b.o.lowConns, len(evs), len(p.body)/len(evs), p.ctype)
		l := load{body: p.body, ctype: p.ctype, events: len(evs), conns: b.o.lowConns, duration: b.o.duration}
		b.add("lowcost: ingest "+p.name, per+", "+p.ingestPath+", answered after fsync", b.protocolIngest(l, p))
		if b.o.victoriaLogs != "" {
			b.add("lowcost: victoria-logs "+p.name, p.victoria+"; answers once rows are in its memory buffers, no fsync", b.victoriaRowAt(l, p.victoria))
		}
	}
}

func (b *bench) protocolIngest(l load, p protocol) result {
	srv, cleanup := b.serveFresh("--ack", "wal")
	defer cleanup()
	l.addr = srv.URL[len("http://"):]
	l.uri = srv.URL + p.ingestPath
	out, res := measure(l, srv.Cmd.Process.Pid, b.disk)
	if res.ok > 0 && !p.stored(res.firstStatus, res.firstBody) {
		check(fmt.Errorf("ingest did not store every event of the %s body: %d %s", p.name, res.firstStatus, res.firstBody))
	}
	_, err := srv.Stop(time.Minute)
	check(err)
	return out
}

// protocolRatios are the shippers' protocols' ratios: to ingest's own
// NDJSON row and to VictoriaLogs on the same protocol.
func protocolRatios() []ratio {
	var out []ratio
	for _, name := range []string{"_bulk", "loki protobuf"} {
		out = append(out,
			ratio{"ingest " + name + " / ingest NDJSON (answered)", "lowcost: ingest " + name, "lowcost: ingest --ack wal", nil},
			ratio{"ingest " + name + " / VictoriaLogs " + name + " (answered)", "lowcost: ingest " + name, "lowcost: victoria-logs " + name, nil})
	}
	return append(out,
		ratio{syslogNDJSON, "lowcost: ingest syslog tcp", "lowcost: ingest --ack wal", nil},
		ratio{"ingest syslog tcp / VictoriaLogs syslog tcp (accepted)", "lowcost: ingest syslog tcp", "lowcost: victoria-logs syslog tcp", nil},
		ratio{"ingest syslog udp / VictoriaLogs syslog udp (accepted)", "lowcost: ingest syslog udp", "lowcost: victoria-logs syslog udp", nil})
}

// syslogNDJSON compares syslog's accepted events/s with the NDJSON row's
// answered ones: syslog has no answer.
const syslogNDJSON = "ingest syslog tcp / ingest NDJSON (accepted / answered)"

// protocolTargets are the shippers' protocols' goals.
func protocolTargets() []target {
	var out []target
	for _, name := range []string{"_bulk", "loki protobuf"} {
		out = append(out,
			target{"ingest " + name + " / ingest NDJSON", ratioOf("ingest " + name + " / ingest NDJSON (answered)"), 0.9, false, "x"},
			target{"ingest " + name + " / VictoriaLogs " + name, ratioOf("ingest " + name + " / VictoriaLogs " + name + " (answered)"), 2, false, "x"})
	}
	return append(out, target{"ingest syslog tcp / ingest NDJSON", ratioOf(syslogNDJSON), 0.8, false, "x"})
}
