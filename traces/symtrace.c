/*
 * Symbolic traces (traces/symtrace.h): the header read, the size column's
 * polynomials evaluated, the addresses recomputed by the recorder's rule.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/error.h"
#include "traces/symtrace.h"

#define SYM_BASE ((uint64_t)1 << 32)   /* Recorder.next_addr's start */
#define SYM_MAXPOW 16

/* The size column's expressions (traces/symtrace.h), evaluated as they
 * are read, in int64 with every step checked:
 *
 *	expr   := ['-'] term (('+' | '-') term)*
 *	term   := factor ('*' factor)*
 *	factor := base ['^' INT] [('//' | '%') INT]
 *	base   := INT | NAME | RULE '(' expr (';' expr)* ')' | '(' expr ')'
 *
 * '//' and '%' are Python's (floor, a remainder of the divisor's sign;
 * the divisor a positive constant), as PyTorch's FloorDiv and Mod of a
 * kernel rule's size print.  RULE is one of sym_rules[]: a kernel rule
 * of the recorder's (memsim_record/kernels.py RULES) whose size depends
 * on sizes only, evaluated here per value instead of guarding the
 * recording (its power-of-two tests would bound the range to one
 * bucket). */
typedef struct sym_ex_s {
	const char *s, *name;
	size_t len, nl, i;
	long value;
	int depth;
	int err;        /* 0, 1: not an expression, 2: past 64 bits, 3: a
			 * rule's arguments out of its domain */
} sym_ex_t;

static int64_t sym_expr(sym_ex_t *x);
static bool sym_at(sym_ex_t *x, char c);

static int64_t
sym_last_pow2(int64_t n)
{
	int64_t p = 1;
	while (p <= n / 2)
		p *= 2;
	return p;
}

