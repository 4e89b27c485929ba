// Package httperr is the one error type that carries the HTTP status a
// request should be answered with. Packages below the HTTP layer (intake,
// admission, buffer) return an *Error when they know what the client did or
// should do; the HTTP handler turns any error into a response in one place
// (httpapi's writeError), and every error that is not an *Error is a 500.
//
//	return httperr.New(413, "cannot accept the body: it is over --max-body-bytes (%d)", limit)
//
// RetryAfter, when set, becomes the Retry-After header: a 429 or 503 that
// asks the client to come back carries one.
//
// A panic in a goroutine serving one request is recovered into a *Panic
// (panic.go), an error like any other: a 500 for that request, not the
// end of the process.
package httperr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is an error with the HTTP status to answer it with.
type Error struct {
	Status     int           // HTTP status code: 400, 413, 429, 503...
	Msg        string        // the whole message, "cannot <do X>: <why>"
	RetryAfter time.Duration // when > 0, sent as Retry-After (rounded up to seconds)
	Err        error         // what it wraps, for errors.Is; may be nil
}

// Error returns Msg.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with a formatted message.
func New(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// StatusOf returns the HTTP status carried by err: 200 for nil, the status
// of the *Error err is or wraps, else 500.
func StatusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return http.StatusInternalServerError
}

// RetryAfterOf returns how long err asks the client to wait before trying
// again, or 0 when it does not.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
