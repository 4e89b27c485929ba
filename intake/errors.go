package intake

import (
	"errors"
	"fmt"
	"net/http"
)

// StatusError is an error that carries the HTTP status a handler should
// answer with. Handlers turn it into a response in one place; every other
// error from this package is a bug and deserves a 500.
type StatusError struct {
	Status int    // HTTP status code: 400, 413, 415...
	Msg    string // the whole message, "cannot <do X>: <why>"
}

// Error returns Msg.
func (e *StatusError) Error() string { return e.Msg }

// StatusOf returns the HTTP status carried by err, or 500 when err is not
// (and does not wrap) a *StatusError. It returns 200 for a nil error.
func StatusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return http.StatusInternalServerError
}

func errorf(status int, format string, args ...any) *StatusError {
	return &StatusError{Status: status, Msg: fmt.Sprintf(format, args...)}
}
