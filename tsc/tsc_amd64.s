#include "textflag.h"

// func rdtscp() (ticks uint64, aux uint32)
TEXT ·rdtscp(SB), NOSPLIT, $0-12
	RDTSCP
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ticks+0(FP)
	MOVL CX, aux+8(FP)
	RET

// func rdtsc() uint64
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
