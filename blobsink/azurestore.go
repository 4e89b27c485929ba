package blobsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// AzureStore is the Store on Azure Blob Storage (or Azurite): append blobs in
// one container, written through azblob.
//
//	client, _ := cfg.BlobClient() // storage.Config
//	s, err := blobsink.NewAzureStore(ctx, client, "logs")
//
// Every operation is one REST call (Append of an empty block and a resumed
// read are the exceptions), so its cost is the round trip: a few ms against
// Azurite on loopback. Large appends are bounded by the service: about 45
// MiB/s of 1 MiB blocks into Azurite on two otherwise idle cores (Azurite
// takes a whole core), 10-15 MiB/s when the cores are busy; writing several
// blobs at once does not raise that (BenchmarkAzureAppendParallel).
//
// The SDK's own retry policy (storage.Config keeps it short) may resend an
// append whose response was lost; the resent request then fails its
// append-position condition and Append returns ErrAppendPosition although the
// block landed. The caller resolves that with Stat: a size of offset+len(block)
// on a blob only it writes means the block is there, exactly once.
//
// Errors other than ErrExists, ErrNotFound and ErrAppendPosition say which
// operation on which blob failed and keep the SDK error for errors.As; most are
// worth retrying, and IsTransient tells the few that are not.
type AzureStore struct {
	cont *container.Client
	name string
}

// readRetries is how many times in a row a read resumes after a broken
// download before Read gives up.
const readRetries = 3

// NewAzureStore returns the store for the named container, creating the
// container when it does not exist yet.
//
// Credentials scoped to the container (a container SAS, a role on the
// container only) may not create it; a 403 is then accepted when the
// container can be listed, which proves it exists and is usable.
func NewAzureStore(ctx context.Context, client *azblob.Client, containerName string) (*AzureStore, error) {
	if err := checkContainerName(containerName); err != nil {
		return nil, err
	}
	s := &AzureStore{cont: client.ServiceClient().NewContainerClient(containerName), name: containerName}
	_, err := s.cont.Create(ctx, nil)
	switch {
	case err == nil, bloberror.HasCode(err, bloberror.ContainerAlreadyExists):
		return s, nil
	case isForbidden(err):
		one := int32(1)
		if _, lerr := s.cont.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{MaxResults: &one}).NextPage(ctx); lerr == nil {
			return s, nil
		}
	}
	return nil, wrapAzure("create container "+containerName, err)
}

func isForbidden(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusForbidden
}

// checkContainerName applies Azure's container naming rules up front, so a
// bad --container fails with a plain message instead of a 400 from the service.
func checkContainerName(name string) error {
	bad := len(name) < 3 || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-'
	for i := 0; i < len(name) && !bad; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-':
		default:
			bad = true
		}
	}
	if bad {
		return &refusal{fmt.Sprintf("cannot use container name %q: Azure wants 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit; fix --container", name)}
	}
	return nil
}

// Container is the container's name.
func (s *AzureStore) Container() string { return s.name }

func (s *AzureStore) blob(name string) *blob.Client { return s.cont.NewBlobClient(name) }

func (s *AzureStore) appendBlob(name string) *appendblob.Client {
	return s.cont.NewAppendBlobClient(name)
}

// Create implements Store: Put Blob (append blob) with If-None-Match: *.
func (s *AzureStore) Create(ctx context.Context, name string, meta map[string]string) error {
	_, err := s.appendBlob(name).Create(ctx, &appendblob.CreateOptions{
		AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: new(azcore.ETagAny)},
		},
		Metadata: toAzureMeta(meta),
	})
	switch {
	case err == nil:
		return nil
	// Azure answers 409 BlobAlreadyExists; 412 is what a failed condition
	// gives on other writes, and means the same here.
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		return ErrExists
	}
	return wrapAzure("create blob "+s.name+"/"+name, err)
}

// Append implements Store: Append Block with the append-position condition,
// the pieces sent one after another as its body. Blocks over
// MaxAppendBytes are refused before anything is sent.
func (s *AzureStore) Append(ctx context.Context, name string, offset int64, block ...[]byte) error {
	body := newPiecesReader(block)
	if body.size > MaxAppendBytes {
		return &refusal{fmt.Sprintf("cannot append %d bytes to blob %s/%s: a block holds at most %d bytes (MaxAppendBytes); split it", body.size, s.name, name, MaxAppendBytes)}
	}
	if body.size == 0 {
		// Azure refuses empty blocks; an empty append only checks the position.
		info, err := s.Stat(ctx, name)
		if err != nil {
			return err
		}
		if info.Size != offset {
			return ErrAppendPosition
		}
		return nil
	}
	_, err := s.appendBlob(name).AppendBlock(ctx, body, &appendblob.AppendBlockOptions{
		AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: &offset},
	})
	switch {
	case err == nil:
		return nil
	case bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet):
		return ErrAppendPosition
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return ErrNotFound
	}
	return wrapAzure(fmt.Sprintf("append %d bytes at offset %d to blob %s/%s", body.size, offset, s.name, name), err)
}

