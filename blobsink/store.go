package blobsink

import (
	"context"
	"errors"
	"io"
)

// Store is what the sink and the query side need from a blob service. The
// embedded FileStore and the Azure AzureStore implement it; storetest runs the
// same suite against both.
type Store interface {
	// Create makes an empty append blob with the given metadata. It fails with
	// ErrExists when the name is taken: the create is conditional
	// (If-None-Match: * on Azure, O_EXCL on files), which is how writers claim
	// a blob number without ever colliding.
	Create(ctx context.Context, name string, meta map[string]string) error
	// Append writes block at the end of the blob, only if the blob's size is
	// offset (ErrAppendPosition otherwise). The condition makes a retried
	// append safe: it cannot land twice. The block may come in pieces,
	// written one after another as one block (one append request), so
	// chunks held apart need not be copied together.
	Append(ctx context.Context, name string, offset int64, block ...[]byte) error
	// SetMetadata replaces the blob's metadata.
	SetMetadata(ctx context.Context, name string, meta map[string]string) error
	// Stat returns the blob's size, committed block count and metadata
	// (ErrNotFound when absent).
	Stat(ctx context.Context, name string) (BlobInfo, error)
	// List calls fn for every blob whose name starts with prefix, with
	// metadata. Callers must not rely on the order. A non-nil error from fn
	// stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(BlobInfo) error) error
	// Open streams the blob's content.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// BlobInfo describes one blob.
type BlobInfo struct {
	Name     string
	Size     int64
	Blocks   int               // committed append blocks
	Metadata map[string]string // keys as stored; read them with MetaValue
}

// Errors a Store reports for the conditions the sink resolves itself. Any
// other error is treated as transient and retried.
var (
	ErrExists         = errors.New("blob already exists")
	ErrNotFound       = errors.New("blob not found")
	ErrAppendPosition = errors.New("append position does not match the blob size")
)

// MaxAppendBytes is the largest block one Append may carry: Azure's limit
// for Append Block since service version 2022-11-02 (azblob sends a later
// one; Azurite takes the same), 4 MiB before. A flush up to this size is
// one append, whatever --flush-bytes is (Config.ChunkBytes).
const MaxAppendBytes = 100 << 20

// MaxBlocks is Azure's limit of committed blocks in one append blob.
const MaxBlocks = 50000
