package tablesink

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"ingest/logline"
)

// appendEntityJSON writes e as the Table service's JSON (minimal metadata):
// keys, then properties sorted by name, with @odata.type annotations where
// the JSON type alone would lose the Edm type (Int64, Double, DateTime).
// Both backends store this encoding, so they decode identically.
func appendEntityJSON(dst []byte, e *Entity) []byte {
	if e.checkedJSON != nil {
		return append(dst, e.checkedJSON...)
	}
	dst = append(dst, `{"PartitionKey":`...)
	dst = logline.AppendQuoted(dst, []byte(e.PartitionKey))
	dst = append(dst, `,"RowKey":`...)
	dst = logline.AppendQuoted(dst, []byte(e.RowKey))
	return appendProps(dst, e.Props, true)
}

// appendProps writes the properties (after a first member when more is
// true) and the closing brace.
func appendProps(dst []byte, props map[string]any, more bool) []byte {
	var names [64]string
	keys := names[:0]
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if more {
			dst = append(dst, ',')
		}
		more = true
		switch v := props[k].(type) {
		case string:
			dst = appendName(dst, k, "")
			dst = logline.AppendQuoted(dst, []byte(v))
		case bool:
			dst = appendName(dst, k, "")
			dst = strconv.AppendBool(dst, v)
		case int32:
			dst = appendName(dst, k, "")
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = appendName(dst, k, "Edm.Int64")
			dst = append(dst, '"')
			dst = strconv.AppendInt(dst, v, 10)
			dst = append(dst, '"')
		case float64:
			dst = appendName(dst, k, "Edm.Double")
			switch {
			case math.IsNaN(v):
				dst = append(dst, `"NaN"`...)
			case math.IsInf(v, 1):
				dst = append(dst, `"Infinity"`...)
			case math.IsInf(v, -1):
				dst = append(dst, `"-Infinity"`...)
			default:
				dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
			}
		case time.Time:
			dst = appendName(dst, k, "Edm.DateTime")
			dst = append(dst, '"')
			dst = logline.AppendTime(dst, v.UnixNano())
			dst = append(dst, '"')
		default:
			// checkEntity refuses other types before anything is written;
			// keep the JSON valid regardless.
			dst = appendName(dst, k, "")
			dst = append(dst, "null"...)
		}
	}
	return append(dst, '}')
}

func appendName(dst []byte, k, edm string) []byte {
	if edm != "" {
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, `@odata.type":"`...)
		dst = append(dst, edm...)
		dst = append(dst, `",`...)
	}
	dst = append(dst, '"')
	dst = append(dst, k...)
	return append(dst, `":`...)
}

// decodeEntityJSON parses an entity as the Table service returns it
// (minimal or full metadata) or as appendEntityJSON wrote it.
func decodeEntityJSON(p *fastjson.Parser, b []byte) (Entity, error) {
	v, err := p.ParseBytes(b)
	if err != nil {
		return Entity{}, fmt.Errorf("cannot parse entity: %w", err)
	}
	o, err := v.Object()
	if err != nil {
		return Entity{}, fmt.Errorf("cannot parse entity: %w", err)
	}
	var e Entity
	e.Props = make(map[string]any, o.Len())
	types := map[string]string{}
	o.Visit(func(key []byte, v *fastjson.Value) {
		k := string(key)
		if n := len(k) - len("@odata.type"); n > 0 && k[n:] == "@odata.type" {
			types[k[:n]] = string(v.GetStringBytes())
		}
	})
	o.Visit(func(key []byte, v *fastjson.Value) {
		if err != nil {
			return
		}
		k := string(key)
		switch {
		case k == "PartitionKey":
			e.PartitionKey = string(v.GetStringBytes())
			return
		case k == "RowKey":
			e.RowKey = string(v.GetStringBytes())
			return
		case k == "odata.etag":
			e.ETag = string(v.GetStringBytes())
			return
		case k == "Timestamp", len(k) > 6 && k[:6] == "odata.":
			return
		}
		if n := len(k) - len("@odata.type"); n > 0 && k[n:] == "@odata.type" {
			return
		}
		var val any
		val, err = decodeValue(v, types[k])
		if err != nil {
			err = fmt.Errorf("cannot parse entity property %s: %w", k, err)
			return
		}
		if val != nil {
			e.Props[k] = val
		}
	})
	return e, err
}

func decodeValue(v *fastjson.Value, edm string) (any, error) {
	switch v.Type() {
	case fastjson.TypeNull:
		return nil, nil
	case fastjson.TypeTrue:
		return true, nil
	case fastjson.TypeFalse:
		return false, nil
	case fastjson.TypeString:
		s := string(v.GetStringBytes())
		switch edm {
		case "Edm.Int64":
			return strconv.ParseInt(s, 10, 64)
		case "Edm.Double":
			switch s {
			case "NaN":
				return math.NaN(), nil
			case "Infinity", "INF":
				return math.Inf(1), nil
			case "-Infinity", "-INF":
				return math.Inf(-1), nil
			}
			return strconv.ParseFloat(s, 64)
		case "Edm.DateTime":
			t, err := time.Parse(time.RFC3339Nano, s)
			return t.UTC(), err
		}
		return s, nil
	case fastjson.TypeNumber:
		// The service omits Edm.Double on numbers it returns (minimal
		// metadata annotates only Int64, DateTime, Guid, Binary), so a whole
		// double reads back as Int32 there; the annotation is ignored here
		// too, so both backends read the same values.
		raw := v.String()
		if edm == "Edm.Int64" {
			return strconv.ParseInt(raw, 10, 64)
		}
		if n, err := strconv.ParseInt(raw, 10, 32); err == nil {
			return int32(n), nil
		}
		return strconv.ParseFloat(raw, 64)
	}
	return nil, fmt.Errorf("unsupported JSON %s", v.Type())
}

// entityJSONLen is len(appendEntityJSON(nil, e)) without encoding: the
// batcher sizes every entity and must not allocate its JSON twice.
func entityJSONLen(e *Entity) int {
	n := len(`{"PartitionKey":,"RowKey":}`) + quotedLen(e.PartitionKey) + quotedLen(e.RowKey)
	var num [32]byte
	for k, v := range e.Props {
		n += len(`,"":`) + len(k)
		annotated := func(edm string) int { return len(`"@odata.type":"",`) + len(k) + len(edm) }
		switch v := v.(type) {
		case string:
			n += quotedLen(v)
		case bool:
			n += len(strconv.AppendBool(num[:0], v))
		case int32:
			n += len(strconv.AppendInt(num[:0], int64(v), 10))
		case int64:
			n += annotated("Edm.Int64") + 2 + len(strconv.AppendInt(num[:0], v, 10))
		case float64:
			n += annotated("Edm.Double")
			switch {
			case math.IsNaN(v):
				n += len(`"NaN"`)
			case math.IsInf(v, 1):
				n += len(`"Infinity"`)
			case math.IsInf(v, -1):
				n += len(`"-Infinity"`)
			default:
				n += len(strconv.AppendFloat(num[:0], v, 'g', -1, 64))
			}
		case time.Time:
			n += annotated("Edm.DateTime") + 2 + len("2006-01-02T15:04:05.0000000Z")
		default:
			n += len("null")
		}
	}
	return n
}

// quotedLen is the length of logline.AppendQuoted's output for s.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 3 // U+FFFD
		} else {
			n += size
		}
		i += size
	}
	return n
}
