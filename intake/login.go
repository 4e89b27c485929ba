package intake

import (
	"bytes"
	"net/http"

	"ingest/intake/login"
	"ingest/internal/jsonstr"
)

func loginField(key []byte) fieldKind {
	switch string(key) {
	case "user":
		return fieldUser
	case "ts", "timestamp", "time", "@timestamp", "date":
		return fieldTime
	case "success":
		return fieldSuccess
	case "ip":
		return fieldIP
	case "ua":
		return fieldUA
	case "id":
		return fieldID
	}
	return fieldAttr
}

// ParseLogins parses a body of login attempts, NDJSON or a JSON array, and
// calls emit for each valid one. Its contract is ParseLogs': a bad line is
// rejected with its number and skipped, a line without a non-empty "user"
// among them, and so is an attempt emit refuses with a group.Rejected
// error (the caller's own checks, such as an attempt older than the table
// retention); any other error from emit ends parsing. Text and OTLP bodies
// are a 415.
func (p *Parser) ParseLogins(body []byte, f Format, d Defaults, emit func(*login.Attempt) error) (Result, error) {
	p.begin(&d)
	body = bytes.TrimPrefix(body, []byte(bom))
	r := Result{maxRows: d.MaxRows}
	each := func(n int, b []byte) error {
		if reason := p.loginFromLine(b); reason != "" {
			r.reject(n, reason)
			return nil
		}
		return r.book(n, emit(&p.lg))
	}
	var err error
	switch f {
	case FormatNDJSON:
		err = forEachLine(body, &r, each)
	case FormatJSONArray:
		if err := p.scanArray(body); err != nil {
			return r, err
		}
		err = p.forEachElement(body, &r, each)
	default:
		return r, errorf(http.StatusUnsupportedMediaType,
			"cannot accept a %s body for logins: send NDJSON or a JSON array of objects", f)
	}
	return r, err
}

// loginFromLine fills p.lg from one JSON object; it returns "" or why the
// line is rejected.
func (p *Parser) loginFromLine(b []byte) string {
	lg := &p.lg
	*lg = login.Attempt{}
	p.beginAttrs(b)
	var haveTime, haveUser, haveIP, haveUA, haveID bool
	bad := p.walkObject(b, func(key, rawKey []byte, keyFlags jsonstr.Flags, start, i int) (int, string) {
		// Each known field is taken once; a repeat, or a value of the wrong
		// kind, is kept among the properties.
		switch loginField(key) {
		case fieldUser:
			if !haveUser {
				if s, end, ok := p.textAt(b, i, &p.svc); ok {
					lg.User, haveUser = s, true
					return end, ""
				}
			}
		case fieldTime:
			if !haveTime {
				t, end, reason := p.timeAt(b, i, key)
				lg.Time, haveTime = t, true
				return end, reason
			}
		case fieldSuccess:
			if !lg.HasSuccess {
				v, end, ok := p.boolAt(b, i)
				if !ok {
					return end, `cannot parse field "success": want true or false`
				}
				lg.Success, lg.HasSuccess = v, true
				return end, ""
			}
		case fieldIP:
			if !haveIP {
				if s, end, ok := p.textAt(b, i, &p.host); ok {
					lg.IP, haveIP = s, true
					return end, ""
				}
			}
		case fieldUA:
			if !haveUA {
				if s, end, ok := p.textAt(b, i, &p.ua); ok {
					lg.UA, haveUA = s, true
					return end, ""
				}
			}
		case fieldID:
			if !haveID {
				if s, end, ok := p.textAt(b, i, &p.id); ok {
					lg.ID, haveID = s, len(s) > 0
					return end, ""
				}
			}
		}
		return p.attrAt(b, rawKey, keyFlags, start, i)
	})
	if bad != "" {
		return bad
	}
	if len(lg.User) == 0 {
		return `login has no "user": a non-empty user is required`
	}
	p.finishRecord(haveTime, haveID, &lg.Time, &lg.ID, &lg.Props)
	return ""
}

// boolAt reads true/false, the strings "true"/"false" in any case, and 1/0
// as a number or a string.
func (p *Parser) boolAt(b []byte, i int) (val bool, end int, ok bool) {
	if end := jsonstr.LiteralEnd(b, i, "true"); end >= 0 {
		return true, end, true
	}
	if end := jsonstr.LiteralEnd(b, i, "false"); end >= 0 {
		return false, end, true
	}
	s, end, ok := p.textAt(b, i, &p.num)
	if !ok {
		return false, i, false
	}
	switch {
	case bytes.EqualFold(s, []byte("true")) || string(s) == "1":
		return true, end, true
	case bytes.EqualFold(s, []byte("false")) || string(s) == "0":
		return false, end, true
	}
	return false, end, false
}
