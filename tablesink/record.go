package tablesink

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"ingest/intake/login"
	"ingest/internal/jsonstr"
	"ingest/logline"
	"ingest/shard"
)

// Attempt is login.Attempt under the name the readers of Tail's answers
// used before the type had a package of its own.
type Attempt = login.Attempt

// quickStringBytes is the length up to which a string field surely fits
// Azure's 64 KiB per string property (UTF-16 takes at most two bytes per
// byte of UTF-8), so only longer ones are measured.
const quickStringBytes = maxStringBytes / 2

var errNotObject = errors.New("cannot accept login attempt: its other fields are not a JSON object")

// AppendRecord decides the attempt's keys and appends one self-contained,
// '\n'-terminated record to dst for the buffer to hold until Flush. key is
// the attempt's day table (the buffer groups records per key). The
// PartitionKey is chosen here, at intake, with the current time feeding the
// hot-user estimate: the record carries it, so a replay of the buffer's
// write-ahead log reuses it and the upsert stays idempotent. Attempts older
// than the retention (their table is or will soon be deleted, and a deleted
// table's name is never reused) or more than a day in the future are
// refused, as are keys or fields over Azure's limits.
//
// The record is compact JSON:
//
//	{"pk":"001e","rk":"alice@example.com~8584063226403541240_01JDQ8","s":false,"ip":"10.0.0.1","ua":"curl/8","p":{"country":"fr"}}
//
// The user, the time (to 100 ns, Azure's DateTime resolution) and the id
// are read back from the RowKey: records stay small, so a --flush-bytes
// chunk holds more attempts and fills more of each bucket's transaction.
func (s *Sink) AppendRecord(dst []byte, a *login.Attempt) (key string, out []byte, err error) {
	now := s.now().UnixNano()
	day, today := dayOf(a.Time), dayOf(now)
	switch {
	case len(a.User) == 0:
		return "", dst, errors.New("cannot accept login attempt: no user")
	case today-day > int64(s.cfg.RetentionDays):
		return "", dst, fmt.Errorf("cannot accept login attempt from %s: older than --login-retention-days (%d)", dayTime(day).Format(time.DateOnly), s.cfg.RetentionDays)
	case day > today+1:
		return "", dst, fmt.Errorf("cannot accept login attempt from %s: more than a day ahead of this server's clock (check the client's clock)", dayTime(day).Format(time.DateOnly))
	}
	for _, f := range [...]struct {
		name string
		v    []byte
	}{{"ip", a.IP}, {"ua", a.UA}, {"id", a.ID}, {"user", a.User}, {"the other fields", a.Props}} {
		if len(f.v) > quickStringBytes && 2*utf16Len(string(f.v)) > maxStringBytes {
			return "", dst, fmt.Errorf("cannot accept login attempt: %s over 64 KiB in UTF-16 (Azure's limit for a property)", f.name)
		}
	}
	if len(a.Props) > 0 && a.Props[0] != '{' {
		return "", dst, errNotObject
	}

	sc := s.scratch.Get().(*[]byte)
	defer s.scratch.Put(sc)
	buf := s.keyer.PartitionKey((*sc)[:0], a.User, a.ID, now)
	n := len(buf)
	buf = shard.RowKey(buf, a.User, a.Time, a.ID)
	*sc = buf
	pk, rk := buf[:n], buf[n:]
	// Escaped keys hold no forbidden character; only their length can
	// exceed Azure's limit, and up to 512 bytes it cannot.
	if len(rk) > shard.MaxKeyBytes/2 && !shard.ValidKey(string(rk)) {
		return "", dst, fmt.Errorf("cannot accept login attempt: a user of %d bytes and an id of %d bytes make a RowKey over Azure's 1 KiB", len(a.User), len(a.ID))
	}

	mark := len(dst)
	dst = append(dst, `{"pk":`...)
	dst = logline.AppendQuoted(dst, pk)
	dst = append(dst, `,"rk":`...)
	dst = logline.AppendQuoted(dst, rk)
	if a.HasSuccess {
		dst = append(dst, `,"s":`...)
		dst = strconv.AppendBool(dst, a.Success)
	}
	if len(a.IP) > 0 {
		dst = append(dst, `,"ip":`...)
		dst = logline.AppendQuoted(dst, a.IP)
	}
	if len(a.UA) > 0 {
		dst = append(dst, `,"ua":`...)
		dst = logline.AppendQuoted(dst, a.UA)
	}
	if len(a.Props) > 0 {
		dst = append(dst, `,"p":`...)
		var end int
		var reason string
		if dst, end, reason = jsonstr.AppendValue(dst, a.Props, 0, 0); reason != "" || end != len(a.Props) {
			return "", dst[:mark], errNotObject
		}
	}
	dst = append(dst, "}\n"...)
	return s.dayTable(day), dst, nil
}

