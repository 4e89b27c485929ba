package loadtest

import (
	"bytes"
	"testing"

	"github.com/valyala/fastjson"
)

// FuzzReadRecords: any answer body is read without panicking, and every id
// handed on is one the body contains.
func FuzzReadRecords(f *testing.F) {
	for _, s := range []string{
		"{\"id\":\"a\"}\n{\"id\":\"b\"}\n",
		`[{"id":"a"},{"RowKey":"1_b"},3]`,
		`{"events":[{"id":"a"}]}`,
		"  \n\t[",
		"{\"id\":\"\\u0061\"}\nnot json\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p fastjson.Parser
		var ids int64
		lines, bad, _ := readRecords(bytes.NewReader(body), &p, func(id []byte) { ids++ })
		if bad > lines || ids > lines || lines < 0 {
			t.Fatalf("lines %d bad %d ids %d", lines, bad, ids)
		}
	})
}

// FuzzParseID: only well-formed ids of the run's streams are counted, and
// parsing never panics or indexes outside the ledger.
func FuzzParseID(f *testing.F) {
	f.Add([]byte("lt1-m000000000003"))
	f.Add([]byte("lt1-a000000000001"))
	f.Add([]byte("lt1-m99999999999x"))
	f.Add([]byte("lt1-"))
	f.Add([]byte("other"))
	l := newLedger("lt1", []sentBatch{
		{stream: streamMain, kind: kindLogs, state: stAccepted, n: 10, seq: 0},
		{stream: streamAttack, kind: kindLogins, state: stUnknown, n: 5, seq: 0},
	})
	f.Fuzz(func(t *testing.T, id []byte) {
		sp, seq, ours := l.parseID(id)
		if !ours && sp != nil {
			t.Fatalf("%q: not ours but resolved", id)
		}
		if sp != nil && (seq < 0 || seq >= sp.size || !sp.sent.has(seq)) {
			t.Fatalf("%q: seq %d outside what was sent", id, seq)
		}
		l.see(id)
	})
}

// FuzzRetryAfter: any header gives a wait within bounds.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1e308", "NaN", "Inf", "Wed, 21 Oct 2015 07:28:00 GMT", ""} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, h string, attempt int) {
		if attempt < 0 {
			attempt = -attempt
		}
		if d := retryAfter([]byte(h), attempt%100); d < 0 || d > 30e9 {
			t.Fatalf("retryAfter(%q) = %v", h, d)
		}
	})
}