// SetMetadata implements Store. It changes the blob's ETag, not its content
// or append position.
func (s *AzureStore) SetMetadata(ctx context.Context, name string, meta map[string]string) error {
	md := toAzureMeta(meta)
	if md == nil {
		md = map[string]*string{} // nil would be sent the same way: no metadata
	}
	_, err := s.blob(name).SetMetadata(ctx, md, nil)
	if isNotFound(err) {
		return ErrNotFound
	}
	if err != nil {
		return wrapAzure("set metadata of blob "+s.name+"/"+name, err)
	}
	return nil
}

// Stat implements Store: Get Blob Properties. Metadata keys come back in
// canonical case (Endtime); read them with MetaValue.
func (s *AzureStore) Stat(ctx context.Context, name string) (BlobInfo, error) {
	p, err := s.blob(name).GetProperties(ctx, nil)
	if isNotFound(err) {
		return BlobInfo{}, ErrNotFound
	}
	if err != nil {
		return BlobInfo{}, wrapAzure("get properties of blob "+s.name+"/"+name, err)
	}
	info := BlobInfo{Name: name, Metadata: fromAzureMeta(p.Metadata)}
	if p.ContentLength != nil {
		info.Size = *p.ContentLength
	}
	if p.BlobCommittedBlockCount != nil {
		info.Blocks = int(*p.BlobCommittedBlockCount)
	}
	return info, nil
}

// isNotFound recognises a missing blob. Get Properties is a HEAD request, so
// its 404 has no body and the code comes only from the x-ms-error-code header.
func isNotFound(err error) bool {
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return true
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode == ""
}

// List implements Store: a flat listing by prefix with metadata, one call per
// page of up to 5,000 names, in name order. Listings carry no committed block
// count, so BlobInfo.Blocks is 0; metadata keys come back lower case.
func (s *AzureStore) List(ctx context.Context, prefix string, fn func(BlobInfo) error) error {
	opts := &container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Metadata: true}}
	if prefix != "" {
		opts.Prefix = &prefix
	}
	pager := s.cont.NewListBlobsFlatPager(opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return wrapAzure(fmt.Sprintf("list blobs under %s/%s", s.name, prefix), err)
		}
		if page.Segment == nil {
			continue
		}
		for _, it := range page.Segment.BlobItems {
			if it == nil || it.Name == nil {
				continue
			}
			info := BlobInfo{Name: *it.Name, Metadata: fromAzureMeta(it.Metadata)}
			if it.Properties != nil && it.Properties.ContentLength != nil {
				info.Size = *it.Properties.ContentLength
			}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// Open implements Store: it streams the blob as it is when opened (its size
// then), resuming with a ranged download after a broken connection.
func (s *AzureStore) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	resp, err := s.blob(name).DownloadStream(ctx, nil)
	if isNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrapAzure("download blob "+s.name+"/"+name, err)
	}
	r := &blobReader{ctx: ctx, s: s, name: name, body: resp.Body}
	if resp.ContentLength != nil {
		r.end = *resp.ContentLength
	}
	return r, nil
}

