package group

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"ingest/admission"
	"ingest/buffer"
	"ingest/intake/login"
	"ingest/internal/httperr"
	"ingest/logline"
)

const hourNanos = int64(time.Hour)

// Logins is what grouping needs of the login table sink
// (*tablesink.Sink): it decides an attempt's keys and day table and
// appends its record, or says why the attempt is refused.
type Logins interface {
	AppendRecord(dst []byte, a *login.Attempt) (table string, out []byte, err error)
}

// Rejected is the error of a row refused on its own: the decoder rejects
// that row (with its line or item number and Reason) and goes on.
type Rejected struct{ Reason string }

func (r *Rejected) Error() string { return r.Reason }

// IsRejected reports whether err refuses one row only.
func IsRejected(err error) bool {
	if err == nil {
		return false // before r, which escapes: no allocation on the usual path
	}
	var r *Rejected
	return errors.As(err, &r)
}

// Pool hands out Groupers and holds what they share: the limits, the
// services this instance has taken on, the login sink. Safe for
// concurrent use.
type Pool struct {
	cfg      Config
	logins   Logins
	services services
	groupers sync.Pool
	now      func() int64
}

// NewPool returns a Pool; logins may be nil when no request carries login
// attempts.
func NewPool(cfg Config, logins Logins) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, logins: logins, now: func() int64 { return time.Now().UnixNano() }}
	p.services.max = cfg.MaxNewServicesPerHour
	return p, nil
}

// Get returns an empty Grouper whose memory is reserved from mem.
func (p *Pool) Get(mem admission.Memory) *Grouper {
	g, _ := p.groupers.Get().(*Grouper)
	if g == nil {
		g = &Grouper{pool: p, lastLogin: -1}
	}
	g.mem = mem
	return g
}

// Put empties g and keeps it for another request; its batch must no
// longer be in use. It keeps at most retainBytes of line buffers.
func (p *Pool) Put(g *Grouper) {
	g.reset()
	p.groupers.Put(g)
}

// retainBytes bounds the line buffers a pooled Grouper keeps: pooled
// memory is reserved by no request, so it stays small, yet holds a usual
// request's lines so the next one does not grow them again.
const retainBytes = 4 << 20

// Grouper groups the rows of one request into its buffer.Batch. Not safe
// for concurrent use.
type Grouper struct {
	pool  *Pool
	mem   admission.Memory
	batch buffer.Batch
	enc   logline.Encoder // keeps the last minute's time stamp across events
	// events counts the rows added; groups[i] is what the Grouper keeps of
	// the batch's group i.
	events int
	groups []groupInfo
	// The groups found so far by an event's own service (as sent) and
	// hour, to skip encoding the key of every event. Past maxSeen groups,
	// index finds a group by its key (indexed), instead of a scan.
	seen     []seenGroup
	seenSlot [seenSlots]uint8 // by seenHash: index in seen + 1, or 0
	index    map[string]int   // group key -> index, once indexed
	indexed  bool
	key, svc []byte // scratch: a group's key, a service as stored
	// lastLogin is the index of the group of the previous login attempt,
	// -1 when none; record holds an attempt's record while its day table
	// has no group yet.
	lastLogin int
	record    []byte
	// Refusals of this request, made once.
	tooManyGroups, newService *Rejected
}

// groupInfo is what the Grouper keeps of a group.
type groupInfo struct {
	svcLen  int // the length of the key's service, as stored
	counted int // bytes of the group's data reserved from mem
}

func (g *Grouper) reset() {
	g.batch.Reset(retainBytes)
	g.mem = nil
	g.events = 0
	g.groups = g.groups[:0]
	g.seen = g.seen[:0]
	clear(g.seenSlot[:])
	clear(g.index)
	g.indexed = false
	g.lastLogin = -1
	g.record = g.record[:0]
	if cap(g.record) > retainBytes {
		g.record = nil
	}
	g.tooManyGroups, g.newService = nil, nil
}

// Batch is the request's batch, for the buffer.
func (g *Grouper) Batch() *buffer.Batch { return &g.batch }

// Events is how many rows (log events and login attempts) were added.
func (g *Grouper) Events() int { return g.events }

// count counts one more row, or refuses the request past its cap.
func (g *Grouper) count() error {
	if g.events++; g.events > g.pool.cfg.MaxEventsPerRequest {
		return TooManyEvents(g.pool.cfg.MaxEventsPerRequest)
	}
	return nil
}

// TooManyEvents is the refusal of a request of more than max rows
// (--max-events-per-request), a 413: a decoder that rejects rows itself
// counts them against the same cap (MaxEvents), so a body of millions of
// bad lines is refused, not parsed to its end.
func TooManyEvents(max int) error {
	return httperr.New(http.StatusRequestEntityTooLarge,
		"cannot accept the request: it holds more than %d events (--max-events-per-request); split it into smaller requests, or raise --max-events-per-request", max)
}

