package httperr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func index(s []int, i int) int { return s[i] }

func TestRecover(t *testing.T) {
	run := func(f func()) (err error) {
		defer Recover(&err)
		f()
		return nil
	}
	for _, c := range []struct {
		name, value, site string
		f                 func()
	}{
		{"explicit", "boom", "TestRecover.func", func() { panic("boom") }},
		{"runtime", "index out of range [3] with length 1", "httperr.index", func() { index([]int{1}, 3) }},
	} {
		err := run(c.f)
		e, ok := PanicOf(fmt.Errorf("wrapped: %w", err))
		if !ok {
			t.Fatalf("%s: %v is no *Panic", c.name, err)
		}
		if !strings.Contains(e.Error(), c.value) || !strings.HasPrefix(e.Error(), "internal error: ") {
			t.Errorf("%s: message %q", c.name, e.Error())
		}
		if !strings.Contains(e.Site, c.site) || !strings.Contains(e.Site, "panic_test.go:") {
			t.Errorf("%s: site %q, want the frame in %s", c.name, e.Site, c.site)
		}
		if !strings.Contains(string(e.Stack), "panic_test.go") {
			t.Errorf("%s: the stack does not show the panicking frame:\n%s", c.name, e.Stack)
		}
	}
	if err := run(func() {}); err != nil {
		t.Fatalf("no panic: %v", err)
	}
	if _, ok := PanicOf(errors.New("plain")); ok {
		t.Fatal("a plain error is taken for a panic")
	}
}