// record is what a record line holds: views of the line, or for a string
// with escapes, of its text in the arena; props is the "p" object,
// compact, in the arena's scratch.
type record struct {
	pk, rk, ip, ua      []byte
	user, id            []byte // of the first key scheme's records
	t                   int64  // of the first key scheme's records
	success, hasSuccess bool
	props               []byte
}

// parseRecord reads a record line as AppendRecord wrote it, through x.
func parseRecord(x *jsonstr.Index, a *arena, line []byte) (r record, err error) {
	x.Reset(line)
	i := jsonstr.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return r, errors.New("cannot parse login record: " + jsonstr.SyntaxError(line, i, "'{'"))
	}
	str := func(v int, dst *[]byte) (int, string) {
		end, fl := x.Scan(v)
		if line[v] != '"' || end < 0 {
			return v, jsonstr.SyntaxError(line, v, "a string")
		}
		if *dst = line[v+1 : end-1]; fl&jsonstr.Escape != 0 {
			*dst = a.bytes(jsonstr.Unescape(a.scratch[:0], *dst))
		}
		return end, ""
	}
	end, reason := x.Object(i, &a.key, func(key, _ []byte, _ jsonstr.Flags, _, v int) (int, string) {
		switch string(key) {
		case "pk":
			return str(v, &r.pk)
		case "rk":
			return str(v, &r.rk)
		case "ip":
			return str(v, &r.ip)
		case "ua":
			return str(v, &r.ua)
		case "u":
			return str(v, &r.user)
		case "id":
			return str(v, &r.id)
		case "s":
			for _, w := range [...]string{"true", "false"} {
				if end := jsonstr.LiteralEnd(line, v, w); end >= 0 {
					r.success, r.hasSuccess = w == "true", true
					return end, ""
				}
			}
			return v, "s is not a boolean"
		case "t":
			end := jsonstr.NumberEnd(line, v)
			if end < 0 {
				return v, jsonstr.SyntaxError(line, v, "a number")
			}
			r.t, _ = strconv.ParseInt(string(line[v:end]), 10, 64)
			return end, ""
		case "p":
			if line[v] != '{' {
				return v, "p is not an object"
			}
			var end int
			var reason string
			a.props, end, reason = jsonstr.AppendValue(a.props[:0], line, v, 1)
			r.props = a.props
			return end, reason
		}
		var end int
		var reason string
		a.skip, end, reason = jsonstr.AppendValue(a.skip[:0], line, v, 1)
		return end, reason
	})
	if reason == "" && jsonstr.SkipSpace(line, end) != len(line) {
		reason = jsonstr.SyntaxError(line, jsonstr.SkipSpace(line, end), "the end of the line")
	}
	if reason != "" {
		return r, errors.New("cannot parse login record: " + reason)
	}
	return r, nil
}

