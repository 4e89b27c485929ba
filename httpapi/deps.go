package httpapi

import (
	"context"
	"time"

	"ingest/buffer"
	"ingest/cluster"
	"ingest/intake/group"
	"ingest/intake/login"
	"ingest/stats"
)

// Buffer is what the server needs of the buffer (*buffer.Buffer): it adds
// the batches and reports what readiness and the answers depend on.
type Buffer interface {
	// Add accepts a batch, as safe as Ack says once it returns nil.
	Add(ctx context.Context, b *buffer.Batch) error
	Ack() buffer.AckMode       // the --ack mode, for X-Ingest-Ack
	AckTimeout() time.Duration // the longest Add waits for storage
	Full() bool                // the memory budget is (nearly) used up
	WALErr() error             // the write-ahead log's disk refuses writes
}

// Logins is what the server needs of the login table sink
// (*tablesink.Sink).
type Logins interface {
	// AppendRecord appends an attempt's record for the buffer and returns
	// its day table, the key of its group (group.Logins).
	group.Logins
	// TailEach hands fn a user's newest attempts of the last days, newest
	// first, a day at a time; an error from fn stops it.
	TailEach(ctx context.Context, user string, days, limit int, fn func(*login.Attempt) error) error
	// Maintain creates the coming day tables and deletes those past the
	// retention (none with dryRun), returning the deleted ones.
	Maintain(ctx context.Context, dryRun bool) (deleted []string, err error)
	RetentionDays() int
}

// Stats is what the server needs of the stats table (*stats.Table): a
// service's counts for a day, per hour.
type Stats interface {
	ReadStats(ctx context.Context, service string, day time.Time) ([24]stats.HourStats, error)
}

// Cluster is what the server needs of the instances sharing its storage
// (*cluster.Membership): the live ones for GET /v1/cluster and for the
// tail's fan-out, and the key its peers present to follow its own tail.
type Cluster interface {
	Members() []cluster.Member // the live instances, this one included
	Peers() []cluster.Member   // the other live instances
	TailKey() string
}
