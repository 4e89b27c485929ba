package tablesink

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"ingest/intake/login"
	"ingest/internal/jsonstr"
	"ingest/logline"
	"ingest/shard"
)

func TestAppendRecord(t *testing.T) {
	s := newTestSink(t, nil, DefaultConfig())
	a := &login.Attempt{
		Time: time.Date(2026, 11, 21, 18, 4, 5, 123456700, time.UTC).UnixNano(),
		User: []byte("alice@example.com"), IP: []byte("10.0.0.1"), UA: []byte("curl/8 \"x\""), ID: []byte("01JDQ8"),
		Success: false, HasSuccess: true, Props: []byte(`{"country":"fr","n":1}`),
	}
	key, out, err := s.AppendRecord([]byte("prev\n"), a)
	if err != nil {
		t.Fatal(err)
	}
	if key != s.prefix+"20261121" {
		t.Fatalf("key = %q", key)
	}
	want := `prev
{"pk":"001e","rk":"alice@example.com~8584063226403541240_01JDQ8","s":false,"ip":"10.0.0.1","ua":"curl/8 \"x\"","p":{"country":"fr","n":1}}
`
	if string(out) != want {
		t.Fatalf("record:\n%s\nwant:\n%s", out, want)
	}
	var x jsonstr.Index
	e, err := recordEntity(&x, new(arena), bytes.TrimSpace(out[5:]))
	if err != nil {
		t.Fatal(err)
	}
	back := attemptFromEntity(&e)
	if back.Time != a.Time || string(back.User) != string(a.User) || string(back.IP) != string(a.IP) ||
		string(back.UA) != string(a.UA) || string(back.ID) != string(a.ID) || !back.HasSuccess || back.Success ||
		string(back.Props) != string(a.Props) {
		t.Fatalf("round trip: %+v", back)
	}
	if got := string(AppendAttemptJSON(nil, &back)); got != `{"ts":"2026-11-21T18:04:05.1234567Z","user":"alice@example.com","success":false,"ip":"10.0.0.1","ua":"curl/8 \"x\"","id":"01JDQ8","country":"fr","n":1}` {
		t.Fatalf("AppendAttemptJSON = %s", got)
	}
}

func TestAppendRecordRefuses(t *testing.T) {
	s := newTestSink(t, nil, DefaultConfig())
	ok := func() login.Attempt { return login.Attempt{Time: day0.UnixNano(), User: []byte("u"), ID: []byte("i")} }
	f := func(name, wantErr string, mod func(a *login.Attempt)) {
		t.Helper()
		a := ok()
		mod(&a)
		_, out, err := s.AppendRecord(nil, &a)
		if err == nil || !strings.Contains(err.Error(), wantErr) || len(out) != 0 {
			t.Errorf("%s: err %v, want %q", name, err, wantErr)
		}
	}
	f("past retention", "cannot accept login attempt from 2026-09-21: older than --login-retention-days (60)", func(a *login.Attempt) { a.Time = day0.AddDate(0, 0, -61).UnixNano() })
	f("far future", "more than a day ahead", func(a *login.Attempt) { a.Time = day0.AddDate(0, 0, 2).UnixNano() })
	f("no user", "no user", func(a *login.Attempt) { a.User = nil })
	f("long user", "RowKey over Azure's 1 KiB", func(a *login.Attempt) { a.User = bytes.Repeat([]byte("u"), 600) })
	f("long id", "RowKey over Azure's 1 KiB", func(a *login.Attempt) { a.ID = bytes.Repeat([]byte("/"), 200) })
	f("huge ua", "over 64 KiB", func(a *login.Attempt) { a.UA = bytes.Repeat([]byte("a"), 40<<10) })
	f("props not an object", "not a JSON object", func(a *login.Attempt) { a.Props = []byte(`[1]`) })
	f("props not JSON", "not a JSON object", func(a *login.Attempt) { a.Props = []byte(`{"a":`) })

	for _, d := range []int{-60, 0, 1} { // the edges that are accepted
		a := ok()
		a.Time = day0.AddDate(0, 0, d).UnixNano()
		if _, _, err := s.AppendRecord(nil, &a); err != nil {
			t.Errorf("day %+d: %v", d, err)
		}
	}
}

