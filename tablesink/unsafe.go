package tablesink

import "unsafe"

// unsafeString views b as a string without copying, for read-only checks
// that do not keep the string.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unsafeBytes views s as bytes without copying; the caller must not write.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