// recordEntity parses one record line into the entity stored for it:
// User, Time (Edm.DateTime), Success, IP, UA, ID, and Props (the other fields
// as one JSON string: Azure property names must be identifiers, and at most
// 252 of them, which arbitrary client fields would not respect). Its
// strings are in a.
func recordEntity(x *jsonstr.Index, a *arena, line []byte) (Entity, error) {
	r, err := parseRecord(x, a, line)
	if err != nil {
		return Entity{}, err
	}
	pk, rk := r.pk, r.rk
	if len(pk) == 0 || len(rk) == 0 {
		return Entity{}, errors.New("cannot parse login record: no pk or rk")
	}
	var user, id []byte
	var t int64
	if len(pk) > shard.BucketWidth && pk[shard.BucketWidth] == '_' {
		// A record of the first key scheme (bucket "_" user, with u, t and
		// id fields, from a write-ahead log replayed across an upgrade): the
		// same bucket, the current RowKey, so it lands where reads look.
		user, t, id = r.user, r.t, r.id
		pk = pk[:shard.BucketWidth]
		rk = shard.RowKey(nil, user, t, id)
	} else if user, t, id, err = shard.ParseRowKey(rk); err != nil {
		return Entity{}, fmt.Errorf("cannot parse login record: %w", err)
	}
	e := Entity{PartitionKey: a.str(pk), RowKey: a.str(rk), Props: make(map[string]any, 8)}
	e.Props["User"] = a.validUTF8(user)
	e.Props["Time"] = time.Unix(0, t).UTC()
	if len(id) > 0 {
		e.Props["ID"] = a.validUTF8(id)
	}
	if r.hasSuccess {
		e.Props["Success"] = r.success
	}
	if len(r.ip) > 0 {
		e.Props["IP"] = a.str(r.ip)
	}
	if len(r.ua) > 0 {
		e.Props["UA"] = a.str(r.ua)
	}
	if r.props != nil {
		e.Props["Props"] = a.str(r.props)
	}
	if err := checkEntity(&e); err != nil {
		return Entity{}, err
	}
	return e, nil
}

// attemptFromEntity turns a stored entity back into an Attempt.
func attemptFromEntity(e *Entity) login.Attempt {
	var a login.Attempt
	if t, ok := e.Props["Time"].(time.Time); ok {
		a.Time = t.UnixNano()
	} else if _, ts, _, err := shard.ParseRowKey([]byte(e.RowKey)); err == nil {
		a.Time = ts
	} else if ts, _, err := shard.ParseLegacyRowKey([]byte(e.RowKey)); err == nil {
		a.Time = ts
	}
	str := func(k string) []byte {
		if s, ok := e.Props[k].(string); ok && s != "" {
			return []byte(s)
		}
		return nil
	}
	a.User, a.IP, a.UA, a.ID, a.Props = str("User"), str("IP"), str("UA"), str("ID"), str("Props")
	a.Success, a.HasSuccess = e.Props["Success"].(bool)
	return a
}

// AppendAttemptJSON appends a as one NDJSON object: ts (UTC, seven
// fractional digits), user, success (when given), ip, ua, id, then the
// attempt's other fields merged in.
func AppendAttemptJSON(dst []byte, a *login.Attempt) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = logline.AppendTime(dst, a.Time)
	dst = append(dst, `","user":`...)
	dst = logline.AppendQuoted(dst, a.User)
	if a.HasSuccess {
		dst = append(dst, `,"success":`...)
		dst = strconv.AppendBool(dst, a.Success)
	}
	for _, f := range [...]struct {
		k string
		v []byte
	}{{"ip", a.IP}, {"ua", a.UA}, {"id", a.ID}} {
		if len(f.v) > 0 {
			dst = append(dst, `,"`...)
			dst = append(dst, f.k...)
			dst = append(dst, `":`...)
			dst = logline.AppendQuoted(dst, f.v)
		}
	}
	if inner := bytes.TrimSpace(a.Props); len(inner) > 2 && inner[0] == '{' && inner[len(inner)-1] == '}' {
		if body := bytes.TrimSpace(inner[1 : len(inner)-1]); len(body) > 0 {
			dst = append(dst, ',')
			dst = append(dst, body...)
		}
	}
	return append(dst, '}')
}

// validUTF8 returns b as a string with each invalid byte replaced by
// U+FFFD, as the JSON encoding of the attempt's fields does.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}