// MaxEvents is the cap on the rows of a request (--max-events-per-request).
func (p *Pool) MaxEvents() int { return p.cfg.MaxEventsPerRequest }

// seenGroup maps an event's service as sent and its hour to its group.
type seenGroup struct {
	svc  []byte
	hour int64
	idx  int // in the batch's groups and g.groups
}

// maxSeen bounds the groups looked up by the event's own service: past
// it, the key is encoded and looked up in index.
const maxSeen = 64

// seenSlots is the size of the index of seen: a power of two above
// maxSeen, so that services rarely share a slot.
const seenSlots = 128

// seenHash picks the slot of a service as sent and an hour from a few of
// the name's bytes: a slot says where to look, the entry there decides.
func seenHash(svc []byte, hour int64) int {
	h := uint64(len(svc)) ^ uint64(hour)<<8
	if n := len(svc); n > 0 {
		h ^= uint64(svc[0])<<16 | uint64(svc[n/2])<<24 | uint64(svc[n-1])<<32
	}
	return int((h * 0x9e3779b97f4a7c15) >> (64 - 7))
}

// AddEvent encodes e into the group of its service and hour. It is the
// decoders' emit callback: a *Rejected error refuses e alone (its group
// would pass a cap), any other error ends the request (too many events,
// memory refused). e is read during the call only; its Service is
// rewritten to the name as stored.
func (g *Grouper) AddEvent(e *logline.Event) error {
	if g.events++; g.events > g.pool.cfg.MaxEventsPerRequest { // count, by hand: this runs per event
		return TooManyEvents(g.pool.cfg.MaxEventsPerRequest)
	}
	hour := e.Time / hourNanos
	if e.Time < 0 && e.Time%hourNanos != 0 {
		hour--
	}
	i, ok := g.findGroup(e.Service, hour)
	if !ok {
		var err error
		if i, err = g.addGroup(e, hour); err != nil {
			return err
		}
	}
	gr := &g.batch.Groups()[i]
	info := &g.groups[i]
	e.Service = gr.Key[:info.svcLen] // the line names the service as its blob does
	e.ServiceToken = true
	if need := len(gr.Data) + lineBound(e); need > info.counted || need > cap(gr.Data) {
		if err := g.room(info, &gr.Data, lineBound(e)); err != nil {
			return err
		}
	}
	gr.Data = g.enc.AppendLine(gr.Data, e)
	gr.Events++
	gr.Lines.Add(e.Time, e.Level) // the blob's metadata, without reading the lines back
	return nil
}

// lineBound is at least the length of e's line: its fixed fields, the
// tokens at their caps, the message quoted at six bytes a byte (\u00XX).
func lineBound(e *logline.Event) int {
	n := 64 + 3*logline.MaxTokenLen + len(e.Attrs)
	if e.MessagePlain {
		return n + len(e.Message)
	}
	return n + 6*len(e.Message)
}

// findGroup returns the index of the group of events of service svc (as
// sent) and hour, when a previous event of the request found it.
func (g *Grouper) findGroup(svc []byte, hour int64) (int, bool) {
	slot := seenHash(svc, hour)
	if k := int(g.seenSlot[slot]) - 1; k >= 0 {
		if sg := &g.seen[k]; sg.hour == hour && bytes.Equal(sg.svc, svc) {
			return sg.idx, true
		}
	}
	// Another service's entry in the slot, or none: look through them all.
	for k := range g.seen {
		if sg := &g.seen[k]; sg.hour == hour && bytes.Equal(sg.svc, svc) {
			g.seenSlot[slot] = uint8(k + 1)
			return sg.idx, true
		}
	}
	return 0, false
}

// addGroup finds or adds the group of e's key (service as stored, hour
// prefix) and remembers it under e's service as sent; it returns the
// group's index, or a *Rejected error when a new group would pass a cap.
func (g *Grouper) addGroup(e *logline.Event, hour int64) (int, error) {
	g.svc = logline.AppendService(g.svc[:0], e.Service)
	svcLen := len(g.svc)
	g.key = append(append(g.key[:0], g.svc...), '/')
	g.key = logline.HourPrefix(g.key, e.Time)
	idx, ok := g.lookup(buffer.StreamLogs, g.key)
	if !ok {
		var err error
		if idx, err = g.newGroup(buffer.StreamLogs, g.key, svcLen); err != nil {
			return 0, err
		}
	}
	if len(g.seen) < maxSeen {
		if len(g.seen) < cap(g.seen) {
			g.seen = g.seen[:len(g.seen)+1] // reuse the entry's memory
		} else {
			g.seen = append(g.seen, seenGroup{})
		}
		sg := &g.seen[len(g.seen)-1]
		sg.svc, sg.hour, sg.idx = append(sg.svc[:0], e.Service...), hour, idx
		g.seenSlot[seenHash(e.Service, hour)] = uint8(len(g.seen))
	}
	return idx, nil
}

