package tablesink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"ingest/shard"
)

// Store is what the sink needs from a table service. BoltStore (embedded)
// and AzureStore (Azure Table service) implement it and pass the same test
// suite. Implementations report the conditions the sink resolves itself with
// the sentinel errors below (test with errors.Is); errors for which
// isTransient is true are retried with backoff.
type Store interface {
	// CreateTable creates a table; an existing table is not an error.
	CreateTable(ctx context.Context, name string) error
	// DeleteTable deletes a whole table in one operation; an absent table is
	// not an error.
	DeleteTable(ctx context.Context, name string) error
	// ListTables returns the names of the tables starting with prefix, sorted.
	ListTables(ctx context.Context, prefix string) ([]string, error)
	// Batch upserts ents (insert or replace) as one entity group transaction:
	// all or nothing. The caller passes a batch that checkBatch accepts (one
	// PartitionKey, at most maxBatchEntities distinct RowKeys, at most
	// maxBatchBytes); implementations check it again whatever their backend
	// accepts. ErrTableNotFound when the table does not exist.
	Batch(ctx context.Context, table string, ents []Entity) error
	// Query returns up to top entities of partition pk with rowFrom <=
	// RowKey < rowTo ("" for no bound), in ascending RowKey order, following
	// continuation tokens until top entities or the end of the range: a
	// range query. A missing table is ErrTableNotFound.
	Query(ctx context.Context, table, pk, rowFrom, rowTo string, top int) ([]Entity, error)
	// Get reads one entity with its ETag (errNotFound when absent).
	Get(ctx context.Context, table, pk, rk string) (Entity, error)
	// Insert adds an entity that must not exist yet (errExists otherwise)
	// and returns its ETag.
	Insert(ctx context.Context, table string, e Entity) (etag string, err error)
	// Merge merges e's properties into the stored entity only if its ETag is
	// still etag (errPrecondition otherwise, errNotFound when absent) and
	// returns the new ETag: optimistic concurrency for the data series.
	Merge(ctx context.Context, table string, e Entity, etag string) (newETag string, err error)
	// Close releases the store.
	Close() error
}

// Entity is one table row. Props values are string, bool, int64 (Edm.Int64),
// int32, float64 (Edm.Double) or time.Time (Edm.DateTime, 100 ns resolution).
// A whole float64 reads back as int32: the service does not annotate doubles.
type Entity struct {
	PartitionKey, RowKey string
	Props                map[string]any
	ETag                 string // set by Get and Query
	// checkedJSON, when set, is the entity as appendEntityJSON writes it,
	// made once checkEntity accepted the entity (a login flush builds it
	// with the entity): sizing the flush's transactions, checking them and
	// sending them then neither encodes nor checks each entity again. Only
	// code that builds an entity and never changes it afterwards sets it.
	checkedJSON []byte
}

// The conditions a Store reports.
var (
	ErrTableNotFound = errors.New("table not found")
	errNotFound      = errors.New("entity not found")
	errExists        = errors.New("entity already exists")
	errPrecondition  = errors.New("entity changed since it was read (ETag mismatch)")
	ErrTransient     = errors.New("transient storage error")
	// errThrottled: the service asks for time (503 ServerBusy, 429). Stores
	// report it together with ErrTransient.
	errThrottled = errors.New("storage is throttling (server busy)")
	// errRejected: the service refuses the input itself (HTTP 400), so
	// retrying the same entity can never succeed.
	errRejected = errors.New("storage rejected the entity as invalid")
)

// isTransient reports an error worth retrying as is: server busy, internal
// errors, timeouts, connection resets.
func isTransient(err error) bool { return errors.Is(err, ErrTransient) }

// Azure's limits, enforced here because Azurite accepts more.
const (
	maxBatchEntities  = 100      // entities in one entity group transaction
	maxBatchBytes     = 4 << 20  // payload of one entity group transaction
	maxEntityBytes    = 1 << 20  // one entity, as Azure sizes it
	maxProperties     = 252      // custom properties of one entity
	maxStringBytes    = 64 << 10 // one string property, UTF-16 encoded
	maxPropertyName   = 255      // characters in a property name
	batchOverhead     = 2 << 10  // multipart envelope of a transaction
	operationOverhead = 1 << 10  // headers and request line of one operation
	maxTableNameLen   = 63
)

// entitySize is the size Azure counts for an entity: 4 bytes, twice the
// UTF-16 length of each key, and per property 8 bytes plus twice its name
// plus its value (strings as UTF-16 plus 4).
func entitySize(e *Entity) int {
	n := 4 + 2*utf16Len(e.PartitionKey) + 2*utf16Len(e.RowKey)
	for k, v := range e.Props {
		n += 8 + 2*utf16Len(k)
		switch v := v.(type) {
		case string:
			n += 4 + 2*utf16Len(v)
		case bool:
			n++
		case int32:
			n += 4
		default:
			n += 8
		}
	}
	return n
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// checkEntity enforces Azure's limits on one entity: valid keys (shard.ValidKey),
// at most maxProperties properties with valid names and supported types,
// strings of at most 64 KiB in UTF-16, and at most 1 MiB in all.
func checkEntity(e *Entity) error {
	if !shard.ValidKey(e.PartitionKey) {
		return fmt.Errorf("cannot store entity: invalid PartitionKey %q (at most 1 KiB, no / \\ # ? or control characters)", e.PartitionKey)
	}
	if !shard.ValidKey(e.RowKey) {
		return fmt.Errorf("cannot store entity: invalid RowKey %q (at most 1 KiB, no / \\ # ? or control characters)", e.RowKey)
	}
	if len(e.Props) > maxProperties {
		return fmt.Errorf("cannot store entity %s/%s: %d properties, Azure allows %d", e.PartitionKey, e.RowKey, len(e.Props), maxProperties)
	}
	for k, v := range e.Props {
		if !validPropertyName(k) {
			return fmt.Errorf("cannot store entity %s/%s: invalid property name %q (letters, digits and _, not starting with a digit, at most 255)", e.PartitionKey, e.RowKey, k)
		}
		switch v := v.(type) {
		case string:
			if !utf8.ValidString(v) {
				return fmt.Errorf("cannot store entity %s/%s: property %s is not valid UTF-8", e.PartitionKey, e.RowKey, k)
			}
			if 2*utf16Len(v) > maxStringBytes {
				return fmt.Errorf("cannot store entity %s/%s: property %s is over 64 KiB in UTF-16", e.PartitionKey, e.RowKey, k)
			}
		case bool, int32, int64, float64, time.Time:
		default:
			return fmt.Errorf("cannot store entity %s/%s: property %s has unsupported type %T", e.PartitionKey, e.RowKey, k, v)
		}
	}
	if n := entitySize(e); n > maxEntityBytes {
		return fmt.Errorf("cannot store entity %s/%s: %d bytes, Azure allows 1 MiB", e.PartitionKey, e.RowKey, n)
	}
	return nil
}

func validPropertyName(k string) bool {
	if k == "" || len(k) > maxPropertyName || k == "PartitionKey" || k == "RowKey" || k == "Timestamp" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// batchCost is what one entity adds to a transaction's payload: its JSON
// body plus the operation's request line and headers.
func batchCost(e *Entity) int {
	n := len(e.checkedJSON)
	if n == 0 {
		n = entityJSONLen(e)
	}
	return n + operationOverhead + 2*len(e.PartitionKey) + 2*len(e.RowKey)
}

// checkBatch enforces the rules of an entity group transaction: 1 to 100
// entities, one PartitionKey, distinct RowKeys, at most 4 MiB of payload,
// and every entity within checkEntity's limits.
func checkBatch(ents []Entity) error {
	if len(ents) == 0 {
		return errors.New("cannot submit an empty transaction")
	}
	if len(ents) > maxBatchEntities {
		return fmt.Errorf("cannot submit a transaction of %d entities: Azure allows %d", len(ents), maxBatchEntities)
	}
	size := batchOverhead
	rks := make([]string, 0, len(ents))
	for i := range ents {
		e := &ents[i]
		if e.PartitionKey != ents[0].PartitionKey {
			return fmt.Errorf("cannot submit a transaction over two partitions (%q and %q): an entity group transaction is one partition", ents[0].PartitionKey, e.PartitionKey)
		}
		if e.checkedJSON == nil {
			if err := checkEntity(e); err != nil {
				return err
			}
		}
		size += batchCost(e)
		rks = append(rks, e.RowKey)
	}
	if size > maxBatchBytes {
		return fmt.Errorf("cannot submit a transaction of %d bytes: Azure allows 4 MiB", size)
	}
	slices.Sort(rks)
	for i := 1; i < len(rks); i++ {
		if rks[i] == rks[i-1] {
			return fmt.Errorf("cannot submit a transaction with RowKey %q twice", rks[i])
		}
	}
	return nil
}

// checkTableName enforces Azure's table names: 3 to 63 letters and digits,
// starting with a letter.
func checkTableName(name string) error {
	if len(name) < 3 || len(name) > maxTableNameLen {
		return fmt.Errorf("cannot use table name %q: want 3 to 63 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return fmt.Errorf("cannot use table name %q: letters and digits only, starting with a letter", name)
		}
	}
	return nil
}
