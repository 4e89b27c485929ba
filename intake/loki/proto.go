package loki

import (
	"fmt"
	"net/http"

	"ingest/intake"
	"ingest/internal/httperr"
	"ingest/logline"
)

// pbReader reads protobuf wire format: fields one after another.
type pbReader struct {
	b []byte
	i int
}

// Wire types.
const (
	wireVarint = 0
	wire64     = 1
	wireBytes  = 2
	wire32     = 5
)

func (r *pbReader) more() bool { return r.i < len(r.b) }

func (r *pbReader) varint() (uint64, bool) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.i >= len(r.b) {
			return 0, false
		}
		c := r.b[r.i]
		r.i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// field reads the next field's tag.
func (r *pbReader) field() (num int, wire int, ok bool) {
	tag, ok := r.varint()
	if !ok || tag>>3 == 0 || tag>>3 > 1<<29 {
		return 0, 0, false
	}
	return int(tag >> 3), int(tag & 7), true
}

// bytes reads a length-delimited value.
func (r *pbReader) bytes() ([]byte, bool) {
	n, ok := r.varint()
	if !ok || n > uint64(len(r.b)-r.i) {
		return nil, false
	}
	v := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return v, true
}

// skip passes over a value of the given wire type.
func (r *pbReader) skip(wire int) bool {
	switch wire {
	case wireVarint:
		_, ok := r.varint()
		return ok
	case wire64, wire32:
		n := 8
		if wire == wire32 {
			n = 4
		}
		if len(r.b)-r.i < n {
			return false
		}
		r.i += n
		return true
	case wireBytes:
		_, ok := r.bytes()
		return ok
	}
	return false // groups (3, 4) and unknown types: nothing Loki sends
}

// badProto is the error of a body that is not a PushRequest.
func badProto(format string, args ...any) error {
	return httperr.New(http.StatusBadRequest, "cannot decode the protobuf push body: "+format+"; send a snappy-compressed PushRequest", args...)
}

// decodeProto reads a PushRequest: streams = 1.
func (d *Decoder) decodeProto(body []byte, emit func(*logline.Event) error) error {
	r := pbReader{b: body}
	n := 0
	for r.more() {
		num, wire, ok := r.field()
		if !ok {
			return badProto("a field's tag is broken at byte %d", r.i)
		}
		if num != 1 || wire != wireBytes {
			if !r.skip(wire) {
				return badProto("field %d is cut short", num)
			}
			continue
		}
		msg, ok := r.bytes()
		if !ok {
			return badProto("stream %d is cut short", n+1)
		}
		n++
		if err := d.protoStream(msg, n, emit); err != nil {
			return err
		}
	}
	return nil
}

// protoStream reads a StreamAdapter: labels = 1, entries = 2.
func (d *Decoder) protoStream(msg []byte, n int, emit func(*logline.Event) error) error {
	// The labels may come after the entries: find them, and check the
	// framing, first.
	var labels []byte
	entries := 0
	r := pbReader{b: msg}
	for r.more() {
		num, wire, ok := r.field()
		if ok && wire == wireBytes && (num == 1 || num == 2) {
			var v []byte
			if v, ok = r.bytes(); ok && num == 1 {
				labels = v
			} else if ok {
				entries++
			}
		} else if ok {
			ok = r.skip(wire)
		}
		if !ok {
			return badProto("stream %d is broken at byte %d of it", n, r.i)
		}
	}
	d.stream.reset()
	if reason := d.stream.parseLabels(labels); reason != "" {
		for range entries {
			d.entry++
			d.res.reject(d.entry, fmt.Sprintf("stream %d: cannot read its labels %q: %s", n, clip(labels), reason))
		}
		return nil
	}
	d.stream.resolve(d.labels)
	r = pbReader{b: msg}
	for r.more() {
		num, wire, _ := r.field()
		if num != 2 || wire != wireBytes {
			r.skip(wire)
			continue
		}
		entry, _ := r.bytes()
		d.entry++
		if err := d.protoEntry(entry, n, emit); err != nil {
			return err
		}
	}
	return nil
}

// protoEntry reads an EntryAdapter: timestamp = 1, line = 2,
// structuredMetadata = 3.
func (d *Decoder) protoEntry(msg []byte, n int, emit func(*logline.Event) error) error {
	var t int64
	var line []byte
	meta := d.scratch[:0]
	r := pbReader{b: msg}
	for r.more() {
		num, wire, ok := r.field()
		if !ok {
			return badProto("entry %d is broken", d.entry)
		}
		if wire != wireBytes || num < 1 || num > 3 {
			if !r.skip(wire) {
				return badProto("entry %d is broken", d.entry)
			}
			continue
		}
		v, ok := r.bytes()
		if !ok {
			return badProto("entry %d is cut short", d.entry)
		}
		switch num {
		case 1:
			var reason string
			if t, reason = protoTime(v); reason != "" {
				d.res.reject(d.entry, fmt.Sprintf("stream %d: %s", n, reason))
				return nil
			}
		case 2:
			line = v
		case 3:
			if meta, ok = appendProtoPair(meta, v); !ok {
				return badProto("entry %d has broken structured metadata", d.entry)
			}
		}
	}
	d.scratch = meta
	if len(meta) > 0 {
		meta = meta[1:] // appendPair opened the object
	}
	return d.emitEntry(t, line, false, meta, emit)
}

// protoTime reads a google.protobuf.Timestamp: seconds = 1, nanos = 2. A
// missing or zero timestamp is 0, the arrival time.
func protoTime(msg []byte) (int64, string) {
	var secs, nanos int64
	r := pbReader{b: msg}
	for r.more() {
		num, wire, ok := r.field()
		if !ok {
			return 0, "the entry's timestamp is broken"
		}
		if wire != wireVarint || (num != 1 && num != 2) {
			if !r.skip(wire) {
				return 0, "the entry's timestamp is broken"
			}
			continue
		}
		v, ok := r.varint()
		if !ok {
			return 0, "the entry's timestamp is broken"
		}
		if num == 1 {
			secs = int64(v)
		} else {
			nanos = int64(int32(v))
		}
	}
	if nanos < 0 || nanos >= 1e9 {
		return 0, fmt.Sprintf("the entry's timestamp has %d nanoseconds, want 0..999999999", nanos)
	}
	if secs < -9_223_372_035 || secs > 9_223_372_035 || !intake.TimeInRange(secs*1e9+nanos) {
		return 0, fmt.Sprintf("the entry's timestamp %d s is outside the years 1678..2261", secs)
	}
	return secs*1e9 + nanos, ""
}

// appendProtoPair appends a LabelPairAdapter (name = 1, value = 2) as an
// attribute.
func appendProtoPair(dst, msg []byte) ([]byte, bool) {
	var name, value []byte
	r := pbReader{b: msg}
	for r.more() {
		num, wire, ok := r.field()
		if !ok {
			return dst, false
		}
		if wire != wireBytes || (num != 1 && num != 2) {
			if !r.skip(wire) {
				return dst, false
			}
			continue
		}
		v, ok := r.bytes()
		if !ok {
			return dst, false
		}
		if num == 1 {
			name = v
		} else {
			value = v
		}
	}
	return appendPair(dst, name, value), true
}

// clip shortens text quoted in a reason.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