static int64_t
sym_div_up(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* kernels.reduce_rule(): setReduceConfig()'s global buffer for one
 * input and one output (gpu_reduce_kernel), from the reduction's inputs
 * per output and outputs; a[] as kernels.py passes them:
 * inputs_per_output, num_outputs, mode (1 along the fastest dimension,
 * 2 input_vec_size, 4 get_output_vec_size()), itemsize, acc_size, vec,
 * vn (vec halved while it does not divide vn), SMs, threads per SM.
 * *size and *grid, or 0 and 0 where the kernel makes no buffer; false
 * with x->err set on arguments out of the rule's domain or past 64
 * bits. */
static bool
sym_reduce_rule(sym_ex_t *x, const int64_t *a, int64_t *size, int64_t *grid)
{
	int64_t ipo = a[0], nout = a[1], mode = a[2], isz = a[3], acc = a[4];
	int64_t vec = a[5], vn = a[6], sms = a[7], tpsm = a[8], numel;
	*size = *grid = 0;
	if (ipo < 0 || nout < 0 || mode < 0 || mode > 7 || isz < 1 ||
	    isz > 16 || acc < 1 || (vec != 1 && vec != 2 && vec != 4) ||
	    vn < 0 || sms < 1 || tpsm < 1) {
		x->err = x->err ? x->err : 3;
		return false;
	}
	if (__builtin_mul_overflow(ipo, nout, &numel) ||
	    numel >= ((int64_t)1 << 31) || numel == 0)
		return true;
	bool on_fastest = mode & 1;
	int64_t dim0 = on_fastest ? ipo : nout, dim1 = on_fastest ? nout : ipo;
	int64_t ovs = 1;
	if ((mode & 2) && dim0 >= 128) {
		dim0 /= 16 / isz;
	} else if (mode & 4) {
		while (vn % vec)
			vec /= 2;
		ovs = vec;
		dim0 /= vec;
	}
	int64_t max_threads = 512 / ovs;
	int64_t d0 = dim0 < max_threads ? sym_last_pow2(dim0) : max_threads;
	int64_t d1 = dim1 < max_threads ? sym_last_pow2(dim1) : max_threads;
	int64_t bw = d0 < 32 ? d0 : 32;
	int64_t bh = max_threads / bw;
	bh = d1 < bh ? d1 : bh;
	bw = max_threads / bh;
	bw = d0 < bw ? d0 : bw;
	int64_t step_in = 1, step_out = 1;
	if (on_fastest)
		step_in *= bw;
	else
		step_out *= bw;
	int64_t vpt = sym_div_up(ipo, step_in);
	bool split_warps = vpt >= (bh * 16 < 256 ? bh * 16 : 256);
	if (split_warps)
		step_in *= bh;
	else
		step_out *= bh;
	vpt = sym_div_up(ipo, step_in);
	int64_t target, g = sym_div_up(nout / ovs, step_out);
	if (__builtin_mul_overflow(sms, tpsm / (bw * bh), &target)) {
		x->err = 2;
		return false;
	}
	if (!(split_warps && vpt >= 256 && g <= target))
		return true;
	int64_t c1 = sym_div_up(target, g), c2 = sym_div_up(vpt, 16);
	int64_t ctas = c1 < c2 ? c1 : c2, c3 = sym_div_up(vpt, 256);
	ctas = ctas > c3 ? ctas : c3;
	if (ctas <= 1)
		return true;
	int64_t n;
	if (__builtin_mul_overflow(acc, nout, &n) ||
	    __builtin_mul_overflow(n, ctas, &n) ||
	    (!on_fastest && (__builtin_mul_overflow(n, bw, &n) ||
			     __builtin_mul_overflow(n, ovs, &n)))) {
		x->err = 2;
		return false;
	}
	*size = n;
	*grid = g;
	return true;
}

static int64_t
sym_rule_reduce_buffer(sym_ex_t *x, const int64_t *a)
{
	int64_t size, grid;
	return sym_reduce_rule(x, a, &size, &grid) ? size : 0;
}

static int64_t
sym_rule_reduce_semaphores(sym_ex_t *x, const int64_t *a)
{
	int64_t size, grid;
	return sym_reduce_rule(x, a, &size, &grid) ? 4 * grid : 0;
}

/* kernels.split_k_rule(): a convolution's backward-weight split-K
 * partial sums, from a[] = K, C*R*S, N*P*Q, SMs: S = min(13, 2 SMs /
 * tiles, floor(sqrt(N*P*Q) / 42)) slices of pad64(K) * C*R*S fp32, none
 * below 2 (the floor in double, as Python's math.sqrt and int()). */
static int64_t
sym_rule_conv_split_k(sym_ex_t *x, const int64_t *a)
{
	int64_t k = a[0], crs = a[1], npq = a[2], sms = a[3], n;
	if (k < 1 || crs < 1 || npq < 0 || npq > ((int64_t)1 << 53) ||
	    sms < 1) {
		x->err = x->err ? x->err : 3;
		return 0;
	}
	int64_t tiles = sym_div_up(k, 128) * sym_div_up(crs, 128);
	int64_t q = (int64_t)(sqrt((double)npq) / 42);
	int64_t s = 2 * sms / tiles;
	s = s < 13 ? s : 13;
	s = s < q ? s : q;
	if (s < 2)
		return 0;
	if (__builtin_mul_overflow(s, sym_div_up(k, 64) * 64, &n) ||
	    __builtin_mul_overflow(n, crs, &n) ||
	    __builtin_mul_overflow(n, 4, &n)) {
		x->err = 2;
		return 0;
	}
	return n;
}

/* conv_find()'s op 4 (kernels.fft_data_strided), its arguments checked:
 * the larger of PLAN and the stride-2 backward-data candidate, which is
 * none (PLAN) where N*H*W > 4096 for an even kernel with K*C >= 32768,
 * or an odd one with 32768 <= K*C < 65536 and N*H*W <= 16384
 * (kernels.strided_fft_candidate: cuDNN's heuristics give no such
 * engine there). */
static int64_t
sym_conv_find_strided(sym_ex_t *x, int64_t plan, int64_t n, int64_t c,
		      int64_t k, int64_t h, int64_t w, int64_t r, int64_t s,
		      int64_t ph, int64_t pw)
{
	int64_t side = h + 2 * ph > w + 2 * pw ? h + 2 * ph : w + 2 * pw;
	int64_t ho = (h + 2 * ph - r) / 2 + 1, wo = (w + 2 * pw - s) / 2 + 1;
	int64_t t = (side + 1) / 2 <= 32 ? 1 : 2;
	int64_t qh = (r + 1) / 2 + (r % 2 == 0 && ph % 2 == 1);
	int64_t qw = (s + 1) / 2 + (s % 2 == 0 && pw % 2 == 1);
	int64_t kc, nk, nc, tiles, img, a, fft;
	if (!__builtin_mul_overflow(k, c, &kc) && kc >= 32768 &&
	    !__builtin_mul_overflow(n, h, &a) &&
	    !__builtin_mul_overflow(a, w, &a) && a > 4096 &&
	    (r % 2 == 0 || (kc < 65536 && a <= 16384)))
		return plan;
	ho += r % 2 == 1 && ph % 2 == 1;
	wo += s % 2 == 1 && pw % 2 == 1;
	c += c % 2;
	bool ovf = __builtin_mul_overflow(k, c, &kc) ||
		   __builtin_mul_overflow(n, k, &nk) ||
		   __builtin_mul_overflow(n, c, &nc) ||
		   __builtin_mul_overflow(nc, 4, &tiles) ||
		   __builtin_add_overflow(tiles, nk, &tiles) ||
		   __builtin_mul_overflow(tiles, t, &tiles) ||
		   __builtin_mul_overflow(kc, 4, &a) ||
		   __builtin_add_overflow(tiles, a, &tiles) ||
		   __builtin_mul_overflow(tiles, 8 * 32 * 17, &fft) ||
		   __builtin_mul_overflow(kc, 16 * qh * qw, &a) ||
		   __builtin_add_overflow(fft, a, &fft) ||
		   __builtin_mul_overflow(nk, ho * wo, &img) ||
		   __builtin_mul_overflow(nc, h * w, &a) ||
		   __builtin_add_overflow(img, a, &img) ||
		   __builtin_mul_overflow(img, 4, &img) ||
		   __builtin_add_overflow(fft, img + 16, &fft);
	if (ovf) {
		x->err = 2;
		return 0;
	}
	return fft > plan ? fft : plan;
}

/* kernels.conv_find_rule(): cudnn.benchmark's find of an fp32 2-d
 * convolution, from a[] = the plan's workspace, op (1 backward-weight,
 * 2 backward-data, 3 forward of stride 1; 4 below), N, C, K, H, W, R, S, pad
 * H, pad W, channels_last: the larger of the plan's and cuDNN's FFT
 * candidate.  Backward-weight (fft_weight): the output gradient and
 * 16-byte tiles of F x (F/2 + 1), F the padded image's larger side to a
 * power of two (at least 16), for max(N*C + N*K, K*C) transforms;
 * forward (fft_forward): the weight and such tiles for max(N*C + K*C,
 * N*K) transforms; backward-data
 * (fft_data): 8-byte tiles of 32 x 17 for K*C + t (N*K + N*C)
 * transforms, t 1 up to a padded side of 32, else 2; channels_last adds
 * the input, weight and output in fp32 and 16 bytes.  Op 4, backward-data
 * of stride 2 (fft_data_strided): 8-byte tiles of 32 x 17 for 4 K*C' +
 * t (N*K + 4 N*C') transforms (C' = C rounded up to even, t by the padded
 * side halved), 16 Qh Qw K*C' bytes (Q = ceil(R/2), one more for an even
 * kernel with odd padding), the output gradient (a row and a column more
 * where kernel and padding are odd) and the input gradient in fp32 and
 * 16 bytes, channels_last as NCHW. */
static int64_t
sym_rule_conv_find(sym_ex_t *x, const int64_t *a)
{
	int64_t plan = a[0], op = a[1], n = a[2], c = a[3], k = a[4];
	int64_t h = a[5], w = a[6], r = a[7], s = a[8], ph = a[9], pw = a[10];
	int64_t side = h + 2 * ph > w + 2 * pw ? h + 2 * ph : w + 2 * pw;
	int64_t ho = h + 2 * ph - r + 1, wo = w + 2 * pw - s + 1;
	if (plan < 0 || op < 1 || op > 4 || n < 1 || c < 1 || k < 1 ||
	    h < 1 || w < 1 || r < 1 || s < 1 || ph < 0 || pw < 0 ||
	    ho < 1 || wo < 1 || side > ((int64_t)1 << 20) ||
	    (a[11] != 0 && a[11] != 1)) {
		x->err = x->err ? x->err : 3;
		return 0;
	}
	if (op == 4)
		return sym_conv_find_strided(x, plan, n, c, k, h, w, r, s, ph,
					     pw);
	int64_t nc, nk, kc, y, tiles, unit, fft;
	bool ovf = __builtin_mul_overflow(n, c, &nc) ||
		   __builtin_mul_overflow(n, k, &nk) ||
		   __builtin_mul_overflow(k, c, &kc) ||
		   __builtin_mul_overflow(nk, ho * wo, &y) ||
		   __builtin_mul_overflow(y, 4, &y);
	if (!ovf && op != 2) {
		/* the output gradient (weight) or the weight (forward) */
		int64_t f = 16, first = y;
		while (f < side)
			f *= 2;
		unit = 16 * f * (f / 2 + 1);
		if (op == 1)
			tiles = nc + nk > kc ? nc + nk : kc;
		else
			tiles = nc + kc > nk ? nc + kc : nk;
		ovf = (op == 3 && (__builtin_mul_overflow(kc, r * s, &first) ||
				   __builtin_mul_overflow(first, 4, &first))) ||
		      __builtin_mul_overflow(tiles, unit, &fft) ||
		      __builtin_add_overflow(fft, first, &fft);
	} else if (!ovf) {
		int64_t t = side <= 32 ? 1 : 2;
		ovf = __builtin_mul_overflow(nk + nc, t, &tiles) ||
		      __builtin_add_overflow(tiles, kc, &tiles) ||
		      __builtin_mul_overflow(tiles, 8 * 32 * 17, &fft);
	}
	if (!ovf && a[11]) {
		/* the transposed operands: 4 (N*C*H*W + K*C*R*S) + Y + 16 */
		int64_t xw, wb;
		ovf = __builtin_mul_overflow(nc, h * w, &xw) ||
		      __builtin_mul_overflow(kc, r * s, &wb) ||
		      __builtin_add_overflow(xw, wb, &xw) ||
		      __builtin_mul_overflow(xw, 4, &xw) ||
		      __builtin_add_overflow(fft, xw, &fft) ||
		      __builtin_add_overflow(fft, y + 16, &fft);
	}
	if (ovf) {
		x->err = 2;
		return 0;
	}
	return fft > plan ? fft : plan;
}

/* The kernel rules a size may call (kernels.py RULES, by the same names
 * and arguments). */
static const struct sym_rule_s {
	const char *name;
	int nargs;
	int64_t (*fn)(sym_ex_t *, const int64_t *);
} sym_rules[] = {
	{"reduce_buffer", 9, sym_rule_reduce_buffer},
	{"reduce_semaphores", 9, sym_rule_reduce_semaphores},
	{"conv_split_k", 4, sym_rule_conv_split_k},
	{"conv_find", 12, sym_rule_conv_find},
};

#define SYM_MAXARGS 16

/* RULE '(' expr (';' expr)* ')' at x->i (';': the trace is a CSV), the name n bytes long. */
static int64_t
sym_call(sym_ex_t *x, size_t n)
{
	const struct sym_rule_s *r = NULL;
	for (size_t k = 0; k < sizeof(sym_rules) / sizeof(sym_rules[0]); k++)
		if (strlen(sym_rules[k].name) == n &&
		    !memcmp(sym_rules[k].name, x->s + x->i, n))
			r = &sym_rules[k];
	if (!r || ++x->depth > 64) {
		x->err = x->err ? x->err : 1;
		return 0;
	}
	x->i += n + 1;
	int64_t a[SYM_MAXARGS];
	int na = 0;
	for (;;) {
		int64_t v = sym_expr(x);
		if (x->err)
			return 0;
		if (na < SYM_MAXARGS)
			a[na] = v;
		na++;
		if (sym_at(x, ';')) {
			x->i++;
			continue;
		}
		break;
	}
	if (!sym_at(x, ')') || na != r->nargs) {
		x->err = x->err ? x->err : 1;
		return 0;
	}
	x->i++;
	x->depth--;
	return r->fn(x, a);
}

static bool
sym_at(sym_ex_t *x, char c)
{
	return x->i < x->len && x->s[x->i] == c;
}

static int64_t
sym_int(sym_ex_t *x)
{
	int64_t v = 0;
	if (!(x->i < x->len && isdigit((unsigned char)x->s[x->i]))) {
		x->err = x->err ? x->err : 1;
		return 0;
	}
	while (x->i < x->len && isdigit((unsigned char)x->s[x->i])) {
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, x->s[x->i] - '0', &v))
			x->err = 2;
		x->i++;
	}
	return v;
}