// ReadRange returns n bytes of the blob from offset with one ranged
// download (io.ErrUnexpectedEOF when the blob is shorter).
func (s *AzureStore) ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error) {
	resp, err := s.blob(name).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: offset, Count: int64(n)}})
	switch {
	case isNotFound(err):
		return nil, ErrNotFound
	case bloberror.HasCode(err, bloberror.InvalidRange):
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, wrapAzure(fmt.Sprintf("read %d bytes at offset %d of blob %s/%s", n, offset, s.name, name), err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != nil && *resp.ContentLength < int64(n) {
		return nil, io.ErrUnexpectedEOF // the blob ends inside the range
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		// The range was granted whole: a short body is a broken connection,
		// not a short blob, so the error must not read as io.ErrUnexpectedEOF.
		return nil, &azureError{msg: fmt.Sprintf("cannot read %d bytes at offset %d of blob %s/%s: %v", n, offset, s.name, name, err)}
	}
	return buf, nil
}

// blobReader reads a blob up to the size it had when opened, and after a
// failed read resumes with a download of the missing range.
//
// azblob's RetryReader is not used: it resumes with If-Match on the ETag of
// the first response, and every append or metadata update changes the ETag,
// so resuming the read of a blob that is still being written would fail with
// 412. An append blob's committed bytes never change, which is what makes
// resuming by range alone safe (blob names are never reused after a delete).
type blobReader struct {
	ctx      context.Context
	s        *AzureStore
	name     string
	body     io.ReadCloser // nil between a failure and the next download
	pos, end int64
	failures int // consecutive failed reads
}

func (r *blobReader) Read(p []byte) (int, error) {
	if r.pos >= r.end {
		return 0, io.EOF
	}
	if rest := r.end - r.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	for {
		if r.body == nil {
			resp, err := r.s.blob(r.name).DownloadStream(r.ctx, &blob.DownloadStreamOptions{
				Range: blob.HTTPRange{Offset: r.pos, Count: r.end - r.pos},
			})
			if err != nil {
				return 0, wrapAzure(fmt.Sprintf("resume reading blob %s/%s at offset %d", r.s.name, r.name, r.pos), err)
			}
			r.body = resp.Body
		}
		n, err := r.body.Read(p)
		r.pos += int64(n)
		if n > 0 {
			r.failures = 0
		}
		if err == nil || (err == io.EOF && r.pos >= r.end) {
			return n, err
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.body.Close()
		r.body = nil
		if r.ctx.Err() != nil || r.failures >= readRetries {
			return n, wrapAzure(fmt.Sprintf("read blob %s/%s at offset %d", r.s.name, r.name, r.pos), err)
		}
		r.failures++
		if n > 0 {
			return n, nil
		}
	}
}

func (r *blobReader) Close() error {
	if r.body == nil {
		return nil
	}
	err := r.body.Close()
	r.body = nil
	return err
}

func toAzureMeta(m map[string]string) map[string]*string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

func fromAzureMeta(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// azureError is a failed Azure call: a one-line message (the SDK's own spans
// the whole HTTP response) over the SDK error, kept for errors.As.
type azureError struct {
	msg string
	err error
}

func (e *azureError) Error() string { return e.msg }
func (e *azureError) Unwrap() error { return e.err }

// wrapAzure turns err from the SDK into "cannot <what>: <status> <code>",
// with a remedy where the code has an obvious one.
func wrapAzure(what string, err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return &azureError{msg: "cannot " + what + ": " + err.Error(), err: err}
	}
	msg := fmt.Sprintf("cannot %s: %d %s", what, re.StatusCode, re.ErrorCode)
	switch {
	case re.StatusCode == http.StatusForbidden:
		msg += " (check the account key, SAS or role assignment behind --storage / --storage-account)"
	case re.ErrorCode == string(bloberror.ContainerNotFound) || re.ErrorCode == string(bloberror.ContainerBeingDeleted):
		msg += " (the container was deleted: restart to create it again)"
	}
	return &azureError{msg: msg, err: err}
}

// IsTransient reports whether retrying the failed operation may succeed by
// itself: network errors, timeouts, throttling (429, 503) and server errors.
// It is false for nil, for the three Store sentinels (the caller resolves
// those), for a canceled context, and for errors that need someone to act:
// refused credentials, invalid names, a deleted container, an oversized block.
// Errors it does not know, such as a FileStore's I/O errors, count as transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrAppendPosition) || errors.Is(err, context.Canceled) {
		return false
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == http.StatusRequestTimeout || re.StatusCode == http.StatusTooManyRequests ||
			re.StatusCode >= 500
	}
	var rf *refusal
	return !errors.As(err, &rf)
}

// refusal is an error AzureStore raises itself, before sending anything:
// retrying the same call cannot cure it.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }

// ListTop returns the distinct first path segments of the container's blob
// names (the services) with one hierarchical listing, delimiter "/".
func (s *AzureStore) ListTop(ctx context.Context) ([]string, error) {
	var names []string
	pager := s.cont.NewListBlobsHierarchyPager("/", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, wrapAzure("list the top level of "+s.name, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, p := range page.Segment.BlobPrefixes {
			if p != nil && p.Name != nil {
				names = append(names, strings.TrimSuffix(*p.Name, "/"))
			}
		}
	}
	return names, nil
}
