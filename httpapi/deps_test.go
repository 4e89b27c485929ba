package httpapi

import (
	"ingest/blobsink"
	"ingest/buffer"
	"ingest/query"
	"ingest/stats"
	"ingest/tablesink"
)

// The concrete parts the server is wired with have what it needs.
var (
	_ Buffer      = (*buffer.Buffer)(nil)
	_ Logins      = (*tablesink.Sink)(nil)
	_ Stats       = (*stats.Table)(nil)
	_ query.Store = blobsink.Store(nil)
)