static int64_t
sym_base(sym_ex_t *x)
{
	if (sym_at(x, '(')) {
		if (++x->depth > 64) {
			x->err = 1;
			return 0;
		}
		x->i++;
		int64_t v = sym_expr(x);
		if (!sym_at(x, ')'))
			x->err = x->err ? x->err : 1;
		x->i++;
		x->depth--;
		return v;
	}
	if (x->i < x->len && isdigit((unsigned char)x->s[x->i]))
		return sym_int(x);
	size_t n = 0;
	while (x->i + n < x->len && (isalnum((unsigned char)x->s[x->i + n]) ||
				     x->s[x->i + n] == '_'))
		n++;
	if (n && x->i + n < x->len && x->s[x->i + n] == '(')
		return sym_call(x, n);
	if (x->i + x->nl <= x->len && !memcmp(x->s + x->i, x->name, x->nl) &&
	    !(x->i + x->nl < x->len &&
	      (isalnum((unsigned char)x->s[x->i + x->nl]) ||
	       x->s[x->i + x->nl] == '_'))) {
		x->i += x->nl;
		return x->value;
	}
	x->err = x->err ? x->err : 1;
	return 0;
}

static int64_t
sym_factor(sym_ex_t *x)
{
	int64_t v = sym_base(x);
	if (sym_at(x, '^')) {
		x->i++;
		int64_t p = sym_int(x), r = 1;
		if (p < 1 || p > SYM_MAXPOW) {
			x->err = x->err ? x->err : 1;
			return 0;
		}
		for (int64_t k = 0; k < p; k++)
			if (__builtin_mul_overflow(r, v, &r))
				x->err = 2;
		v = r;
	}
	bool div = x->i + 1 < x->len && x->s[x->i] == '/' &&
		   x->s[x->i + 1] == '/';
	if (div || sym_at(x, '%')) {
		x->i += div ? 2 : 1;
		int64_t d = sym_int(x);
		if (d < 1) {
			x->err = x->err ? x->err : 1;
			return 0;
		}
		int64_t q = v / d, r = v % d;
		if (r < 0) {           /* Python's floor */
			q--;
			r += d;
		}
		v = div ? q : r;
	}
	return v;
}

