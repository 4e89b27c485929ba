package blobsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ingest/internal/disk"
	"ingest/internal/pagecache"
)

// FileStore is the embedded Store: each blob is a file under Root (the blob
// name is its relative path) and its metadata a hidden sidecar file beside it
// (".NAME.meta", filemeta.go). Appends are fsync'd before they return, so a flushed
// block survives kill -9 and power loss alike.
//
// One process owns a FileStore's root at a time (the server locks its data
// directory); readers such as `ingest ls` may run beside it.
type FileStore struct {
	Root string
}

// NewFileStore creates root if needed.
func NewFileStore(root string) (*FileStore, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create blob directory %s: %w", root, err)
	}
	return &FileStore{Root: root}, nil
}

// path is where the blob name lives under Root. A name is a relative
// slash-separated path without empty, dot or hidden segments, so no name
// reaches outside Root or a metadata sidecar.
func (s *FileStore) path(name string) (string, error) {
	if why := badPath(name); why != "" {
		return "", fmt.Errorf("cannot use blob name %q: %s", name, why)
	}
	return filepath.Join(s.Root, filepath.FromSlash(name)), nil
}

// badPath says why name is no path under Root, or returns "".
func badPath(name string) string {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return "not a relative slash-separated path"
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || strings.HasPrefix(part, ".") {
			return "empty, dot or hidden path segment"
		}
	}
	return ""
}

// Create implements Store.
func (s *FileStore) Create(_ context.Context, name string, meta map[string]string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	// The exclusive create is the claim; the metadata follows. A crash in
	// between leaves a blob without metadata, which readers treat as
	// "may hold anything" and read.
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := writeMeta(p, meta); err != nil {
		return err
	}
	return disk.SyncDir(filepath.Dir(p))
}

// Append implements Store.
func (s *FileStore) Append(_ context.Context, name string, offset int64, block ...[]byte) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != offset {
		return ErrAppendPosition
	}
	end := offset
	for _, p := range block {
		if _, err := f.WriteAt(p, end); err != nil {
			// Leave no partial block behind: the append either lands whole or not.
			_ = f.Truncate(offset)
			return err
		}
		end += int64(len(p))
	}
	if err := f.Sync(); err != nil {
		return err
	}
	pagecache.Drop(f, offset, end-offset)
	return nil
}

// ReadRange returns n bytes of the blob from offset (io.ErrUnexpectedEOF
// when it is shorter).
func (s *FileStore) ReadRange(_ context.Context, name string, offset int64, n int) ([]byte, error) {
	f, err := s.openFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Truncate cuts a blob back to size. Only the embedded store can do this;
// recovery uses it to drop a block torn by a power loss mid-append.
func (s *FileStore) Truncate(_ context.Context, name string, size int64) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	return os.Truncate(p, size)
}

// SetMetadata implements Store.
func (s *FileStore) SetMetadata(_ context.Context, name string, meta map[string]string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	created, err := writeMeta(p, meta)
	if err == nil && created {
		err = disk.SyncDir(filepath.Dir(p))
	}
	return err
}

// Stat implements Store. Blocks is always 0: the block limit is Azure's.
func (s *FileStore) Stat(_ context.Context, name string) (BlobInfo, error) {
	p, err := s.path(name)
	if err != nil {
		return BlobInfo{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return BlobInfo{}, ErrNotFound
	}
	if err != nil {
		return BlobInfo{}, err
	}
	return BlobInfo{Name: name, Size: st.Size(), Metadata: readMeta(p)}, nil
}

// List implements Store. It walks only the directory the prefix names,
// which must be a path under Root as a blob name is ("../" is refused).
func (s *FileStore) List(ctx context.Context, prefix string, fn func(BlobInfo) error) error {
	dir := s.Root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if why := badPath(prefix[:i]); why != "" {
			return fmt.Errorf("cannot list blobs under %q: its folders are %s; blob names have none", prefix, why)
		}
		dir = filepath.Join(s.Root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(s.Root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			// Skip directories that cannot hold a name with the prefix.
			if p != dir && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return fn(BlobInfo{Name: name, Size: info.Size(), Metadata: readMeta(p)})
	})
	return err
}

// Open implements Store.
func (s *FileStore) Open(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := s.openFile(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// openFile opens the blob's file for reading (ErrNotFound when it is absent).
func (s *FileStore) openFile(name string) (*os.File, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListTop returns the top-level folders (the services).
func (s *FileStore) ListTop(context.Context) ([]string, error) {
	ents, err := os.ReadDir(s.Root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
