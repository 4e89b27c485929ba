#include "textflag.h"

// func markBlocks(b *byte, blocks int, m *marks)
//
// For each 64-byte block of b, two words of one bit per byte: the first
// marks the bytes that are '"', the second those that are '\\', below
// 0x20 or 0x80 and above. The last two kinds are one signed comparison:
// as signed bytes, 0x80-0xff are negative, so "0x20 > c" holds exactly
// for control and high bytes.
TEXT ·markBlocks(SB), NOSPLIT, $0-24
	MOVQ b+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ m+16(FP), DI
	TESTQ CX, CX
	JZ   done
	MOVQ $0x2222222222222222, AX
	MOVQ AX, X0
	VPBROADCASTQ X0, Y0
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X1
	VPBROADCASTQ X1, Y1
	MOVQ $0x2020202020202020, AX
	MOVQ AX, X2
	VPBROADCASTQ X2, Y2

loop:
	VMOVDQU 0(SI), Y3
	VMOVDQU 32(SI), Y4
	VPCMPEQB Y3, Y0, Y5
	VPCMPEQB Y4, Y0, Y6
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y6, BX
	SHLQ $32, BX
	ORQ  BX, AX
	MOVQ AX, 0(DI)
	VPCMPEQB Y3, Y1, Y5
	VPCMPGTB Y3, Y2, Y7
	VPOR Y5, Y7, Y5
	VPCMPEQB Y4, Y1, Y6
	VPCMPGTB Y4, Y2, Y8
	VPOR Y6, Y8, Y6
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y6, BX
	SHLQ $32, BX
	ORQ  BX, AX
	MOVQ AX, 8(DI)
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET
