package blobsink_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"ingest/blobsink"
	"ingest/internal/azurite"
	"ingest/storage"
)

// hookTransport sends requests with net/http and lets a test see or change
// each request and response: the way to lose a response or break a download
// at the HTTP layer, under the SDK's own retry policy.
type hookTransport struct {
	client http.Client
	before func(req *http.Request)
	after  func(req *http.Request, resp *http.Response) (*http.Response, error)
}

func (h *hookTransport) Do(req *http.Request) (*http.Response, error) {
	if h.before != nil {
		h.before(req)
	}
	resp, err := h.client.Do(req)
	if err != nil || h.after == nil {
		return resp, err
	}
	return h.after(req, resp)
}

type policyFunc func(req *policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

// isOp tells an operation from its request: comp=appendblock, comp=list, or
// "" with GET for a download.
func isOp(req *http.Request, method, comp string) bool {
	return req.Method == method && req.URL.Query().Get("comp") == comp
}

// azureStoreWith is an AzureStore in a fresh container of the shared Azurite
// whose client goes through tr, with fast SDK retries.
func azureStoreWith(t *testing.T, tr policy.Transporter, perCall ...policy.Policy) (*blobsink.AzureStore, *azblob.Client) {
	t.Helper()
	conn := azurite.ConnString(t)
	opts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:           policy.RetryOptions{MaxRetries: 2, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 50 * time.Millisecond},
		PerCallPolicies: perCall,
	}}
	if tr != nil {
		opts.Transport = tr
	}
	client, err := azblob.NewClientFromConnectionString(conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueContainer(t)
	s, err := blobsink.NewAzureStore(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = client.DeleteContainer(context.Background(), name, nil) })
	return s, client
}

