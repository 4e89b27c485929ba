package loki

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ingest/intake"
	"ingest/intake/group"
	"ingest/internal/httperr"
	"ingest/logline"
)

// Config holds the push settings.
type Config struct {
	// ServiceLabels are the labels that name an entry's service, comma
	// separated, the first a stream has winning; "": the default.
	ServiceLabels string
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{ServiceLabels: "service_name,service,app,job"}
}

// RegisterFlags adds the push flags to fs, with c's values as defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.ServiceLabels, "loki-service-labels", c.ServiceLabels,
		"Loki push: the stream labels that name the service, comma separated, in order of preference (the first a stream has wins; none: \"default\")")
}

// Validate checks the settings.
func (c *Config) Validate() error {
	for _, l := range c.Labels() {
		if l == "" || strings.ContainsAny(l, "{}=\" \t") {
			return fmt.Errorf("cannot use --loki-service-labels %q: want label names, comma separated", c.ServiceLabels)
		}
	}
	return nil
}

// Labels returns the service labels as a list, for Decode.
func (c Config) Labels() []string {
	if c.ServiceLabels == "" {
		c = DefaultConfig()
	}
	return strings.Split(c.ServiceLabels, ",")
}

// Format is the encoding of a push body.
type Format uint8

// The push body encodings.
const (
	FormatProtobuf Format = iota + 1 // a PushRequest, snappy-compressed on the wire
	FormatJSON
)

// DetectFormat tells a push body's encoding from its Content-Type:
// application/x-protobuf (or application/protobuf) is protobuf,
// application/json or none is JSON; anything else is a 415.
func DetectFormat(contentType string) (Format, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	switch mt = strings.TrimSpace(mt); {
	case strings.EqualFold(mt, "application/x-protobuf"), strings.EqualFold(mt, "application/protobuf"):
		return FormatProtobuf, nil
	case mt == "", strings.EqualFold(mt, "application/json"):
		return FormatJSON, nil
	}
	return 0, httperr.New(http.StatusUnsupportedMediaType,
		"cannot read a Loki push of Content-Type %q: send application/x-protobuf (snappy) or application/json", contentType)
}

// Result counts the entries of one push.
type Result struct {
	Accepted int
	Rejected int
	Errors   []intake.LineError // the first intake.MaxErrors rejections; Line is the entry's number
}

func (r *Result) reject(entry int, reason string) {
	r.Rejected++
	if len(r.Errors) < intake.MaxErrors {
		r.Errors = append(r.Errors, intake.LineError{Line: entry, Error: reason})
	}
}

// Message is the answer to a push that rejected entries: how many, and
// the first reasons.
func (r *Result) Message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d entries rejected", r.Rejected, r.Accepted+r.Rejected)
	for i, e := range r.Errors {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "; entry %d: %s", e.Line, e.Error)
	}
	return b.String()
}

// Decoder decodes push bodies. The zero value is ready; a Decoder is not
// safe for concurrent use. Reuse one (pool it) so its scratch space is
// reused too.
type Decoder struct {
	ev      logline.Event
	ids     intake.IDs
	now     int64
	labels  []string // the service labels
	res     Result
	entry   int // entries read so far in the request
	stream  stream
	attrs   []byte
	id      []byte
	json    jsonState
	scratch []byte // a JSON line or metadata value with escapes, unescaped
}

// errStop carries an error of emit out of a walk.
type errStop struct{ err error }

// Decode reads a push body (protobuf already snappy-decoded) and calls
// emit once per accepted entry, in body order; the event and its bytes are
// valid only during the call. serviceLabels is Config.Labels(). A non-nil error from emit ends decoding and
// is returned. A body broken as a whole is a 400 *httperr.Error. The
// Result's Errors are reused by the next Decode.
func (d *Decoder) Decode(body []byte, f Format, serviceLabels []string, now int64, emit func(*logline.Event) error) (Result, error) {
	if now == 0 {
		now = time.Now().UnixNano()
	}
	d.now, d.labels, d.entry = now, serviceLabels, 0
	d.res = Result{Errors: d.res.Errors[:0]}
	d.ids.Reset()
	var err error
	switch f {
	case FormatProtobuf:
		err = d.decodeProto(body, emit)
	case FormatJSON:
		err = d.decodeJSON(body, emit)
	default:
		err = httperr.New(http.StatusUnsupportedMediaType, "cannot read a Loki push: unknown format %d", f)
	}
	if stop, ok := err.(errStop); ok {
		err = stop.err
	}
	return d.res, err
}

func (e errStop) Error() string { return e.err.Error() }

// emitEntry finishes the event of the current stream's entry with time t
// (0: the arrival time), message line (plain: nothing in it to escape) and
// the metadata attributes meta (members without the opening brace), and
// hands it to emit.
func (d *Decoder) emitEntry(t int64, line []byte, plain bool, meta []byte, emit func(*logline.Event) error) error {
	ev := &d.ev
	ev.Reset()
	s := &d.stream
	ev.Time = t
	if t == 0 {
		ev.Time = d.now
	}
	ev.Service, ev.Host, ev.Level, ev.Message, ev.MessagePlain = s.service, s.host, s.level, line, plain
	switch {
	case len(meta) == 0 && len(s.attrs) > 0:
		ev.Attrs = s.attrs // the stream's labels alone: no copy
	case len(meta) > 0 && len(s.attrs) > 0:
		d.attrs = append(append(append(d.attrs[:0], s.attrs[:len(s.attrs)-1]...), ','), meta...)
		d.attrs = append(d.attrs, '}')
		ev.Attrs = d.attrs
	case len(meta) > 0:
		d.attrs = append(append(append(d.attrs[:0], '{'), meta...), '}')
		ev.Attrs = d.attrs
	}
	d.id = d.ids.Next(d.id[:0], d.now)
	ev.ID = d.id
	if err := emit(ev); group.IsRejected(err) {
		// A cap on this entry alone (its service past the request's or
		// the hour's limit): the others are kept.
		d.res.reject(d.entry, err.Error())
		return nil
	} else if err != nil {
		return errStop{err}
	}
	d.res.Accepted++
	return nil
}

// Release drops scratch space grown past keep bytes, for a Decoder kept
// in a pool, and forgets the last body.
func (d *Decoder) Release(keep int) {
	for _, b := range []*[]byte{&d.attrs, &d.id, &d.scratch, &d.stream.buf, &d.stream.attrs, &d.json.meta} {
		if cap(*b) > keep {
			*b = nil
		}
	}
	if cap(d.stream.labels) > keep/32 {
		d.stream.labels = nil
	}
	clear(d.stream.labels[:cap(d.stream.labels)]) // keep no body alive from the pool
	d.json.idx.Release(keep)
	d.ev.Reset()
	d.stream.reset()
	d.labels = nil
}
