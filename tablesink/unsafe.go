package tablesink

import "unsafe"

// unsafeString views b as a string without copying, for read-only checks
// that do not keep the string.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
