package jsonstr

import "testing"

func TestFrameEnd(t *testing.T) {
	f := func(in string, i, wantEnd int, wantReason string) {
		t.Helper()
		end, reason := FrameEnd([]byte(in), i)
		if end != wantEnd || reason != wantReason {
			t.Errorf("FrameEnd(%q, %d) = %d, %q; want %d, %q", in, i, end, reason, wantEnd, wantReason)
		}
	}
	const open = "not terminated before the end of the body"
	f(`"a\"b",1`, 0, 6, "")
	f(`{"a":"}"},2`, 0, 9, "")
	f(`[1,[2,{"x":"]"}]],3`, 0, 17, "")
	f(`{"a":tru},2`, 0, 9, "") // framed, not checked
	f(`123 ,`, 0, 3, "")
	f(`nul]`, 0, 3, "")
	f(`,1`, 0, 0, "") // an empty element
	f(`{"a":1`, 0, 6, open)
	f(`{"a":"1}`, 0, 5, open)
	f(`"abc`, 0, 4, open)
	f(`[1]`, 3, 3, "the body ends where an element should be")
}