func TestAppendRecordSaltsHotUser(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Shard.HotRate = 50
	s := newTestSink(t, nil, cfg)
	now := day0
	s.now = func() time.Time { return now }
	pks := map[string]bool{}
	var x jsonstr.Index
	for i := range 2000 { // 2,000 attempts in one second: far above 50/s
		now = day0.Add(time.Duration(i) * 500 * time.Microsecond)
		a := login.Attempt{Time: now.UnixNano(), User: []byte("victim"), ID: []byte{byte('a' + i%26), byte('a' + i/26%26), byte('a' + i/676)}}
		_, out, err := s.AppendRecord(nil, &a)
		if err != nil {
			t.Fatal(err)
		}
		r, err := parseRecord(&x, new(arena), bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("record %q: %v", out, err)
		}
		pks[string(r.pk)] = true
	}
	if want := len(s.keyer.ReadKeys([]byte("victim"))); len(pks) != want {
		t.Fatalf("hot user spread over %d partitions, want %d", len(pks), want)
	}
	for _, k := range s.keyer.ReadKeys([]byte("victim")) {
		delete(pks, k)
	}
	if len(pks) != 0 {
		t.Fatalf("keys outside ReadKeys: %v", pks)
	}
}

func TestAppendRecordAllocs(t *testing.T) {
	s := newTestSink(t, nil, DefaultConfig())
	a := &login.Attempt{Time: day0.UnixNano(), User: []byte("alice@example.com"), IP: []byte("10.0.0.1"), UA: []byte("Mozilla/5.0"), ID: []byte("01JDQ8"), HasSuccess: true, Props: []byte(`{"k":"v"}`)}
	buf := make([]byte, 0, 4096)
	n := testing.AllocsPerRun(1000, func() {
		_, buf, _ = s.AppendRecord(buf[:0], a)
	})
	if n != 0 {
		t.Fatalf("AppendRecord allocates %v times per call", n)
	}
}

func BenchmarkAppendRecord(b *testing.B) {
	s := newTestSink(b, nil, DefaultConfig())
	s.now = time.Now
	a := &login.Attempt{Time: time.Now().UnixNano(), User: []byte("alice@example.com"), IP: []byte("10.0.0.1"), UA: []byte("Mozilla/5.0 (X11; Linux x86_64)"), ID: []byte("01JDQ8XYZ"), HasSuccess: true, Props: []byte(`{"country":"fr"}`)}
	_, rec, _ := s.AppendRecord(nil, a)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 4096)
		for pb.Next() {
			_, buf, _ = s.AppendRecord(buf[:0], a)
		}
	})
}

func FuzzRecordRoundTrip(f *testing.F) {
	f.Add([]byte("alice@example.com"), []byte("10.0.0.1"), []byte("curl"), []byte("id1"), []byte(`{"a":1}`), true)
	f.Add([]byte("a/b#c?\x00~%"), []byte(""), []byte("\"\\\n"), []byte("é/日本"), []byte(""), false)
	s := newTestSink(f, nil, DefaultConfig())
	f.Fuzz(func(t *testing.T, user, ip, ua, id, props []byte, success bool) {
		a := &login.Attempt{Time: day0.UnixNano(), User: user, IP: ip, UA: ua, ID: id, Success: success, HasSuccess: true, Props: props}
		_, out, err := s.AppendRecord(nil, a)
		if err != nil {
			return // refused input is fine; what is accepted must round-trip
		}
		var x jsonstr.Index
		e, err := recordEntity(&x, new(arena), bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("record %q does not parse: %v", out, err)
		}
		if !shard.ValidKey(e.PartitionKey) || !shard.ValidKey(e.RowKey) {
			t.Fatalf("invalid keys %q %q", e.PartitionKey, e.RowKey)
		}
		back := attemptFromEntity(&e)
		valid := func(b []byte) string { // each invalid byte becomes U+FFFD, as in the record
			out, _, _ := logline.UnquoteAppend(nil, logline.AppendQuoted(nil, b))
			return string(out)
		}
		if back.Time != a.Time || string(back.User) != valid(user) || string(back.IP) != valid(ip) || string(back.UA) != valid(ua) ||
			string(back.ID) != valid(id) || back.Success != success {
			t.Fatalf("round trip of %+v gave %+v", a, back)
		}
		u, _, gotID, err := shard.ParseRowKey([]byte(e.RowKey))
		if err != nil || !bytes.Equal(u, user) || !bytes.Equal(gotID, id) {
			t.Fatalf("RowKey %q does not hold user %q and id %q", e.RowKey, user, id)
		}
		if _, err := shard.ParseBucket([]byte(e.PartitionKey)); err != nil {
			t.Fatalf("PartitionKey %q is not a bucket", e.PartitionKey)
		}
	})
}

func FuzzDecodeEntity(f *testing.F) {
	f.Add([]byte(`{"PartitionKey":"a","RowKey":"b","I@odata.type":"Edm.Int64","I":"5","D":1.5,"T@odata.type":"Edm.DateTime","T":"2026-01-01T00:00:00Z","odata.etag":"x"}`))
	f.Add([]byte(`{"X@odata.type":"Edm.Double","X":"NaN","B":true,"N":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p fastjson.Parser
		e, err := decodeEntityJSON(&p, b)
		if err != nil || checkEntity(&e) != nil {
			return
		}
		// What decodes and is storable encodes and decodes to the same.
		again, err := decodeEntityJSON(&p, appendEntityJSON(nil, &e))
		if err != nil || again.PartitionKey != e.PartitionKey || again.RowKey != e.RowKey || len(again.Props) != len(e.Props) {
			t.Fatalf("re-decoding %s: %+v, %v", b, again, err)
		}
	})
}

// TestParseRecordsArena: the entities of a flush share the arena's blocks
// (their strings view them); once the whole flush is parsed, over many
// blocks, every entity still encodes to the JSON it was checked with, and
// its strings are those of its own record.
func TestParseRecordsArena(t *testing.T) {
	s := newTestSink(t, nullStore{}, DefaultConfig())
	key, data := zipfRecords(t, s, 5000) // about 1.6 MiB of JSON: several blocks
	ents, bad := s.parseRecords(key, data)
	if len(ents) != 5000 || len(bad) != 0 {
		t.Fatalf("%d entities and %d dead letters, want 5000 and 0", len(ents), len(bad))
	}
	var x jsonstr.Index
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i := range ents {
		want, err := recordEntity(&x, new(arena), lines[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntityJSON(nil, &Entity{PartitionKey: ents[i].PartitionKey, RowKey: ents[i].RowKey, Props: ents[i].Props}); !bytes.Equal(got, appendEntityJSON(nil, &want)) || !bytes.Equal(got, ents[i].checkedJSON) {
			t.Fatalf("entity %d encodes to\n%s\nwith the JSON\n%s\nwant\n%s", i, got, ents[i].checkedJSON, appendEntityJSON(nil, &want))
		}
	}
}

func TestParseRecord(t *testing.T) {
	var x jsonstr.Index
	f := func(line, wantErr string) record {
		t.Helper()
		r, err := parseRecord(&x, new(arena), []byte(line))
		if wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Fatalf("parseRecord(%s) error %v, want %q", line, err, wantErr)
		}
		return r
	}
	r := f(`{"pk":"001e","rk":"a\"b~1_x","s":true,"ip":"10.0.0.1","ua":"c\\url","p":{ "k" : [1, "v"] },"later":{"n":null}}`, "")
	if string(r.pk) != "001e" || string(r.rk) != `a"b~1_x` || !r.success || !r.hasSuccess || string(r.ua) != `c\url` || string(r.props) != `{"k":[1,"v"]}` {
		t.Fatalf("parseRecord = %+v", r)
	}
	r = f(`{"pk":"0000_u","rk":"x","t":-12,"u":"alice","id":"i"}`, "")
	if r.t != -12 || string(r.user) != "alice" || string(r.id) != "i" || r.hasSuccess {
		t.Fatalf("parseRecord of the first scheme = %+v", r)
	}
	f(`["pk"]`, "want '{'")
	f(`{"pk":1}`, "want a string")
	f(`{"pk":"a","s":"yes"}`, "s is not a boolean")
	f(`{"pk":"a","p":[1]}`, "p is not an object")
	f(`{"pk":"a","t":x}`, "want a number")
	f(`{"pk":"a"} {}`, "want the end of the line")
	f(`{"pk":"a"`, "cannot parse login record")
}