static int64_t
sym_term(sym_ex_t *x)
{
	int64_t v = sym_factor(x);
	while (!x->err && sym_at(x, '*')) {
		x->i++;
		int64_t f = sym_factor(x);
		if (__builtin_mul_overflow(v, f, &v))
			x->err = 2;
	}
	return v;
}

static int64_t
sym_expr(sym_ex_t *x)
{
	bool neg = sym_at(x, '-');
	x->i += neg;
	int64_t v = sym_term(x);
	if (neg && __builtin_sub_overflow((int64_t)0, v, &v))
		x->err = 2;
	while (!x->err && (sym_at(x, '+') || sym_at(x, '-'))) {
		bool minus = sym_at(x, '-');
		x->i++;
		int64_t t = sym_term(x);
		if (minus ? __builtin_sub_overflow(v, t, &v)
			  : __builtin_add_overflow(v, t, &v))
			x->err = 2;
	}
	return v;
}

int
msim_symtrace_eval(const char *expr, size_t len, const char *name,
		   long value, int64_t *out, char *why, size_t whylen)
{
	sym_ex_t x = {.s = expr, .len = len, .name = name,
		      .nl = strlen(name), .value = value};
	int64_t v = len ? sym_expr(&x) : 0;
	if (!len || (!x.err && x.i != len))
		x.err = 1;
	if (x.err == 1) {
		snprintf(why, whylen, "size \"%.*s\": not an expression of "
			 "integers and %s (+ - * ^ // %% and parentheses)",
			 (int)(len > 200 ? 200 : len), expr, name);
		return MSIM_EFORMAT;
	}
	if (x.err == 3) {
		snprintf(why, whylen, "size \"%.*s\" at %s=%ld: a kernel "
			 "rule's arguments out of its domain",
			 (int)(len > 200 ? 200 : len), expr, name, value);
		return MSIM_EFORMAT;
	}
	if (x.err) {
		snprintf(why, whylen, "size \"%.*s\" at %s=%ld: past 64 bits",
			 (int)(len > 200 ? 200 : len), expr, name, value);
		return MSIM_EFORMAT;
	}
	*out = v;
	return 0;
}

