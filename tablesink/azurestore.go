package tablesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/valyala/fastjson"
)

// AzureStore is the Store on the Azure Table service (or Azurite), through
// aztables. It checks every batch against Azure's limits before sending it
// (Azurite accepts transactions that Azure refuses, and a transaction of
// more than 100 entities comes back as an unparseable response rather than
// an error), and turns the service's errors into the package's sentinel
// errors, including those reported inside a transaction's 202 response.
type AzureStore struct {
	svc     *aztables.ServiceClient
	mu      sync.Mutex
	clients map[string]*aztables.Client
	parsers fastjson.ParserPool
}

// NewAzureStore wraps a service client, for example storage.Config.TableClient().
func NewAzureStore(svc *aztables.ServiceClient) *AzureStore {
	return &AzureStore{svc: svc, clients: map[string]*aztables.Client{}}
}

// Close implements Store; the HTTP client needs no closing.
func (s *AzureStore) Close() error { return nil }

func (s *AzureStore) client(table string) *aztables.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[table]
	if !ok {
		c = s.svc.NewClient(table)
		s.clients[table] = c
	}
	return c
}

// CreateTable implements Store.
func (s *AzureStore) CreateTable(ctx context.Context, name string) error {
	if err := checkTableName(name); err != nil {
		return err
	}
	_, err := s.svc.CreateTable(ctx, name, nil)
	if code, _ := errorCode(err); code == string(aztables.TableAlreadyExists) {
		return nil
	}
	return wrapErr("create table "+name, err)
}

// DeleteTable implements Store.
func (s *AzureStore) DeleteTable(ctx context.Context, name string) error {
	_, err := s.svc.DeleteTable(ctx, name, nil)
	if err = wrapErr("delete table "+name, err); errors.Is(err, ErrTableNotFound) || errors.Is(err, errNotFound) {
		return nil
	}
	return err
}

// ListTables implements Store.
func (s *AzureStore) ListTables(ctx context.Context, prefix string) ([]string, error) {
	opts := &aztables.ListTablesOptions{}
	if prefix != "" {
		// A range filter: names >= prefix and < prefix with its last byte
		// incremented (table names are letters and digits).
		end := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
		f := fmt.Sprintf("TableName ge %s and TableName lt %s", odataString(prefix), odataString(end))
		opts.Filter = &f
	}
	var names []string
	pager := s.svc.NewListTablesPager(opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return names, wrapErr("list tables", err)
		}
		for _, t := range page.Tables {
			if t.Name != nil && strings.HasPrefix(strings.ToLower(*t.Name), strings.ToLower(prefix)) {
				names = append(names, *t.Name)
			}
		}
	}
	return names, nil
}

