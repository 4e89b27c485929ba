package httperr

// A panic in a goroutine that serves one request becomes an error, so that
// a bug a request reaches ends that request (a 500), not the process:
// fasthttp recovers nothing, and a panic in any goroutine (a handler, a
// response body writer, a query's read-ahead) exits the process.
//
//	go func() {
//		defer httperr.Recover(&errs[i])
//		errs[i] = work()
//	}()
//
// The Panic keeps the stack of the goroutine that panicked and the place
// (function, file and line) the panic came from, so that a caller can log
// each place once instead of once per request.

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Panic is a recovered panic.
type Panic struct {
	Value any    // what was passed to panic
	Site  string // "function file:line" of the frame that panicked
	Stack []byte // the panicking goroutine's stack
}

// Error says an internal error happened, with the panic's value.
func (e *Panic) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// NewPanic makes a Panic of p, a value recover returned. Call it from the
// deferred function that recovered: the stack is then still the
// panicking goroutine's.
func NewPanic(p any) *Panic {
	return &Panic{Value: p, Site: site(), Stack: debug.Stack()}
}

// Recover, deferred, recovers a panic and stores it in *err as a *Panic.
// It must be the deferred call itself (defer httperr.Recover(&err)), since
// recover only stops a panic when called directly by a deferred function.
func Recover(err *error) {
	if p := recover(); p != nil {
		*err = NewPanic(p)
	}
}

// PanicOf returns the *Panic err is or wraps.
func PanicOf(err error) (*Panic, bool) {
	var e *Panic
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
