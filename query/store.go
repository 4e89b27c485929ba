package query

import (
	"context"
	"io"

	"ingest/blobsink"
)

// Store is what a query reads of blob storage: the blobs under a prefix,
// and a blob's bytes. blobsink's stores (embedded and Azure) have it.
type Store interface {
	// List calls fn for each blob whose name starts with prefix, with its
	// metadata, in no particular order; an error from fn stops it.
	List(ctx context.Context, prefix string, fn func(blobsink.BlobInfo) error) error
	// Open reads a blob; a missing one is blobsink.ErrNotFound.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// RangeReader is an optional Store extension: n bytes of a blob from
// offset (blobsink.ErrNotFound when it is missing, io.ErrUnexpectedEOF when
// it is shorter). blobsink's FileStore and AzureStore have it. With it, a
// newest-first query with a limit reads each blob backwards from its end
// and stops as soon as the newest events are known (backward.go); without
// it, those blobs are read whole from the start.
type RangeReader interface {
	ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error)
}
