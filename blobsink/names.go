package blobsink

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Compression of each flushed block. With zstd or gzip every flush is one
// independent frame, so a blob is a concatenation of frames that any
// multi-frame reader decodes.
type Compression string

const (
	CompressNone Compression = ""
	CompressZstd Compression = "zstd"
	CompressGzip Compression = "gzip"
)

// Ext is the blob name suffix for the compression.
func (c Compression) Ext() string {
	switch c {
	case CompressZstd:
		return ".log.zst"
	case CompressGzip:
		return ".log.gz"
	}
	return ".log"
}

// CompressionOf tells a blob's compression from its name.
func CompressionOf(name string) Compression {
	switch {
	case strings.HasSuffix(name, ".log.zst"):
		return CompressZstd
	case strings.HasSuffix(name, ".log.gz"):
		return CompressGzip
	}
	return CompressNone
}

// HourLayout is the hour part of a blob name.
const HourLayout = "2006/01/02/1500"

// HourPrefix is "{service}/{YYYY}/{MM}/{DD}/{hh}00" for the hour holding t.
func HourPrefix(service string, t time.Time) string {
	return service + "/" + t.UTC().Format(HourLayout)
}

// BlobName is "{prefix}/{NNNNNN}{ext}": the seq-th blob of an hour prefix.
func BlobName(prefix string, seq int, c Compression) string {
	return fmt.Sprintf("%s/%06d%s", prefix, seq, c.Ext())
}

// ParseBlobName splits a blob name into its hour prefix and sequence number.
func ParseBlobName(name string) (prefix string, seq int, ok bool) {
	slash := strings.LastIndexByte(name, '/')
	if slash < 0 {
		return "", 0, false
	}
	base := name[slash+1:]
	dot := strings.IndexByte(base, '.')
	if dot < 0 || !strings.HasPrefix(base[dot:], ".log") {
		return "", 0, false
	}
	n, err := strconv.Atoi(base[:dot])
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return name[:slash], n, true
}
