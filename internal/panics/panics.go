// Package panics turns a panic in a goroutine that serves one request into
// an error, so that a bug a request reaches ends that request, not the
// process: fasthttp recovers nothing, and a panic in any goroutine (a
// handler, a response body writer, a query's read-ahead) exits the process.
//
//	go func() {
//		defer panics.Recover(&errs[i])
//		errs[i] = work()
//	}()
//
// The Error keeps the stack of the goroutine that panicked and the place
// (function, file and line) the panic came from, so that a caller can log
// each place once instead of once per request.
package panics

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Error is a recovered panic.
type Error struct {
	Value any    // what was passed to panic
	Site  string // "function file:line" of the frame that panicked
	Stack []byte // the panicking goroutine's stack
}

// Error says an internal error happened, with the panic's value.
func (e *Error) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// From makes an Error of p, a value recover returned. Call it from the
// deferred function that recovered: the stack is then still the
// panicking goroutine's.
func From(p any) *Error {
	return &Error{Value: p, Site: site(), Stack: debug.Stack()}
}

// Recover, deferred, recovers a panic and stores it in *err as an *Error.
// It must be the deferred call itself (defer panics.Recover(&err)), since
// recover only stops a panic when called directly by a deferred function.
func Recover(err *error) {
	if p := recover(); p != nil {
		*err = From(p)
	}
}

// As returns the *Error err is or wraps.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// site finds the frame that panicked: the first one below runtime.gopanic
// that is not the runtime's own (a nil dereference or an index out of range
// panics inside the runtime on the caller's behalf).
func site() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	inPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			inPanic = true
		case inPanic && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s %s:%d", f.Function, f.File, f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}
