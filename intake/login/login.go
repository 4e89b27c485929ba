// Package login holds the one type of a login attempt, shared by the
// packages that parse attempts (intake), group them into a request's batch
// (intake/group), key, store and read them back (tablesink), and print them
// (cmd/ingest), so that none of those imports another for it.
package login

// Attempt is one login attempt. Its byte fields may point into a caller's
// buffer: an attempt handed to a callback is valid only during the call.
type Attempt struct {
	Time       int64  // Unix nanoseconds
	User       []byte // never empty once accepted
	IP         []byte
	UA         []byte
	ID         []byte // the client's id, else a generated one
	Success    bool
	HasSuccess bool   // whether the attempt said success at all
	Props      []byte // compact JSON object of every other field; empty when none
}