func readAll(t *testing.T, s blobsink.Store, name string) []byte {
	t.Helper()
	r, err := s.Open(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

func TestAzureStoreCreatesContainer(t *testing.T) {
	client, err := (&storage.Config{ConnString: azurite.ConnString(t)}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueContainer(t)
	t.Cleanup(func() { _, _ = client.DeleteContainer(context.Background(), name, nil) })
	s, err := blobsink.NewAzureStore(t.Context(), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if s.Container() != name {
		t.Errorf("Container() = %q, want %q", s.Container(), name)
	}
	if _, err := client.ServiceClient().NewContainerClient(name).GetProperties(t.Context(), nil); err != nil {
		t.Fatalf("container %s not created: %v", name, err)
	}
	// A second instance finds the container there: ContainerAlreadyExists is fine.
	if _, err := blobsink.NewAzureStore(t.Context(), client, name); err != nil {
		t.Errorf("NewAzureStore on an existing container: %v", err)
	}
}

// TestAzureStoreContainerSAS uses a SAS for an existing container only: it
// cannot create the container, and the store works regardless.
func TestAzureStoreContainerSAS(t *testing.T) {
	owner, err := (&storage.Config{ConnString: azurite.ConnString(t)}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueContainer(t)
	if _, err := owner.CreateContainer(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = owner.DeleteContainer(context.Background(), name, nil) })
	perms := sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, List: true}
	sasURL, err := owner.ServiceClient().NewContainerClient(name).GetSASURL(perms, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	endpoint, query, _ := strings.Cut(sasURL, "?")
	endpoint = strings.TrimSuffix(endpoint, "/"+name)
	client, err := (&storage.Config{ConnString: "BlobEndpoint=" + endpoint + ";SharedAccessSignature=" + query}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	s, err := blobsink.NewAzureStore(t.Context(), client, name)
	if err != nil {
		t.Fatalf("NewAzureStore with a container SAS: %v", err)
	}
	ctx, blob := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, blob, map[string]string{blobsink.MetaLogVersion: "1.0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, blob, 0, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	// The same SAS does not reach another container: that stays an error.
	if _, err := blobsink.NewAzureStore(t.Context(), client, uniqueContainer(t)); err == nil {
		t.Error("NewAzureStore on a container outside the SAS succeeded")
	}
}

func TestAzureStoreContainerNames(t *testing.T) {
	// Nothing listens here: a name that passes the local check fails to
	// connect instead, which tells the two apart.
	client, err := azblob.NewClientFromConnectionString(
		strings.ReplaceAll(storage.DevConnString, "127.0.0.1:10000", "127.0.0.1:9"),
		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string, valid bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := blobsink.NewAzureStore(ctx, client, name)
		if err == nil {
			t.Fatalf("NewAzureStore(%q) succeeded against a closed port", name)
		}
		refused := strings.Contains(err.Error(), "fix --container")
		if refused == valid {
			t.Errorf("NewAzureStore(%q) = %v; want the name refused: %v", name, err, !valid)
		}
		if !valid && blobsink.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true for a bad name", err)
		}
	}
	f("logs", true)
	f("t0a1-b2", true)
	f("abc", true)
	f(strings.Repeat("a", 63), true)
	f("ab", false)
	f(strings.Repeat("a", 64), false)
	f("Logs", false)
	f("a--b", false)
	f("-ab", false)
	f("ab-", false)
	f("a_b", false)
	f("a.b", false)
	f("", false)
}

func TestAzureStoreRefusesOversizedBlock(t *testing.T) {
	var appends atomic.Int32
	tr := &hookTransport{before: func(req *http.Request) {
		if isOp(req, http.MethodPut, "appendblock") {
			appends.Add(1)
		}
	}}
	s, _ := azureStoreWith(t, tr)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	err := s.Append(ctx, name, 0, make([]byte, blobsink.MaxAppendBytes+1))
	if err == nil {
		t.Fatal("Append of MaxAppendBytes+1 succeeded")
	}
	if !strings.Contains(err.Error(), "MaxAppendBytes") || blobsink.IsTransient(err) {
		t.Errorf("Append = %v (transient %v), want a permanent refusal naming MaxAppendBytes", err, blobsink.IsTransient(err))
	}
	if n := appends.Load(); n != 0 {
		t.Errorf("%d append requests sent, want the block refused before sending", n)
	}
	if info, err := s.Stat(ctx, name); err != nil || info.Size != 0 {
		t.Errorf("Stat = %+v, %v; want an empty blob", info, err)
	}
}

func TestAzureStoreBlockCount(t *testing.T) {
	s, _ := azureStoreWith(t, nil)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Append(ctx, name, int64(i*2), []byte("x\n")); err != nil {
			t.Fatal(err)
		}
	}
	info, err := s.Stat(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Blocks != 3 || info.Size != 6 {
		t.Errorf("Stat = %+v, want 3 blocks, 6 bytes", info)
	}
}

// TestAzureStoreListPages forces two names per page to see List follow the
// continuation markers.
func TestAzureStoreListPages(t *testing.T) {
	var pages atomic.Int32
	// A per-call policy, not the transport: the query must change before the
	// request is signed.
	pageOf2 := policyFunc(func(req *policy.Request) (*http.Response, error) {
		if raw := req.Raw(); isOp(raw, http.MethodGet, "list") {
			pages.Add(1)
			q := raw.URL.Query()
			q.Set("maxresults", "2")
			raw.URL.RawQuery = q.Encode()
		}
		return req.Next()
	})
	s, _ := azureStoreWith(t, nil, pageOf2)
	ctx := t.Context()
	var want []string
	for i := range 5 {
		name := blobsink.BlobName("svc/2026/11/21/1800", i+1, blobsink.CompressNone)
		if err := s.Create(ctx, name, map[string]string{blobsink.MetaEventCount: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	if err := s.Create(ctx, "svc/2026/11/21/1900/000001.log", nil); err != nil {
		t.Fatal(err)
	}
	pages.Store(0)
	var got []string
	err := s.List(ctx, "svc/2026/11/21/1800/", func(b blobsink.BlobInfo) error {
		got = append(got, b.Name)
		if _, ok := blobsink.MetaValue(b.Metadata, blobsink.MetaEventCount); !ok {
			t.Errorf("%s listed without metadata: %v", b.Name, b.Metadata)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	if n := pages.Load(); n != 3 {
		t.Errorf("List read %d pages, want 3 of at most 2 names", n)
	}
}

// TestAzureStoreConcurrentAppend has writers race for the same offset: the
// condition lets exactly one block in.
func TestAzureStoreConcurrentAppend(t *testing.T) {
	s, _ := azureStoreWith(t, nil)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { errs[w] = s.Append(ctx, name, 0, fmt.Appendf(nil, "writer %d\n", w)) })
	}
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = w
		case err == nil:
			t.Errorf("writers %d and %d both appended at offset 0", winner, w)
		case !errors.Is(err, blobsink.ErrAppendPosition):
			t.Errorf("writer %d: %v, want nil or ErrAppendPosition", w, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer appended")
	}
	if got, want := string(readAll(t, s, name)), fmt.Sprintf("writer %d\n", winner); got != want {
		t.Errorf("content %q, want %q", got, want)
	}
}

// TestAzureStoreLostAppendResponse loses the response of an append that
// landed. The SDK resends it, the resend fails its append-position condition,
// and Append reports ErrAppendPosition: Stat shows the block there once, which
// is how the caller knows its block landed.
func TestAzureStoreLostAppendResponse(t *testing.T) {
	var lost atomic.Bool
	tr := &hookTransport{after: func(req *http.Request, resp *http.Response) (*http.Response, error) {
		if isOp(req, http.MethodPut, "appendblock") && resp.StatusCode == http.StatusCreated && lost.CompareAndSwap(false, true) {
			resp.Body.Close()
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
		}
		return resp, nil
	}}
	s, _ := azureStoreWith(t, tr)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	block := []byte("1.0;2026-11-21T18:04:05.1234567Z;info;api;web-1;01J;\"hello\";{}\n")
	err := s.Append(ctx, name, 0, block)
	if !lost.Load() {
		t.Fatal("no response was lost")
	}
	if !errors.Is(err, blobsink.ErrAppendPosition) {
		t.Fatalf("Append with a lost response = %v, want ErrAppendPosition from the SDK's resend", err)
	}
	info, err := s.Stat(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(block)) || info.Blocks != 1 {
		t.Errorf("Stat = %+v, want the block once: %d bytes, 1 block", info, len(block))
	}
}

// failingBody gives n bytes of the real body, then a connection error.
type failingBody struct {
	io.ReadCloser
	n int
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errors.New("connection reset by peer")
	}
	n, err := b.ReadCloser.Read(p[:min(len(p), b.n)])
	b.n -= n
	return n, err
}

// TestAzureStoreResumesRead breaks a download midway after the blob has
// grown (new ETag): the read resumes by range and returns the blob as it was
// when opened.
func TestAzureStoreResumesRead(t *testing.T) {
	var downloads atomic.Int32
	tr := &hookTransport{after: func(req *http.Request, resp *http.Response) (*http.Response, error) {
		if isOp(req, http.MethodGet, "") && downloads.Add(1) == 1 {
			resp.Body = &failingBody{ReadCloser: resp.Body, n: 100_000}
		}
		return resp, nil
	}}
	s, _ := azureStoreWith(t, tr)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcde\n"), 20_000) // 320,000 bytes
	if err := s.Append(ctx, name, 0, want); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := s.Append(ctx, name, int64(len(want)), []byte("appended after open\n")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read with one broken download: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read %d bytes, want the %d the blob had when opened", len(got), len(want))
	}
	if n := downloads.Load(); n != 2 {
		t.Errorf("%d downloads, want 2 (the broken one and the resumed one)", n)
	}
}

func TestAzureStoreReadGivesUp(t *testing.T) {
	var downloads atomic.Int32
	tr := &hookTransport{after: func(req *http.Request, resp *http.Response) (*http.Response, error) {
		if isOp(req, http.MethodGet, "") {
			n := 10
			if downloads.Add(1) > 1 {
				n = 0 // every resumed download breaks at once
			}
			resp.Body = &failingBody{ReadCloser: resp.Body, n: n}
		}
		return resp, nil
	}}
	s, _ := azureStoreWith(t, tr)
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 0, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err == nil || !strings.Contains(err.Error(), "cannot read blob") {
		t.Fatalf("ReadAll = %d bytes, %v; want an error after the retries", len(got), err)
	}
	if len(got) != 10 {
		t.Errorf("read %d bytes before failing, want 10", len(got))
	}
	if n := downloads.Load(); n != 4 {
		t.Errorf("%d downloads, want 4 (the first and 3 resumes)", n)
	}
}

func TestAzureStoreAuthFailure(t *testing.T) {
	conn := azurite.ConnString(t)
	bad := strings.Replace(conn, azurite.AccountKey, "AAAA"+azurite.AccountKey[4:], 1)
	client, err := (&storage.Config{ConnString: bad}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	_, err = blobsink.NewAzureStore(t.Context(), client, uniqueContainer(t))
	if err == nil {
		t.Fatal("NewAzureStore with a wrong account key succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "403") || !strings.Contains(msg, "--storage") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line with the status and the flag to check", msg)
	}
	if blobsink.IsTransient(err) {
		t.Errorf("IsTransient(%v) = true, want false: retrying does not fix a wrong key", err)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
		t.Errorf("errors.As(ResponseError) = %v, want the SDK error kept", re)
	}
}

// TestAzureStoreWhilePaused freezes Azurite: calls with a short deadline fail
// fast instead of hanging, and after it resumes, writing carries on with the
// block in the blob exactly once.
func TestAzureStoreWhilePaused(t *testing.T) {
	azurite.Shared(t) // skip without Azurite (fail under CI)
	// A server of its own: pausing the shared one would stall other tests.
	srv, err := azurite.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	client, err := (&storage.Config{ConnString: srv.ConnString()}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	s, err := blobsink.NewAzureStore(ctx, client, "logs")
	if err != nil {
		t.Fatal(err)
	}
	head, block := []byte("before\n"), []byte("during the outage\n")
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 0, head); err != nil {
		t.Fatal(err)
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	resume := func() {
		if paused {
			paused = false
			if err := srv.Resume(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume) // runs before srv.Stop
	short := func(op string, call func(ctx context.Context) error) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := call(c)
		took := time.Since(start)
		if err == nil {
			t.Fatalf("%s succeeded while Azurite is paused", op)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !blobsink.IsTransient(err) {
			t.Errorf("%s = %v (transient %v), want a transient deadline error", op, err, blobsink.IsTransient(err))
		}
		// Not a speed check: a hang would take the SDK's 30 s try timeout.
		if took > 10*time.Second {
			t.Errorf("%s returned after %v with a 300ms deadline", op, took)
		}
	}
	short("Append", func(c context.Context) error { return s.Append(c, name, int64(len(head)), block) })
	short("Stat", func(c context.Context) error { _, err := s.Stat(c, name); return err })
	short("NewAzureStore", func(c context.Context) error { _, err := blobsink.NewAzureStore(c, client, "other"); return err })
	resume()

	// The abandoned append may still be served once Azurite runs again: then
	// the retry meets ErrAppendPosition and Stat shows the block landed.
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = s.Append(c, name, int64(len(head)), block)
	if errors.Is(err, blobsink.ErrAppendPosition) {
		info, serr := s.Stat(c, name)
		if serr != nil || info.Size != int64(len(head)+len(block)) {
			t.Fatalf("retry after the outage: ErrAppendPosition, and Stat = %+v, %v", info, serr)
		}
		t.Log("the append sent during the pause landed after Resume")
	} else if err != nil {
		t.Fatalf("Append after Resume: %v", err)
	}
	if got, want := readAll(t, s, name), append(slices.Clone(head), block...); !bytes.Equal(got, want) {
		t.Errorf("content %q, want %q", got, want)
	}
}

func TestIsTransient(t *testing.T) {
	f := func(err error, want bool) {
		t.Helper()
		if got := blobsink.IsTransient(err); got != want {
			t.Errorf("IsTransient(%v) = %v, want %v", err, got, want)
		}
	}
	f(nil, false)
	f(blobsink.ErrExists, false)
	f(blobsink.ErrNotFound, false)
	f(fmt.Errorf("flush: %w", blobsink.ErrAppendPosition), false)
	f(context.Canceled, false)
	f(context.DeadlineExceeded, true)
	f(io.ErrUnexpectedEOF, true)
	f(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true)
	f(&azcore.ResponseError{StatusCode: 500, ErrorCode: "InternalError"}, true)
	f(&azcore.ResponseError{StatusCode: 503, ErrorCode: "ServerBusy"}, true)
	f(&azcore.ResponseError{StatusCode: 429}, true)
	f(&azcore.ResponseError{StatusCode: 408}, true)
	f(&azcore.ResponseError{StatusCode: 403, ErrorCode: "AuthenticationFailed"}, false)
	f(&azcore.ResponseError{StatusCode: 404, ErrorCode: "ContainerNotFound"}, false)
	f(&azcore.ResponseError{StatusCode: 400, ErrorCode: "InvalidMetadata"}, false)
	f(fmt.Errorf("cannot flush: %w", &azcore.ResponseError{StatusCode: 503}), true)
}

// BenchmarkAzureAppend measures appends into Azurite on loopback. Azurite
// shares the machine and is usually the bottleneck.
func BenchmarkAzureAppend(b *testing.B) {
	client, err := (&storage.Config{ConnString: azurite.ConnString(b)}).BlobClient()
	if err != nil {
		b.Fatal(err)
	}
	name := uniqueContainer(b)
	b.Cleanup(func() { _, _ = client.DeleteContainer(context.Background(), name, nil) })
	s, err := blobsink.NewAzureStore(b.Context(), client, name)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			// Blob names repeat across runs: start from an empty container.
			pager := client.NewListBlobsFlatPager(name, nil)
			for pager.More() {
				page, err := pager.NextPage(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range page.Segment.BlobItems {
					_, _ = client.DeleteBlob(b.Context(), name, *it.Name, nil)
				}
			}
			benchAppend(b, s, size, func(blob string) {
				_, _ = client.DeleteBlob(context.Background(), name, blob, nil)
			})
		})
	}
}

// BenchmarkAzureAppendParallel appends 1 MiB blocks to several blobs at once,
// as a sink flushing many services does: it shows whether concurrency hides
// the round trip or the service is the limit.
func BenchmarkAzureAppendParallel(b *testing.B) {
	client, err := (&storage.Config{ConnString: azurite.ConnString(b)}).BlobClient()
	if err != nil {
		b.Fatal(err)
	}
	name := uniqueContainer(b)
	b.Cleanup(func() { _, _ = client.DeleteContainer(context.Background(), name, nil) })
	s, err := blobsink.NewAzureStore(b.Context(), client, name)
	if err != nil {
		b.Fatal(err)
	}
	const size, perBlob = 1 << 20, 32 << 20
	block := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var writers atomic.Int32
	b.SetBytes(size)
	b.ReportAllocs()
	b.SetParallelism(2) // 4 writers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		w := writers.Add(1)
		var blob string
		var seq int
		var off int64 = perBlob
		for pb.Next() {
			if off+size > perBlob {
				if blob != "" {
					_, _ = client.DeleteBlob(context.Background(), name, blob, nil)
				}
				seq++
				blob = fmt.Sprintf("w%d/%06d.log", w, seq)
				if err := s.Create(b.Context(), blob, nil); err != nil {
					b.Error(err)
					return
				}
				off = 0
			}
			if err := s.Append(b.Context(), blob, off, block); err != nil {
				b.Error(err)
				return
			}
			off += size
		}
	})
}
