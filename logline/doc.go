// Package logline defines a log event and its stored form: one line of
// semicolon-separated fields, the way Azure Storage Analytics writes its logs.
//
//	version;time;level;service;host;id;message;attrs
//	1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;"disk full";{"code":507}
//
// The time has seven fractional digits (100 ns ticks, UTC). service, host and id
// are tokens of [A-Za-z0-9._:@-]; any other byte becomes '_'. message is a JSON
// string literal, so ';', quotes and newlines inside it never break the line.
// attrs is a compact JSON object of every other field ("{}" when none).
//
// Encoding appends to the caller's slice and allocates nothing:
//
//	buf = logline.AppendLine(buf[:0], &ev)
//
// Parse reverses it; the event's byte fields point into the line, except the
// message, which is unescaped into the event's own reusable scratch space.
package logline
