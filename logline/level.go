package logline

import "bytes"

// Level is a normalised severity. The zero value means "not given".
type Level uint8

// The levels a line may carry, in increasing severity.
const (
	LevelNone Level = iota
	LevelTrace
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
	LevelFatal
	numLevels
)

// NumLevels is how many levels there are, LevelNone included: an array
// indexed by Level has this length.
const NumLevels = int(numLevels)

var levelNames = [numLevels]string{"", "trace", "debug", "info", "warn", "error", "fatal"}

// String returns the lower-case name used in lines ("" for LevelNone).
func (l Level) String() string {
	if l >= numLevels {
		return ""
	}
	return levelNames[l]
}

// Levels lists every named level (LevelNone excluded) in severity order.
func Levels() []Level {
	return []Level{LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelFatal}
}

// levelAliases maps lower-cased spellings seen in the wild to a level.
var levelAliases = map[string]Level{
	"trace": LevelTrace, "trc": LevelTrace, "finest": LevelTrace, "verbose": LevelTrace,
	"debug": LevelDebug, "dbg": LevelDebug, "debg": LevelDebug, "fine": LevelDebug,
	"info": LevelInfo, "inf": LevelInfo, "information": LevelInfo, "informational": LevelInfo,
	"notice": LevelInfo, "note": LevelInfo,
	"warn": LevelWarn, "warning": LevelWarn, "wrn": LevelWarn,
	"error": LevelError, "err": LevelError, "eror": LevelError, "severe": LevelError,
	"fatal": LevelFatal, "critical": LevelFatal, "crit": LevelFatal, "alert": LevelFatal,
	"emerg": LevelFatal, "emergency": LevelFatal, "panic": LevelFatal, "ftl": LevelFatal,
}

// ParseLevel maps a level spelling to a Level: names in any case and common
// aliases (WARNING, err, critical...), syslog severities "0".."7", and the
// pino/bunyan numbers 10..60. ok is false when s is not recognised.
func ParseLevel(s []byte) (l Level, ok bool) {
	if l, ok := levelByName(s); ok {
		return l, true
	}
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return LevelNone, true
	}
	if len(s) <= 2 && s[0] >= '0' && s[0] <= '9' {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return LevelNone, false
			}
			n = n*10 + int(c-'0')
		}
		return LevelFromNumber(n)
	}
	var lower [16]byte
	if len(s) > len(lower) {
		return LevelNone, false
	}
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	l, ok = levelAliases[string(lower[:len(s)])] // no allocation: map lookup with a converted key
	return l, ok
}

// levelByName maps the names lines are written with, which is how most
// levels come: the sink reads one from every line it flushes, and a map
// lookup took three quarters of that.
func levelByName(s []byte) (Level, bool) {
	switch string(s) {
	case "info":
		return LevelInfo, true
	case "debug":
		return LevelDebug, true
	case "warn":
		return LevelWarn, true
	case "error":
		return LevelError, true
	case "trace":
		return LevelTrace, true
	case "fatal":
		return LevelFatal, true
	}
	return LevelNone, false
}

// LevelFromNumber maps syslog severities (0 emerg .. 7 debug) and the
// pino/bunyan levels (10 trace .. 60 fatal) to a Level.
func LevelFromNumber(n int) (Level, bool) {
	switch n {
	case 0, 1, 2, 60:
		return LevelFatal, true
	case 3, 50:
		return LevelError, true
	case 4, 40:
		return LevelWarn, true
	case 5, 6, 30:
		return LevelInfo, true
	case 7, 20:
		return LevelDebug, true
	case 10:
		return LevelTrace, true
	}
	return LevelNone, false
}

// LevelFromOTLP maps an OpenTelemetry SeverityNumber (1..24) to a Level.
func LevelFromOTLP(n int32) Level {
	switch {
	case n <= 0:
		return LevelNone
	case n <= 4:
		return LevelTrace
	case n <= 8:
		return LevelDebug
	case n <= 12:
		return LevelInfo
	case n <= 16:
		return LevelWarn
	case n <= 20:
		return LevelError
	default:
		return LevelFatal
	}
}

// LevelSet is a set of levels, one bit each; it is how a blob's LogType
// metadata is accumulated.
type LevelSet uint8

// Add returns the set with l added.
func (s LevelSet) Add(l Level) LevelSet { return s | 1<<l }

// Has reports whether l is in the set.
func (s LevelSet) Has(l Level) bool { return s&(1<<l) != 0 }

// String renders the named levels, sorted by name and comma separated, as
// Storage Analytics' LogType metadata does. LevelNone is left out.
func (s LevelSet) String() string {
	// Alphabetical: debug, error, fatal, info, trace, warn.
	order := [...]Level{LevelDebug, LevelError, LevelFatal, LevelInfo, LevelTrace, LevelWarn}
	var b []byte
	for _, l := range order {
		if s.Has(l) {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = append(b, l.String()...)
		}
	}
	return string(b)
}

// ParseLevelSet reverses LevelSet.String; unknown names are ignored.
func ParseLevelSet(s string) LevelSet {
	var set LevelSet
	for _, part := range bytes.Split([]byte(s), []byte{','}) {
		if l, ok := ParseLevel(part); ok && l != LevelNone {
			set = set.Add(l)
		}
	}
	return set
}
