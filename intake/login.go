package intake

import (
	"bytes"
	"net/http"

	"github.com/valyala/fastjson"
)

// Login is one login attempt (POST /v1/logins). Byte fields point into the
// request body or the Parser's scratch space and are valid only during the
// emit call.
type Login struct {
	Time       int64  // Unix nanoseconds
	User       []byte // never empty
	IP         []byte
	UA         []byte
	ID         []byte // the client's id, else a generated one
	Success    bool
	HasSuccess bool   // whether the attempt said success at all
	Props      []byte // compact JSON object of every other field; empty when none
}

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
// among them. Text and OTLP bodies are a 415.
func (p *Parser) ParseLogins(body []byte, f Format, d Defaults, emit func(*Login)) (Result, error) {
	p.begin(&d)
	body = bytes.TrimPrefix(body, []byte(bom))
	var r Result
	each := func(n int, b []byte) {
		o, msg := p.parseJSON(b)
		if msg == "" {
			msg = p.loginFromObject(o)
		}
		if msg != "" {
			r.reject(n, msg)
			return
		}
		r.Accepted++
		emit(&p.lg)
	}
	switch f {
	case FormatNDJSON:
		forEachLine(body, &r, each)
	case FormatJSONArray:
		if err := p.scanArray(body); err != nil {
			return r, err
		}
		p.forEachElement(body, &r, each)
	default:
		return r, errorf(http.StatusUnsupportedMediaType,
			"cannot accept a %s body for logins: send NDJSON or a JSON array of objects", f)
	}
	return r, nil
}

// loginFromObject fills p.lg; it returns "" or why the line is rejected.
func (p *Parser) loginFromObject(o *fastjson.Object) string {
	lg := &p.lg
	*lg = Login{}
	p.attrs = p.attrs[:0]
	var haveTime, haveUser, haveIP, haveUA, haveID bool
	var bad string
	o.Visit(func(key []byte, v *fastjson.Value) {
		if bad != "" {
			return
		}
		switch loginField(key) {
		case fieldUser:
			if s, ok := p.textOf(v, &p.svc); ok && !haveUser {
				lg.User, haveUser = s, true
				return
			}
		case fieldTime:
			if haveTime {
				break
			}
			t, msg := p.timeOf(key, v)
			if msg != "" {
				bad = msg
				return
			}
			lg.Time, haveTime = t, true
			return
		case fieldSuccess:
			if lg.HasSuccess {
				break
			}
			ok, valid := p.boolOf(v)
			if !valid {
				bad = `cannot parse field "success": want true or false`
				return
			}
			lg.Success, lg.HasSuccess = ok, true
			return
		case fieldIP:
			if s, ok := p.textOf(v, &p.host); ok && !haveIP {
				lg.IP, haveIP = s, true
				return
			}
		case fieldUA:
			if s, ok := p.textOf(v, &p.ua); ok && !haveUA {
				lg.UA, haveUA = s, true
				return
			}
		case fieldID:
			if s, ok := p.textOf(v, &p.id); ok && !haveID {
				lg.ID, haveID = s, len(s) > 0
				return
			}
		}
		p.addAttr(key, v)
	})
	if bad != "" {
		return bad
	}
	if len(lg.User) == 0 {
		return `login has no "user": a non-empty user is required`
	}
	if !haveTime {
		lg.Time = p.now
	}
	if !haveID {
		p.id = p.ids.next(p.id[:0], p.now)
		lg.ID = p.id
	}
	if len(p.attrs) > 0 {
		p.attrs = append(p.attrs, '}')
		lg.Props = p.attrs
	}
	return ""
}

// boolOf reads true/false, the strings "true"/"false" in any case, and
// 1/0 as a number or string.
func (p *Parser) boolOf(v *fastjson.Value) (val, ok bool) {
	var s []byte
	switch v.Type() {
	case fastjson.TypeTrue:
		return true, true
	case fastjson.TypeFalse:
		return false, true
	case fastjson.TypeString:
		s, _ = v.StringBytes()
	case fastjson.TypeNumber:
		p.num = v.MarshalTo(p.num[:0])
		s = p.num
	default:
		return false, false
	}
	switch {
	case bytes.EqualFold(s, []byte("true")) || string(s) == "1":
		return true, true
	case bytes.EqualFold(s, []byte("false")) || string(s) == "0":
		return false, true
	}
	return false, false
}