/* "#symbol NAME V LO HI ..." into info. */
static int
sym_header(const char *path, const char *line, msim_symtrace_info_t *info,
	   char *why, size_t whylen)
{
	const char *p = line;
	if (strncmp(p, "#symbol ", 8) != 0)
		goto bad;
	p += 8;
	size_t n = 0;
	while ((isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 <
	       sizeof(info->name))
		n++;
	if (n == 0 || isdigit((unsigned char)p[0]) || p[n] != ' ')
		goto bad;
	memcpy(info->name, p, n);
	info->name[n] = '\0';
	p += n;
	long v[3];
	for (int k = 0; k < 3; k++) {
		char *end;
		if (*p != ' ' || !isdigit((unsigned char)p[1]))
			goto bad;
		errno = 0;
		v[k] = strtol(p + 1, &end, 10);
		if (errno || (*end && *end != ' ' && *end != '\n'))
			goto bad;
		p = end;
	}
	info->value = v[0];
	info->lo = v[1];
	info->hi = v[2];
	if (info->lo < 2 || info->lo > info->value || info->value > info->hi) {
		snprintf(why, whylen, "%s:2: the range %ld..%ld does not hold "
			 "%s=%ld (or starts below 2)", path, info->lo,
			 info->hi, info->name, info->value);
		return MSIM_EFORMAT;
	}
	return 0;
bad:
	snprintf(why, whylen, "%s:2: not \"#symbol NAME VALUE LO HI\"", path);
	return MSIM_EFORMAT;
}

/* Opens path and reads its two header lines: 1 with *fp_out (at the
 * third line) and info, 0 when not symbolic, or an error. */
static int
sym_open(const char *path, FILE **fp_out, msim_symtrace_info_t *info,
	 char *why, size_t whylen)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, fp);
	int rc = 0;
	if (n < 0 || strncmp(line, MSIM_SYMTRACE_MAGIC "\n",
			     sizeof(MSIM_SYMTRACE_MAGIC)) != 0) {
		if (n >= 0 && strncmp(line, "#memsim-symbolic",
				      strlen("#memsim-symbolic")) == 0) {
			snprintf(why, whylen, "%s:1: a symbolic trace of "
				 "another version (this memsim reads \"%s\")",
				 path, MSIM_SYMTRACE_MAGIC);
			rc = MSIM_EFORMAT;
		}
		goto out;
	}
	n = getline(&line, &cap, fp);
	if (n < 0) {
		snprintf(why, whylen, "%s:2: no #symbol line", path);
		rc = MSIM_EFORMAT;
		goto out;
	}
	if ((rc = sym_header(path, line, info, why, whylen)))
		goto out;
	rc = 1;
