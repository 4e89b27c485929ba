//go:build !amd64

package jsonstr

// canMark is false: marking has no portable version that beats Scan's own
// 8-byte steps, so Index falls back to Scan.
var canMark = false

func markBlocks(b *byte, blocks int, m *marks) { panic("unreachable") }
