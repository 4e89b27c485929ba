package jsonstr

import "golang.org/x/sys/cpu"

// canMark says whether markBlocks may run: it needs AVX2.
var canMark = cpu.X86.HasAVX2

// markBlocks sets the marks of blocks 64-byte blocks of b, the k-th
// block's in m[k]; see index_amd64.s.
//
//go:noescape
func markBlocks(b *byte, blocks int, m *marks)