out:
	free(line);
	if (rc == 1)
		*fp_out = fp;
	else
		fclose(fp);
	return rc;
}

int
msim_symtrace_probe(const char *path, msim_symtrace_info_t *info_out,
		    char *why, size_t whylen)
{
	FILE *fp = NULL;
	msim_symtrace_info_t info = {.value = 0};
	int rc = sym_open(path, &fp, &info, why, whylen);
	if (rc == 1) {
		fclose(fp);
		*info_out = info;
	}
	return rc;
}

/* An allocation's address at the value recorded (or its number, a
 * block absent there) and its new one (0: absent at the value). */
typedef struct sym_addr_s {
	uint64_t old, now;
} sym_addr_t;

/* The next address after a block of n bytes at a: Recorder.alloc's
 * rule. */
static bool
sym_next(uint64_t *a, int64_t n)
{
	uint64_t step = ((uint64_t)n + 511) / 512 + 1;
	return !__builtin_mul_overflow(step, 512, &step) &&
		!__builtin_add_overflow(*a, step, a);
}

/* Splits line's 8 fields: starts of the first five in f[0..5) with
 * their lengths, f[5] the rest (after the fifth comma). */
static bool
sym_fields(char *line, char *f[6], size_t flen[5])
{
	char *p = line;
	for (int k = 0; k < 5; k++) {
		char *c = strchr(p, ',');
		if (!c)
			return false;
		f[k] = p;
		flen[k] = (size_t)(c - p);
		p = c + 1;
	}
	f[5] = p;
	/* stream, category, site: the recorder's site has no comma
	 * (memsim_record/fake.py's clean) */
	const char *c = strchr(p, ',');
	return c && (c = strchr(c + 1, ',')) && !strchr(c + 1, ',');
}

