package httperr

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

func TestStatusOf(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		retry  time.Duration
	}{
		{"nil", nil, 200, 0},
		{"plain", errors.New("x"), 500, 0},
		{"direct", New(413, "big %d", 1), 413, 0},
		{"wrapped", fmt.Errorf("ctx: %w", &Error{Status: 429, Msg: "full", RetryAfter: time.Second}), 429, time.Second},
	}
	for _, tc := range cases {
		if got := StatusOf(tc.err); got != tc.status {
			t.Errorf("%s: StatusOf = %d, want %d", tc.name, got, tc.status)
		}
		if got := RetryAfterOf(tc.err); got != tc.retry {
			t.Errorf("%s: RetryAfterOf = %v, want %v", tc.name, got, tc.retry)
		}
	}
	if e := New(400, "bad %s", "line"); e.Error() != "bad line" {
		t.Errorf("message %q", e.Error())
	}
	if !errors.Is(&Error{Status: 400, Err: io.EOF}, io.EOF) {
		t.Error("Unwrap does not reach the wrapped error")
	}
}
