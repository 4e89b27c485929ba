package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendValue(t *testing.T) {
	f := func(in, want, reason string) {
		t.Helper()
		out, end, r := AppendValue(nil, []byte(in), 0, 0)
		if r != "" || reason != "" {
			if !strings.Contains(r, reason) || reason == "" {
				t.Fatalf("AppendValue(%q): reason %q, want one containing %q", in, r, reason)
			}
			return
		}
		if string(out) != want {
			t.Fatalf("AppendValue(%q) = %q, want %q", in, out, want)
		}
		if rest := in[end:]; strings.TrimSpace(rest) != "" && rest[0] != ',' {
			t.Fatalf("AppendValue(%q) ends at %d, before %q", in, end, rest)
		}
	}
	f(`"a"`, `"a"`, "")
	f(`{ "a" : [ 1 , 2.5e3 , true , null ] , "b" : {} }`, `{"a":[1,2.5e3,true,null],"b":{}}`, "")
	f(`NaN`, `"NaN"`, "")
	f(`-Infinity,`, `"-Infinity"`, "")
	f("\"tab\there \xff\"", `"tab\there �"`, "")
	f(`"\q"`, `"\\q"`, "")
	f(`[1,]`, "", "unexpected ']'")
	f(`{"a" 1}`, "", "want ':'")
	f(`-`, "", "want a number")
	f(`tru`, "", "want a value")
	f(`"open`, "", "not terminated")
	f(strings.Repeat("[", MaxDepth+1), "", "nested deeper than 128")
	f(``, "", "the line ends where a value should be")
}

func TestObjectAndArray(t *testing.T) {
	var x Index
	b := []byte(`{"a":1, "k\u00e9y" : [ "x" ,{"b":null}] ,"c":{}}tail`)
	x.Reset(b)
	var key []byte
	var keys, values []string
	end, reason := x.Object(0, &key, func(k, raw []byte, fl Flags, start, i int) (int, string) {
		keys = append(keys, string(k))
		out, end, r := AppendValue(nil, b, i, 1)
		values = append(values, string(out))
		return end, r
	})
	if reason != "" || string(b[end:]) != "tail" {
		t.Fatalf("Object: end %d, reason %q", end, reason)
	}
	if strings.Join(keys, "|") != "a|kéy|c" || strings.Join(values, "|") != `1|["x",{"b":null}]|{}` {
		t.Fatalf("Object: keys %q values %q", keys, values)
	}
	var elems []int
	arr := []byte(`[ 1, "two" ,{} ]`)
	x.Reset(arr)
	end, reason = x.Array(0, func(i int) (int, string) {
		elems = append(elems, i)
		_, end, r := AppendValue(nil, arr, i, 1)
		return end, r
	})
	if reason != "" || end != len(arr) || len(elems) != 3 {
		t.Fatalf("Array: end %d of %d, reason %q, elements at %v", end, len(arr), reason, elems)
	}
	for _, bad := range []string{`{"a":1,}`, `{"a":1 "b":2}`, `{1:2}`, `{"a"}`, `{"a":`, `{`} {
		x.Reset([]byte(bad))
		if _, reason := x.Object(0, &key, func(_, _ []byte, _ Flags, _, i int) (int, string) {
			_, end, r := AppendValue(nil, []byte(bad), i, 1)
			return end, r
		}); reason == "" {
			t.Errorf("Object(%q) took it", bad)
		}
	}
	for _, bad := range []string{`[1 2]`, `[1,`, `[`} {
		x.Reset([]byte(bad))
		if _, reason := x.Array(0, func(i int) (int, string) {
			_, end, r := AppendValue(nil, []byte(bad), i, 1)
			return end, r
		}); reason == "" {
			t.Errorf("Array(%q) took it", bad)
		}
	}
}

// FuzzValue checks what every decoder relies on: AppendValue writes valid
// JSON or says why not, and a value CompactEnd lets a caller copy is
// exactly what AppendValue would have written.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c"}],"d":null}`, `[1, 2]`, `"x\u00e9\q"`, `NaN`, `-0.5e-3`, "\"\xff\x01\"", `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, end, reason := AppendValue(nil, b, 0, 0)
		if reason != "" {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("AppendValue(%q) = %q, not valid JSON", b, out)
		}
		var x Index
		x.Reset(b)
		if c := x.CompactEnd(0, 0); c >= 0 && (c != end || string(b[:c]) != string(out)) {
			t.Fatalf("CompactEnd(%q) = %d, but AppendValue writes %q and ends at %d", b, c, out, end)
		}
	})
}