/* Appends (old, now) to *a (n entries of cap). */
static int
sym_push(sym_addr_t **a, size_t *n, size_t *cap, uint64_t old, uint64_t now,
	 char *why, size_t whylen)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		sym_addr_t *p = realloc(*a, nc * sizeof(*p));
		if (!p) {
			snprintf(why, whylen, "out of memory");
			return MSIM_ENOMEM;
		}
		*a = p;
		*cap = nc;
	}
	(*a)[*n].old = old;
	(*a)[(*n)++].now = now;
	return 0;
}

/* The entry of a[0..n) (increasing old) for old, or NULL. */
static const sym_addr_t *
sym_find(const sym_addr_t *a, size_t n, uint64_t old)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (a[m].old < old)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && a[lo].old == old ? &a[lo] : NULL;
}

static bool
sym_uint(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]) ||
		    __builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
			return false;
	}
	*out = v;
	return true;
}

int
msim_symtrace_instantiate(const char *path, long value, const char *out,
			  char *why, size_t whylen)
{
	FILE *fp = NULL, *wp = NULL;
	msim_symtrace_info_t info = {.value = 0};
	int rc = sym_open(path, &fp, &info, why, whylen);
	if (rc == 0) {
		snprintf(why, whylen, "%s:1: not a symbolic trace (no \"%s\")",
			 path, MSIM_SYMTRACE_MAGIC);
		return MSIM_EFORMAT;
	}
	if (rc < 0)
		return rc;
	if (value < info.lo || value > info.hi) {
		snprintf(why, whylen, "%s: %s=%ld is outside the range it "
			 "holds for, %ld..%ld (its guards)", path, info.name,
			 value, info.lo, info.hi);
		fclose(fp);
		return MSIM_EINVAL;
	}
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp%ld", out,
			     (long)getpid()) >= sizeof(tmp)) {
		snprintf(why, whylen, "%s: name too long", out);
		fclose(fp);
		return MSIM_EINVAL;
	}
	wp = fopen(tmp, "w");
	if (!wp) {
		snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
		fclose(fp);
		return MSIM_EIO;
	}
	char *line = NULL;
	size_t cap = 0, na = 0, capa = 0, nb = 0, capb = 0;
	uint64_t dropped = 0;
	sym_addr_t *addrs = NULL, *absent = NULL;
	uint64_t next = SYM_BASE, next_v = SYM_BASE;
	char ewhy[512];
	long lineno = 3;
	ssize_t n = getline(&line, &cap, fp);
	if (n < 0 || strncmp(line, "seq,", 4) != 0) {
		snprintf(why, whylen, "%s:3: no CSV header", path);
		rc = MSIM_EFORMAT;
		goto out;
	}
	fputs(line, wp);
	while ((n = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		char *f[6];
		size_t fl[5];
		if (n == 0 || line[n - 1] != '\n' || !sym_fields(line, f, fl)) {
			snprintf(why, whylen, "%s:%ld: not a row of 8 fields "
				 "ending in a newline", path, lineno);
			rc = MSIM_EFORMAT;
			goto out;
		}
		/* '?': a kernel rule's block (kernels.OPTIONAL), there only
		 * where its size is not 0 */
		bool opt = fl[4] > 0 && f[4][0] == '?';
		int64_t size, size_v;
		if ((rc = msim_symtrace_eval(f[4] + opt, fl[4] - opt, info.name,
					     value, &size, ewhy,
					     sizeof(ewhy))) ||
		    (rc = msim_symtrace_eval(f[4] + opt, fl[4] - opt, info.name,
					     info.value, &size_v, ewhy,
					     sizeof(ewhy)))) {
			snprintf(why, whylen, "%s:%ld: %s", path, lineno,
				 ewhy);
			goto out;
		}
		if (size < 0 || size_v < 0) {
			snprintf(why, whylen, "%s:%ld: size %.*s is %" PRId64
				 " at %s=%ld", path, lineno, (int)fl[4], f[4],
				 size < 0 ? size : size_v, info.name,
				 size < 0 ? value : info.value);
			rc = MSIM_EFORMAT;
			goto out;
		}
		uint64_t old;
		if (!sym_uint(f[3], fl[3], &old)) {
			snprintf(why, whylen, "%s:%ld: address \"%.*s\" not a "
				 "number", path, lineno, (int)fl[3], f[3]);
			rc = MSIM_EFORMAT;
			goto out;
		}
		uint64_t addr = old;
		bool alloc = fl[2] == 5 && !memcmp(f[2], "alloc", 5);
		bool freed = fl[2] == 14 && !memcmp(f[2], "free_completed", 14);
		if (opt && !alloc && !freed) {
			snprintf(why, whylen, "%s:%ld: a '?' size on a row that "
				 "is neither an alloc nor a free", path, lineno);
			rc = MSIM_EFORMAT;
			goto out;
		}
		/* absent at the value recorded: the recorder numbered it
		 * below 2^32 (Recorder.alloc), kept in absent[] */
		bool gone_v = opt && size_v == 0, gone = opt && size == 0;
		if (alloc && gone_v) {
			if (old >= SYM_BASE || (nb && old <= absent[nb - 1].old)) {
				snprintf(why, whylen, "%s:%ld: a block absent at "
					 "%s=%ld numbered %" PRIu64 " (not below "
					 "2^32, increasing)", path, lineno,
					 info.name, info.value, old);
				rc = MSIM_EFORMAT;
				goto out;
			}
			if ((rc = sym_push(&absent, &nb, &capb, old,
					   gone ? 0 : next, why, whylen)))
				goto out;
			addr = next;
			if (!gone && !sym_next(&next, size)) {
				snprintf(why, whylen, "%s:%ld: addresses past "
					 "64 bits", path, lineno);
				rc = MSIM_EFORMAT;
				goto out;
			}
		} else if (alloc) {
			/* the rule at the value recorded gives the file's
			 * addresses, in increasing order */
			if (old != next_v || (na && old <= addrs[na - 1].old)) {
				snprintf(why, whylen, "%s:%ld: address %" PRIu64
					 " is not the recorder's (%" PRIu64
					 " at %s=%ld)", path, lineno, old,
					 next_v, info.name, info.value);
				rc = MSIM_EFORMAT;
				goto out;
			}
			if ((rc = sym_push(&addrs, &na, &capa, old,
					   gone ? 0 : next, why, whylen)))
				goto out;
			addr = next;
			if ((!gone && !sym_next(&next, size)) ||
			    !sym_next(&next_v, size_v)) {
				snprintf(why, whylen, "%s:%ld: addresses past "
					 "64 bits", path, lineno);
				rc = MSIM_EFORMAT;
				goto out;
			}
		} else if (freed) {
			const sym_addr_t *e = gone_v ? sym_find(absent, nb, old)
						     : sym_find(addrs, na, old);
			if (!e) {
				snprintf(why, whylen, "%s:%ld: a free of %"
					 PRIu64 ", which no row allocated",
					 path, lineno, old);
				rc = MSIM_EFORMAT;
				goto out;
			}
			if ((e->now == 0) != gone) {
				snprintf(why, whylen, "%s:%ld: a free of %"
					 PRIu64 " whose size is not its "
					 "allocation's at %s=%ld", path, lineno,
					 old, info.name, value);
				rc = MSIM_EFORMAT;
				goto out;
			}
			addr = e->now;
		}
		if (gone) {
			dropped++;
			continue;
		}
		if (!dropped) {
			fprintf(wp, "%.*s,%.*s,", (int)fl[0], f[0], (int)fl[1],
				f[1]);
		} else {
			/* the rows after a dropped one renumbered: seq and
			 * time_us count the recorder's rows */
			uint64_t sq, tu;
			if (!sym_uint(f[0], fl[0], &sq) ||
			    !sym_uint(f[1], fl[1], &tu) || sq < dropped ||
			    tu < dropped) {
				snprintf(why, whylen, "%s:%ld: seq and time_us "
					 "not row numbers", path, lineno);
				rc = MSIM_EFORMAT;
				goto out;
			}
			fprintf(wp, "%" PRIu64 ",%" PRIu64 ",", sq - dropped,
				tu - dropped);
		}
		fprintf(wp, "%.*s,%" PRIu64 ",%" PRId64 ",%s", (int)fl[2], f[2],
			addr, size, f[5]);
	}
	if (ferror(fp)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		rc = MSIM_EIO;
	}
out:
	free(line);
	free(addrs);
	free(absent);
	fclose(fp);
	if (fclose(wp) != 0 && !rc) {
		snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
		rc = MSIM_EIO;
	}
	if (!rc && rename(tmp, out) != 0) {
		snprintf(why, whylen, "%s: %s", out, strerror(errno));
		rc = MSIM_EIO;
	}
	if (rc)
		unlink(tmp);
	return rc;
}
