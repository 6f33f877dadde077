/*
 * Symbolic traces: one recording for a family of sizes (memsim record
 * --symbolic NAME=V, docs/symbolic-sizes.md).  The file is the recorder's
 * CSV with two header lines,
 *
 *	#memsim-symbolic 1
 *	#symbol NAME V LO HI [GUARD...]
 *
 * and a size column that may be an expression in NAME: a polynomial with
 * integer coefficients ("4096*B^2+131072*B+512"), where a kernel rule's
 * size divides, with Python's // and % by constants
 * ("32768*B+8*((2048*B)//5)"), and calls of the kernel rules that
 * depend on sizes only, evaluated here per value
 * ("1744+77824*B+conv_split_k(16;27;1024*B;132)"; memsim_record/
 * kernels.py RULES).  A size with a leading '?' is a block there only
 * where it is not 0 (a reduction's buffer): elsewhere its row and its
 * free are left out and seq and time_us of the rows after count down; a
 * block absent at V is numbered below 2^32 there.  It was recorded at
 * NAME=V and
 * holds for every integer in [LO, HI] (PyTorch's guards and the
 * recorder's, listed after HI for the reader).  Instantiating it at a
 * value writes the CSV the recorder writes at that value, byte for byte:
 * each size evaluated, each allocation's address recomputed by the
 * recorder's rule (the next address after a block of n bytes is
 * ((n + 511) / 512 + 1) * 512 on, from 2^32; memsim_record/fake.py's
 * Recorder.alloc), each free given its allocation's new address.
 *
 *	msim_symtrace_probe() -> msim_symtrace_instantiate()
 */
#ifndef MSIM_TRACES_SYMTRACE_H
#define MSIM_TRACES_SYMTRACE_H

#include <stddef.h>
#include <stdint.h>

#define MSIM_SYMTRACE_MAGIC "#memsim-symbolic 1"

typedef struct msim_symtrace_info_s {
	char name[64];   /* the symbol: the setting varied ("B") */
	long value;      /* the value recorded at */
	long lo, hi;     /* where the trace holds, lo <= value <= hi */
} msim_symtrace_info_t;

/* Whether path is a symbolic trace: 1 with *info_out, 0 when it is not
 * one (another trace), or an error with why ("FILE:LINE: reason": an
 * unreadable file, a bad #symbol line). */
int msim_symtrace_probe(const char *path, msim_symtrace_info_t *info_out,
			char *why, size_t whylen);

/* Writes path instantiated at value to out (through a temporary file
 * beside it, renamed at the end: never a partial out).  Returns 0, or
 * MSIM_EINVAL (value outside [lo, hi]), MSIM_EFORMAT (a bad line, a
 * size negative or too large, a free of no allocation, addresses that
 * are not the rule's at the value recorded), MSIM_EIO, MSIM_ENOMEM, with
 * why ("FILE:LINE: reason"). */
int msim_symtrace_instantiate(const char *path, long value, const char *out,
			      char *why, size_t whylen);

/* The expression expr[0..len) in name at value into *out.  Returns 0,
 * or MSIM_EFORMAT with why (not an expression of integers and name with
 * + - * ^ // %, parentheses and the kernel rules' calls, a divisor not a
 * positive constant, a rule's arguments out of its domain, or a value
 * past int64 on the way). */
int msim_symtrace_eval(const char *expr, size_t len, const char *name,
		       long value, int64_t *out, char *why, size_t whylen);

#endif
