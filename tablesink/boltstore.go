package tablesink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltStore is the embedded Store: one bbolt database file, one bucket per
// table (named in lower case: table names are case-insensitive, as on
// Azure), keys PartitionKey 0x00 RowKey so a cursor walks entities in
// Azure's order (keys never contain control characters), values an 8-byte
// version followed by the entity's JSON. The version is the bucket's
// sequence at the last write, which makes the ETag. A Batch is one bolt
// transaction (concurrent batches are coalesced with bolt's DB.Batch, one
// fsync for several; pages split 90% full, see batchFillPercent) and
// DeleteTable one DeleteBucket, whose pages go to bolt's free list for
// the next days' tables (the file never shrinks: it stays at its largest
// retention's worth).
type BoltStore struct {
	db      *bolt.DB
	parsers fastjson.ParserPool
}

// OpenBolt opens (creating) the database at path, for example
// storage.Config.TableFile().
func OpenBolt(path string) (*BoltStore, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the table store directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("cannot open the table store %s: %w (is another ingest using this --data-dir?)", path, err)
	}
	return &BoltStore{db: db}, nil
}

// Close closes the database.
func (s *BoltStore) Close() error { return s.db.Close() }

// batchFillPercent is how full bolt fills a leaf page when it splits one
// at a commit of login writes (bolt's default is half). Login keys arrive
// in no order within a bucket, a flush puts a few hundred keys in every
// bucket at once, and a half-full page split that way stays half full for
// good: the table would take about twice its entities' size. A later
// insert into a full page splits it again. Sizes in docs/performance.md.
const batchFillPercent = 0.9

func bucketName(table string) []byte { return []byte(strings.ToLower(table)) }

func boltKey(dst []byte, pk, rk string) []byte {
	dst = append(dst, pk...)
	dst = append(dst, 0)
	return append(dst, rk...)
}

func boltETag(ver uint64) string { return `W/"` + strconv.FormatUint(ver, 10) + `"` }

// CreateTable implements Store.
func (s *BoltStore) CreateTable(_ context.Context, name string) error {
	if err := checkTableName(name); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName(name))
		return err
	})
}

// DeleteTable implements Store.
func (s *BoltStore) DeleteTable(_ context.Context, name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		err := tx.DeleteBucket(bucketName(name))
		if errors.Is(err, berrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// ListTables implements Store.
func (s *BoltStore) ListTables(_ context.Context, prefix string) ([]string, error) {
	var names []string
	p := bucketName(prefix)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			names = append(names, string(k))
		}
		return nil
	})
	return names, err
}

// Batch implements Store.
func (s *BoltStore) Batch(ctx context.Context, table string, ents []Entity) error {
	return s.Batches(ctx, table, [][]Entity{ents})
}

// Batches implements multiBatcher: every batch is checked as an entity
// group transaction, then all are written in one bolt transaction.
// Concurrent calls are coalesced by bolt's DB.Batch (one fsync for several).
func (s *BoltStore) Batches(_ context.Context, table string, batches [][]Entity) error {
	var vals [][]byte
	for _, ents := range batches {
		if err := checkBatch(ents); err != nil {
			return err
		}
		for i := range ents {
			vals = append(vals, appendEntityValue(make([]byte, 8, 256), &ents[i]))
		}
	}
	return s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(table))
		if b == nil {
			return fmt.Errorf("cannot write to table %s: %w", table, ErrTableNotFound)
		}
		b.FillPercent = batchFillPercent
		ver, err := b.NextSequence()
		if err != nil {
			return err
		}
		var key []byte
		v := 0
		for _, ents := range batches {
			for i := range ents {
				binary.BigEndian.PutUint64(vals[v], ver)
				key = boltKey(key[:0], ents[i].PartitionKey, ents[i].RowKey)
				if err := b.Put(key, vals[v]); err != nil {
					return err
				}
				v++
			}
		}
		return nil
	})
}

// appendEntityValue writes the stored value after dst's 8 version bytes:
// the properties as JSON (the keys are in the bolt key).
func appendEntityValue(dst []byte, e *Entity) []byte {
	dst = append(dst, '{')
	return appendProps(dst, e.Props, false)
}

func (s *BoltStore) decode(pk, rk string, v []byte) (Entity, error) {
	if len(v) < 8 {
		return Entity{}, fmt.Errorf("cannot read entity %s/%s: stored value too short", pk, rk)
	}
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	e, err := decodeEntityJSON(p, v[8:])
	e.PartitionKey, e.RowKey, e.ETag = pk, rk, boltETag(binary.BigEndian.Uint64(v))
	return e, err
}

// Query implements Store.
func (s *BoltStore) Query(_ context.Context, table, pk, rowFrom, rowTo string, top int) ([]Entity, error) {
	var out []Entity
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(table))
		if b == nil {
			return fmt.Errorf("cannot query table %s: %w", table, ErrTableNotFound)
		}
		prefix := boltKey(nil, pk, "")
		var end []byte
		if rowTo != "" {
			end = boltKey(nil, pk, rowTo)
		}
		c := b.Cursor()
		for k, v := c.Seek(boltKey(nil, pk, rowFrom)); k != nil && bytes.HasPrefix(k, prefix) && len(out) < top; k, v = c.Next() {
			if end != nil && bytes.Compare(k, end) >= 0 {
				break
			}
			e, err := s.decode(pk, string(k[len(prefix):]), v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// Get implements Store.
func (s *BoltStore) Get(_ context.Context, table, pk, rk string) (Entity, error) {
	var e Entity
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(table))
		if b == nil {
			return fmt.Errorf("cannot read from table %s: %w", table, ErrTableNotFound)
		}
		v := b.Get(boltKey(nil, pk, rk))
		if v == nil {
			return errNotFound
		}
		var err error
		e, err = s.decode(pk, rk, v)
		return err
	})
	return e, err
}

// Insert implements Store.
func (s *BoltStore) Insert(_ context.Context, table string, e Entity) (string, error) {
	if err := checkEntity(&e); err != nil {
		return "", err
	}
	val := appendEntityValue(make([]byte, 8, 256), &e)
	var etag string
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(table))
		if b == nil {
			return fmt.Errorf("cannot write to table %s: %w", table, ErrTableNotFound)
		}
		key := boltKey(nil, e.PartitionKey, e.RowKey)
		if b.Get(key) != nil {
			return errExists
		}
		ver, err := b.NextSequence()
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint64(val, ver)
		etag = boltETag(ver)
		return b.Put(key, val)
	})
	return etag, err
}

// Merge implements Store.
func (s *BoltStore) Merge(_ context.Context, table string, e Entity, etag string) (string, error) {
	if err := checkEntity(&e); err != nil {
		return "", err
	}
	var newTag string
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(table))
		if b == nil {
			return fmt.Errorf("cannot write to table %s: %w", table, ErrTableNotFound)
		}
		key := boltKey(nil, e.PartitionKey, e.RowKey)
		v := b.Get(key)
		if v == nil {
			return errNotFound
		}
		old, err := s.decode(e.PartitionKey, e.RowKey, v)
		if err != nil {
			return err
		}
		if etag != "*" && old.ETag != etag {
			return errPrecondition
		}
		for k, v := range e.Props {
			old.Props[k] = v
		}
		if err := checkEntity(&old); err != nil {
			return err
		}
		ver, err := b.NextSequence()
		if err != nil {
			return err
		}
		val := appendEntityValue(make([]byte, 8, 256), &old)
		binary.BigEndian.PutUint64(val, ver)
		newTag = boltETag(ver)
		return b.Put(key, val)
	})
	return newTag, err
}