// newGroup adds a group for key, within the request's cap on service hours
// and the instance's on new services, and reserves what it takes.
func (g *Grouper) newGroup(stream buffer.Stream, key []byte, svcLen int) (int, error) {
	cfg := &g.pool.cfg
	if stream == buffer.StreamLogs {
		if len(g.groups) >= cfg.MaxServiceHoursPerRequest {
			if g.tooManyGroups == nil {
				g.tooManyGroups = &Rejected{fmt.Sprintf("cannot accept the event: the request already writes %d services and hours (--max-service-hours-per-request counts a service once per UTC hour of its events); send it in another request, or raise the flag", cfg.MaxServiceHoursPerRequest)}
			}
			return 0, g.tooManyGroups
		}
		if !g.pool.services.admit(key[:svcLen], g.pool.now()) {
			if g.newService == nil {
				g.newService = &Rejected{fmt.Sprintf("cannot accept the event: this instance took on %d new services this hour (--max-new-services-per-hour); retry after the hour, or raise the flag", cfg.MaxNewServicesPerHour)}
			}
			return 0, g.newService
		}
	}
	// The group's header in the batch and the WAL record, and its key in
	// the index.
	if err := g.mem.Reserve(int64(groupOverhead + 2*len(key))); err != nil {
		return 0, err
	}
	idx := g.batch.Add(stream, key)
	g.groups = append(g.groups, groupInfo{svcLen: svcLen})
	switch {
	case g.indexed:
		g.index[string(key)] = idx
	case len(g.groups) > maxSeen:
		if g.index == nil {
			g.index = make(map[string]int)
		}
		for i, gr := range g.batch.Groups() {
			g.index[string(gr.Key)] = i
		}
		g.indexed = true
	}
	return idx, nil
}

// lookup finds the group of key in the batch. The keys of the two streams
// never collide (a log group's key holds a '/', a day table's name none).
func (g *Grouper) lookup(stream buffer.Stream, key []byte) (int, bool) {
	if g.indexed {
		i, ok := g.index[string(key)]
		return i, ok
	}
	for i := range g.batch.Groups() {
		if gr := &g.batch.Groups()[i]; gr.Stream == stream && bytes.Equal(gr.Key, key) {
			return i, true
		}
	}
	return 0, false
}

// groupOverhead is about what a group costs besides its key and lines: its
// buffer.Group, its entries here and in the buffer's WAL record.
const groupOverhead = 256

// room makes room for n more bytes in data, a group's lines, reserving
// them first (admission.Grow).
func (g *Grouper) room(info *groupInfo, data *[]byte, n int) error {
	var err error
	*data, err = admission.Grow(g.mem, *data, n, 0, &info.counted)
	return err
}

// AddLogin encodes a into the group of its day table. It is ParseLogins'
// emit callback: a *Rejected error refuses a alone (the sink refuses it:
// past the retention, over Azure's limits), any other error ends the
// request. The attempt is encoded once, straight into its group when it
// shares the previous attempt's day, as most do.
func (g *Grouper) AddLogin(a *login.Attempt) error {
	if g.pool.logins == nil {
		return httperr.New(http.StatusServiceUnavailable, "cannot accept login attempts: this server has no table store for them")
	}
	if err := g.count(); err != nil {
		return err
	}
	bound := recordBound(a)
	last := g.lastLogin
	// Encode into the previous attempt's group, else into record: one
	// record, whose fields are at most a line of the body, not reserved.
	data := &g.record
	if last >= 0 {
		data = &g.batch.Groups()[last].Data
		if err := g.room(&g.groups[last], data, bound); err != nil {
			return err
		}
	} else {
		g.record = slices.Grow(g.record[:0], bound)
	}
	start := len(*data)
	table, out, err := g.pool.logins.AppendRecord(*data, a)
	if err != nil {
		return &Rejected{err.Error()}
	}
	if last >= 0 && string(g.batch.Groups()[last].Key) == table {
		*data = out
		g.batch.Groups()[last].Events++
		return nil
	}
	// Another day than the previous attempt's: move the record to its
	// table's group.
	rec := out[start:]
	*data = out[:start]
	i, ok := g.lookup(buffer.StreamLogins, []byte(table))
	if !ok {
		if i, err = g.newGroup(buffer.StreamLogins, []byte(table), 0); err != nil {
			return err
		}
	}
	gr := &g.batch.Groups()[i]
	if err := g.room(&g.groups[i], &gr.Data, len(rec)); err != nil {
		return err
	}
	gr.Data = append(gr.Data, rec...)
	gr.Events++
	g.lastLogin = i
	return nil
}

// recordBound is at least the length of a's record: its keys (the user
// and id escaped, then quoted) and its fields quoted.
func recordBound(a *login.Attempt) int {
	return 128 + 18*(len(a.User)+len(a.ID)) + 6*(len(a.IP)+len(a.UA)) + len(a.Props)
}