// Batch implements Store: one SubmitTransaction of InsertReplace actions.
func (s *AzureStore) Batch(ctx context.Context, table string, ents []Entity) error {
	if err := checkBatch(ents); err != nil {
		return err
	}
	if len(ents) == 1 {
		// One entity: a plain upsert is the same operation without the
		// multipart envelope (the long tail of users gives many of these).
		_, err := s.client(table).UpsertEntity(ctx, entityJSON(&ents[0]), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
		return s.batchErr(table, err)
	}
	actions := make([]aztables.TransactionAction, len(ents))
	for i := range ents {
		actions[i] = aztables.TransactionAction{
			ActionType: aztables.TransactionTypeInsertReplace,
			Entity:     entityJSON(&ents[i]),
		}
	}
	_, err := s.client(table).SubmitTransaction(ctx, actions, nil)
	return s.batchErr(table, err)
}

// entityJSON is e's JSON for a request body: its checkedJSON when it has
// one (the SDK only reads the body), else a new encoding.
func entityJSON(e *Entity) []byte {
	if e.checkedJSON != nil {
		return e.checkedJSON
	}
	return appendEntityJSON(nil, e)
}

// batchErr maps a write's error; a 404 on a write can only be the table.
func (s *AzureStore) batchErr(table string, err error) error {
	err = wrapErr("write to table "+table, err)
	if errors.Is(err, errNotFound) && !errors.Is(err, ErrTableNotFound) {
		return fmt.Errorf("%w: %w", ErrTableNotFound, err)
	}
	return err
}

// Query implements Store.
func (s *AzureStore) Query(ctx context.Context, table, pk, rowFrom, rowTo string, top int) ([]Entity, error) {
	if top <= 0 {
		return nil, nil
	}
	f := "PartitionKey eq " + odataString(pk)
	if rowFrom != "" {
		f += " and RowKey ge " + odataString(rowFrom)
	}
	if rowTo != "" {
		f += " and RowKey lt " + odataString(rowTo)
	}
	var out []Entity
	pager := s.client(table).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f, Top: ptr(int32(min(top, 1000)))})
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	for pager.More() && len(out) < top {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return out, wrapErr("query table "+table, err)
		}
		for _, raw := range page.Entities {
			if len(out) == top {
				break
			}
			e, err := decodeEntityJSON(p, raw)
			if err != nil {
				return out, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// Get implements Store.
func (s *AzureStore) Get(ctx context.Context, table, pk, rk string) (Entity, error) {
	resp, err := s.client(table).GetEntity(ctx, pk, rk, nil)
	if err != nil {
		return Entity{}, wrapErr("read from table "+table, err)
	}
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	e, err := decodeEntityJSON(p, resp.Value)
	e.ETag = string(resp.ETag)
	return e, err
}

// Insert implements Store.
func (s *AzureStore) Insert(ctx context.Context, table string, e Entity) (string, error) {
	if err := checkEntity(&e); err != nil {
		return "", err
	}
	resp, err := s.client(table).AddEntity(ctx, appendEntityJSON(nil, &e), nil)
	if err != nil {
		return "", wrapErr("insert into table "+table, err)
	}
	return string(resp.ETag), nil
}

// Merge implements Store.
func (s *AzureStore) Merge(ctx context.Context, table string, e Entity, etag string) (string, error) {
	if err := checkEntity(&e); err != nil {
		return "", err
	}
	tag := azcore.ETag(etag)
	resp, err := s.client(table).UpdateEntity(ctx, appendEntityJSON(nil, &e), &aztables.UpdateEntityOptions{IfMatch: &tag, UpdateMode: aztables.UpdateModeMerge})
	if err != nil {
		return "", wrapErr("merge into table "+table, err)
	}
	return string(resp.ETag), nil
}

func ptr[T any](v T) *T { return &v }

// odataString quotes s as an OData string literal.
func odataString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

var (
	innerStatusRE = regexp.MustCompile(`HTTP/1\.1 (\d{3})`)
	innerCodeRE   = regexp.MustCompile(`"code"\s*:\s*"([^"]+)"`)
)

// errorCode returns the service's error code and HTTP status. A failed
// transaction comes back with status 202 and no x-ms-error-code: the real
// status and code are only in the multipart body, so they are read there.
func errorCode(err error) (code string, status int) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return "", 0
	}
	code, status = re.ErrorCode, re.StatusCode
	if (code == "" || status == http.StatusAccepted) && re.RawResponse != nil {
		body, _ := runtime.Payload(re.RawResponse)
		if m := innerCodeRE.FindSubmatch(body); m != nil {
			code = string(m[1])
		}
		if status == http.StatusAccepted {
			for _, m := range innerStatusRE.FindAllSubmatch(body, -1) {
				if m[1][0] >= '4' {
					status = int(m[1][0]-'0')*100 + int(m[1][1]-'0')*10 + int(m[1][2]-'0')
					break
				}
			}
		}
	}
	return code, status
}

// wrapErr maps an SDK error to the package's sentinel errors, keeping the
// original in the chain.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	code, status := errorCode(err)
	var kind error
	switch {
	case code == string(aztables.TableNotFound):
		kind = ErrTableNotFound
	case code == string(aztables.EntityNotFound), code == string(aztables.ResourceNotFound), status == http.StatusNotFound:
		kind = errNotFound
	case code == string(aztables.EntityAlreadyExists):
		kind = errExists
	case code == string(aztables.UpdateConditionNotSatisfied), status == http.StatusPreconditionFailed:
		kind = errPrecondition
	case code == "ServerBusy", status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
		return fmt.Errorf("cannot %s: %w: %w: %w", op, errThrottled, ErrTransient, err)
	case code == "InternalError", code == "OperationTimedOut",
		status == http.StatusRequestTimeout,
		status == http.StatusInternalServerError, status == http.StatusBadGateway,
		status == http.StatusGatewayTimeout:
		kind = ErrTransient
	case status == 0 && isNetworkError(err):
		kind = ErrTransient
	case status == http.StatusBadRequest:
		kind = errRejected
	}
	if kind == nil {
		if code != "" {
			return fmt.Errorf("cannot %s: %s (HTTP %d): %w", op, code, status, err)
		}
		return fmt.Errorf("cannot %s: %w", op, err)
	}
	return fmt.Errorf("cannot %s: %w: %w", op, kind, err)
}

// isNetworkError reports connection-level failures worth a retry.
func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) // a try's timeout; the retry loop stops when the caller's context ends
}
