/*
 * The trace formats: every snapshot pickle gives the requests of its CSV;
 * the CSV, pickle, RMM and binary forms of a trace give identical runs;
 * a recording with hidden empty_cache() calls reproduces its segment
 * sequence and memory_stats exactly; and truncated, corrupted or hostile
 * files get a clean error naming the file and position.
 */
#include <config.h>

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "lab/input.h"
#include "testutil.h"
#include "traces/trace.h"

/* Converts in to out (entries as they are). */
static void
convert(const char *in, const char *out, const char *format)
{
	char why[512];
	msim_trace_t *t;
	msim_trace_writer_t *w;
	ck_assert_msg(msim_trace_open(in, NULL, &t, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_msg(msim_trace_writer_open(out, msim_trace_format_find(format),
					     &w, why, sizeof(why)) == 0,
		      "%s", why);
	msim_entry_t e;
	int rc;
	while ((rc = msim_trace_next_entry(t, &e)) == 1)
		ck_assert_int_eq(msim_trace_writer_put(w, &e), 0);
	ck_assert_msg(rc == 0, "%s", msim_trace_errmsg(t));
	ck_assert_msg(msim_trace_writer_close(w, why, sizeof(why)) == 0, "%s",
		      why);
	msim_trace_close(t);
}

/*
 * A trace opened unhashed (a sweep's trace, whose plan hashed the file)
 * reads the same requests and has no hash: msim_trace_hashed() says so,
 * where the same file opened as usual has its content hash at the end.
 */
/* The format table answers whether a trace is a snapshot (a state beside
 * its requests), and only such a format gives segments; a sweep reads a
 * trace once for its settings unless its format is one (lab/input.c). */
START_TEST(test_snapshot_flag_and_cache)
{
	for (const msim_trace_format_t *const *f = msim_trace_formats(); *f;
	     f++)
		ck_assert_msg((*f)->snapshot == ((*f)->segments != NULL),
			      "%s", (*f)->name);
	ck_assert(msim_trace_format_find("pickle")->snapshot);
	ck_assert(!msim_trace_format_find("csv")->snapshot);
	msim_trace_options_t topt = {0};
	msim_trace_cache_t c;
	msim_trace_cache_load(&c, test_data("traces/gpt2_fp32.csv"), &topt,
			      1 << 20);
	ck_assert_ptr_nonnull(c.trace);
	ck_assert_uint_gt(c.n, 0);
	ck_assert(!msim_trace_format_of(c.trace)->snapshot);
	msim_trace_cache_clear(&c);
	msim_trace_cache_load(&c, test_data("pickles/gpt2_fp32.pickle"),
			      &topt, 1 << 20);
	ck_assert_ptr_null(c.trace);
	ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(test_unhashed_reader)
{
	char why[512];
	msim_trace_options_t plain = {0}, unhashed = {.unhashed = true};
	msim_trace_t *a, *b;
	const char *csv = test_data("traces/gpt2_fp32.csv");
	ck_assert_msg(msim_trace_open(csv, &plain, &a, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_msg(msim_trace_open(csv, &unhashed, &b, why,
				      sizeof(why)) == 0, "%s", why);
	msim_req_t ra, rb;
	int rca, rcb;
	size_t n = 0;
	while ((rca = msim_trace_next(a, &ra)) == 1) {
		ck_assert_int_eq(rcb = msim_trace_next(b, &rb), 1);
		ck_assert(ra.kind == rb.kind && ra.size == rb.size &&
			  ra.id == rb.id);
		n++;
	}
	ck_assert_int_eq(rca, 0);
	ck_assert_int_eq(msim_trace_next(b, &rb), 0);
	ck_assert_uint_gt(n, 100);
	ck_assert(msim_trace_hashed(a) && !msim_trace_hashed(b));
	ck_assert_uint_ne(msim_trace_hash(a), 0);
	ck_assert_uint_eq(msim_trace_hash(b), 0);
	/* The file's bytes, hashed. */
	FILE *fp = fopen(csv, "rb");
	ck_assert_ptr_nonnull(fp);
	msim_hash_t h;
	msim_hash_init(&h);
	char buf[4096];
	size_t got;
	while ((got = fread(buf, 1, sizeof(buf), fp)) > 0)
		msim_hash_update(&h, buf, got);
	fclose(fp);
	ck_assert_uint_eq(msim_trace_hash(a), msim_hash_final(&h));
	msim_trace_close(a);
	msim_trace_close(b);
}
END_TEST

static const char *const workloads[] = {
	"gpt2_fp32", "bert_infer_varlen", "prefetch_2stream", "resnet50_amp",
	"train_eval_emptycache", "resnet50_amp.frames",
};
#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* The pickle's requests are the CSV's: kind, size, stream, id, flags (the
 * addresses and times of some pickles come from another run of the same
 * program). */
START_TEST(test_pickle_requests_equal_csv)
{
	char pk[128], csv[128], why[512];
	snprintf(pk, sizeof(pk), "pickles/%s.pickle", workloads[_i]);
	snprintf(csv, sizeof(csv), "traces/%.*s.csv",
		 (int)strcspn(workloads[_i], "."), workloads[_i]);
	for (int mode = 0; mode < 2; mode++) {
		msim_trace_options_t opt = {.deferred_frees = mode,
					    .hidden_empty_cache = mode};
		msim_trace_t *a, *b;
		ck_assert_msg(msim_trace_open(test_data(pk), &opt, &a, why,
					      sizeof(why)) == 0, "%s", why);
		ck_assert_str_eq(msim_trace_format_name(a), "pickle");
		ck_assert_msg(msim_trace_open(test_data(csv), &opt, &b, why,
					      sizeof(why)) == 0, "%s", why);
		msim_req_t ra, rb;
		uint64_t n = 0;
		int rca, rcb;
		for (;;) {
			rca = msim_trace_next(a, &ra);
			rcb = msim_trace_next(b, &rb);
			ck_assert_msg(rca == rcb, "%s: request %" PRIu64
				      ": %d vs %d (%s%s)", pk, n, rca, rcb,
				      msim_trace_errmsg(a),
				      msim_trace_errmsg(b));
			if (rca != 1)
				break;
			ck_assert_msg(ra.kind == rb.kind && ra.size == rb.size &&
				      ra.stream == rb.stream &&
				      ra.id == rb.id && ra.flags == rb.flags,
				      "%s: request %" PRIu64 " differs", pk, n);
			n++;
		}
		ck_assert_int_eq(rca, 0);
		ck_assert_uint_gt(n, 4000);
		msim_trace_close(a);
		msim_trace_close(b);
	}
}
END_TEST

typedef struct run_s {
	msim_stats_t st;
	msim_summary_t sum;
	msim_seg_event_t ev[512];
	size_t nev;
} run_t;

/* Replays path through the pytorch policy (conf, cap_frac) and keeps its
 * figures and device events. */
static void
run_trace(const char *path, const msim_trace_options_t *opt, bool hints,
	  const char *conf, double cap_frac, run_t *out)
{
	char why[512];
	msim_trace_t *t;
	ck_assert_msg(msim_trace_open(path, opt, &t, why, sizeof(why)) == 0,
		      "%s", why);
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	msim_params_t pv;
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_eq(msim_params_parse(&pv, conf), 0);
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t),
		.policy = ops,
		.params = &pv,
		.device = {.log_events = 1, .use_hints = hints},
		.fraction = cap_frac,
	};
	msim_sim_t *sim;
	ck_assert_msg(msim_sim_new(&cfg, &sim, why, sizeof(why)) == 0, "%s",
		      why);
	ck_assert_msg(msim_sim_run(sim) == 0, "%s", msim_sim_errmsg(sim));
	memset(out, 0, sizeof(*out));
	msim_sim_stats(sim, &out->st);
	msim_sim_summary(sim, &out->sum);
	size_t n;
	const msim_seg_event_t *ev =
		msim_device_events(msim_sim_device(sim), &n);
	ck_assert_uint_le(n, 512);
	memcpy(out->ev, ev, n * sizeof(*ev));
	out->nev = n;
	msim_sim_destroy(sim);
	msim_trace_close(t);
	msim_params_clear(&pv);
}

static void
assert_same_run(const run_t *a, const run_t *b, const char *what)
{
	ck_assert_msg(!memcmp(&a->st, &b->st, sizeof(a->st)),
		      "%s: statistics differ", what);
	ck_assert_int_eq(a->sum.requests, b->sum.requests);
	ck_assert_int_eq(a->sum.oom_request, b->sum.oom_request);
	ck_assert_uint_eq(a->nev, b->nev);
	for (size_t i = 0; i < a->nev; i++)
		ck_assert_msg(a->ev[i].request == b->ev[i].request &&
			      a->ev[i].action == b->ev[i].action &&
			      a->ev[i].size == b->ev[i].size &&
			      a->ev[i].addr == b->ev[i].addr,
			      "%s: device event %zu differs", what, i);
}

/* memsim run gives identical results from the CSV, pickle, RMM and binary
 * forms of the same trace (also under a cap that makes it OOM). */
START_TEST(test_same_run_from_every_format)
{
	static const char *const w[] = {"bert_infer_varlen",
					"prefetch_2stream"};
	char csv[4200], pk[4200];
	snprintf(csv, sizeof(csv), "%s",
		 test_data(_i < 2 ? "traces/bert_infer_varlen.csv"
				  : "traces/prefetch_2stream.csv"));
	snprintf(pk, sizeof(pk), "%s", test_data(_i < 2
		 ? "pickles/bert_infer_varlen.pickle"
		 : "pickles/prefetch_2stream.pickle"));
	const char *bin = tmp_path("t.msimtr"), *rmm = tmp_path("t.rmm.csv");
	const char *csv2 = tmp_path("t2.csv");
	convert(csv, bin, "bin");
	convert(csv, rmm, "rmm");
	convert(bin, csv2, "csv");
	double cap = _i % 2 ? 0.005 : 0.0;
	run_t base, other;
	run_trace(csv, NULL, false, "", cap, &base);
	const char *forms[] = {pk, bin, rmm, csv2};
	for (size_t k = 0; k < 4; k++) {
		run_trace(forms[k], NULL, false, "", cap, &other);
		assert_same_run(&base, &other, forms[k]);
	}
	(void)w;
}
END_TEST

/* CSV -> binary -> entries: every field of every entry survives. */
START_TEST(test_bin_round_trip_is_exact)
{
	const char *csv = test_data("traces/prefetch_2stream.csv");
	char csvcopy[4200];
	snprintf(csvcopy, sizeof(csvcopy), "%s", csv);
	const char *bin = tmp_path("rt.bin");
	convert(csvcopy, bin, "bin");
	char why[512];
	msim_trace_t *a, *b;
	ck_assert_int_eq(msim_trace_open(csvcopy, NULL, &a, why, sizeof(why)),
			 0);
	ck_assert_int_eq(msim_trace_open(bin, NULL, &b, why, sizeof(why)), 0);
	ck_assert_str_eq(msim_trace_format_name(b), "bin");
	msim_entry_t x, y;
	int rc;
	uint64_t n = 0;
	while ((rc = msim_trace_next_entry(a, &x)) == 1) {
		ck_assert_int_eq(msim_trace_next_entry(b, &y), 1);
		ck_assert(x.time_us == y.time_us && x.addr == y.addr &&
			  x.size == y.size && x.stream == y.stream &&
			  x.action == y.action);
		n++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(msim_trace_next_entry(b, &y), 0);
	ck_assert_uint_eq(n, 6368);
	msim_trace_close(a);
	msim_trace_close(b);
	/* A quarter of the CSV's size or less. */
	FILE *fa = fopen(csvcopy, "rb"), *fb = fopen(bin, "rb");
	fseek(fa, 0, SEEK_END);
	fseek(fb, 0, SEEK_END);
	ck_assert_int_lt(4 * ftell(fb), ftell(fa));
	fclose(fa);
	fclose(fb);
}
END_TEST

/* The recording of train_eval_emptycache, replayed as a recording (its
 * segment addresses, free_requested applied, hidden empty_cache() calls
 * found), gives its own segment_alloc/segment_free sequence and its row
 * of captures.tsv exactly; from the CSV and from the pickle. */
START_TEST(test_recording_reproduces_emptycache)
{
	const char *path = test_data(_i ? "pickles/train_eval_emptycache.pickle"
					: "traces/train_eval_emptycache.csv");
	char pathcopy[4200];
	snprintf(pathcopy, sizeof(pathcopy), "%s", path);
	msim_trace_options_t opt = {.deferred_frees = true,
				    .hidden_empty_cache = true};
	run_t r;
	run_trace(pathcopy, &opt, true, "", 0.0, &r);

	/* The recorded segment rows, in order. */
	char why[512];
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(pathcopy, NULL, &t, why, sizeof(why)),
			 0);
	msim_entry_t e;
	size_t k = 0;
	while (msim_trace_next_entry(t, &e) == 1) {
		if (e.action != MSIM_ACT_SEGMENT_ALLOC &&
		    e.action != MSIM_ACT_SEGMENT_FREE)
			continue;
		ck_assert_msg(k < r.nev, "fewer events than the recording");
		ck_assert_msg(!strcmp(msim_seg_action_name(r.ev[k].action),
				      msim_action_name(e.action)) &&
			      r.ev[k].size == e.size && r.ev[k].addr == e.addr,
			      "segment event %zu differs", k);
		k++;
	}
	ck_assert_uint_eq(k, r.nev);
	ck_assert_uint_eq(k, 184);
	uint64_t found, maybe;
	msim_trace_empty_caches(t, &found, &maybe);
	msim_trace_close(t);

	/* captures.tsv */
	FILE *fp = fopen(test_data("captures.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char head[4096], line[4096];
	ck_assert_ptr_nonnull(fgets(head, sizeof(head), fp));
	bool seen = false;
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "train_eval_emptycache\t", 22))
			continue;
		seen = true;
		char *hs, *ls;
		char *hn = strtok_r(head, "\t\n", &hs);
		char *ln = strtok_r(line, "\t\n", &ls);
		int cols = 0;
		while ((hn = strtok_r(NULL, "\t\n", &hs)) &&
		       (ln = strtok_r(NULL, "\t\n", &ls))) {
			int64_t got;
			ck_assert_msg(msim_stats_get(&r.st, hn, &got) == 0,
				      "no statistic %s", hn);
			ck_assert_msg(got == strtoll(ln, NULL, 10),
				      "%s = %" PRId64 ", recorded %s", hn, got,
				      ln);
			cols++;
		}
		ck_assert_int_eq(cols, 14);
	}
	fclose(fp);
	ck_assert(seen);
	ck_assert_int_eq(r.st.num_sync_all_streams, 2);
}
END_TEST

/* info's counters: the two empty_cache() calls of the recording. */
START_TEST(test_hidden_empty_cache_rules)
{
	/* Rule a: frees after the run; rule b: a new segment after it; a
	 * run at the end. */
	const char *text =
		"action,addr,size\n"
		"segment_alloc,4096,2097152\n"
		"alloc,4096,100\n"
		"free_completed,4096,100\n"
		"segment_free,4096,2097152\n"
		"alloc,8192,100\n"          /* rule a: empty_cache first */
		"free_completed,8192,100\n"
		"segment_free,8192,2097152\n"
		"segment_alloc,65536,20971520\n"
		"alloc,65536,3000000\n"     /* rule b: flagged */
		"free_completed,65536,3000000\n"
		"segment_free,65536,20971520\n"; /* at the end */
	const char *p = write_bytes("ec.csv", text, strlen(text));
	msim_trace_options_t opt = {.hidden_empty_cache = true};
	msim_trace_t *t;
	char why[512];
	ck_assert_int_eq(msim_trace_open(p, &opt, &t, why, sizeof(why)), 0);
	static const struct {
		int kind, flags;
	} want[] = {
		{MSIM_REQ_SEGMENT_HINT, 0}, {MSIM_REQ_ALLOC, 0},
		{MSIM_REQ_FREE, 0}, {MSIM_REQ_EMPTY_CACHE, 0},
		{MSIM_REQ_ALLOC, 0}, {MSIM_REQ_FREE, 0},
		{MSIM_REQ_SEGMENT_HINT, 0},
		{MSIM_REQ_ALLOC, MSIM_REQF_MAYBE_EMPTY_CACHE},
		{MSIM_REQ_FREE, 0}, {MSIM_REQ_EMPTY_CACHE, 0},
	};
	msim_req_t r;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(msim_trace_next(t, &r), 1);
		ck_assert_msg(r.kind == want[i].kind &&
			      r.flags == want[i].flags,
			      "request %zu: kind %d flags %d", i, r.kind,
			      r.flags);
	}
	ck_assert_int_eq(msim_trace_next(t, &r), 0);
	uint64_t found, maybe;
	msim_trace_empty_caches(t, &found, &maybe);
	ck_assert_uint_eq(found, 2);
	ck_assert_uint_eq(maybe, 1);
	msim_trace_close(t);
	/* Off by default: no EMPTY_CACHE, no flag. */
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, why, sizeof(why)), 0);
	int rc;
	while ((rc = msim_trace_next(t, &r)) == 1)
		ck_assert(r.kind != MSIM_REQ_EMPTY_CACHE && r.flags == 0);
	ck_assert_int_eq(rc, 0);
	msim_trace_close(t);
}
END_TEST

/* Reads path to the end as requests; returns the status, err filled. */
static bool read_by_fill; /* read_all() through msim_trace_fill() */

static int
read_all(const char *path, const msim_trace_options_t *opt, char *err,
	 size_t errlen, uint64_t *n_out)
{
	msim_trace_t *t;
	int rc = msim_trace_open(path, opt, &t, err, errlen);
	if (rc)
		return rc;
	msim_req_t r[5];
	uint64_t n = 0;
	if (read_by_fill) { /* a block at a time, the format's own stage */
		size_t k;
		while ((rc = msim_trace_fill(t, r, 5, &k)) == 1)
			n += k;
		n += k;
	} else {
		while ((rc = msim_trace_next(t, r)) == 1)
			n++;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s", msim_trace_errmsg(t));
	if (n_out)
		*n_out = n;
	msim_trace_close(t);
	return rc;
}

/* A byte string of hostile pickle input and the error it must give. */
typedef struct hostile_s {
	const char *name;
	const char *data;
	size_t len;
	const char *why;
} hostile_t;

#define H(name, lit, why) {name, lit, sizeof(lit) - 1, why}

START_TEST(test_hostile_pickles_fail_cleanly)
{
	static const hostile_t c[] = {
		H("unknown opcode", "\x80\x04\xff", "unknown pickle opcode 0xff"),
		H("huge string", "\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x0f",
		  "past the end of the file"),
		H("huge bytes", "\x80\x04\x42\xff\xff\xff\x7f",
		  "past the end of the file"),
		H("huge long", "\x80\x04\x8b\xff\xff\xff\x00",
		  "past the end of the file"),
		H("memo get unset", "\x80\x04h\x07", "never PUT"),
		H("memo huge index", "\x80\x04Nr\xff\xff\xff\x7f",
		  "larger than the file"),
		H("memo cycle", "\x80\x04]\x94(h\x00h\x00" "eh\x00" "a.",
		  "no 'device_traces'"),
		H("underflow", "\x80\x04" "a", "underflow"),
		H("no mark", "\x80\x04}u", "no MARK"),
		H("setitems odd", "\x80\x04}(Nu", "a key and no value"),
		H("append to dict", "\x80\x04}Na", "APPEND to a non-list"),
		H("truncated", "\x80\x04}\x94(", "truncated pickle"),
		H("protocol 9", "\x80\x09}", "protocol"),
		H("out of band", "\x80\x05\x97", "out-of-band"),
		H("no traces", "\x80\x04}.", "no 'device_traces'"),
		H("bad action",
		  "\x80\x04}(\x8c\x0d" "device_traces]]}(\x8c\x06" "action"
		  "\x8c\x03" "foo" "ua" "a" "u.", "unknown action"),
		H("no size",
		  "\x80\x04}(\x8c\x0d" "device_traces]]}(\x8c\x06" "action"
		  "\x8c\x05" "alloc\x8c\x04" "addrK\x10" "ua" "a" "u.",
		  "without 'size'"),
		H("two devices",
		  "\x80\x04}(\x8c\x0d" "device_traces]("
		  "]}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "addrK\x10"
		  "\x8c\x04" "sizeK\x10" "ua"
		  "]}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "addrK\x10"
		  "\x8c\x04" "sizeK\x10" "ua"
		  "eu.", "--device"),
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *p = write_bytes("h.pickle", c[i].data, c[i].len);
		char err[512] = "";
		msim_trace_options_t opt = {
			.format = msim_trace_format_find("pickle")};
		int rc = read_all(p, &opt, err, sizeof(err), NULL);
		ck_assert_msg(rc < 0, "%s: accepted", c[i].name);
		ck_assert_msg(strstr(err, p) && strstr(err, "byte ") &&
			      strstr(err, c[i].why), "%s: '%s'", c[i].name,
			      err);
	}
}
END_TEST

/* Deep nesting: a million MARKs or lists; bounded, not a crash. */
START_TEST(test_deep_nesting_is_bounded)
{
	size_t n = 1000000;
	char *buf = malloc(n + 3);
	buf[0] = (char)0x80;
	buf[1] = 4;
	for (int kind = 0; kind < 2; kind++) {
		memset(buf + 2, kind ? ']' : '(', n);
		buf[n + 2] = '.';
		const char *p = write_bytes("deep.pickle", buf, n + 3);
		char err[512] = "";
		ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), NULL), 0);
		ck_assert_msg(strstr(err, "nests too deep"), "%s", err);
	}
	free(buf);
}
END_TEST

/* Two devices with events: --device picks one; a missing one is named. */
START_TEST(test_pickle_device_option)
{
	static const char two[] =
		"\x80\x04}(\x8c\x0d" "device_traces]("
		"]}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "addrK\x10"
		"\x8c\x04" "sizeK\x10" "ua"
		"](}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "addrK\x10"
		"\x8c\x04" "sizeK\x20" "u}(\x8c\x06" "action\x8c\x05" "alloc"
		"\x8c\x04" "addrK\x40\x8c\x04" "sizeK\x20" "ue"
		"eu.";
	const char *p = write_bytes("two.pickle", two, sizeof(two) - 1);
	char err[512];
	uint64_t n;
	msim_trace_options_t opt = {.device1 = 1};
	ck_assert_int_eq(read_all(p, &opt, err, sizeof(err), &n), 0);
	ck_assert_uint_eq(n, 1);
	opt.device1 = 2;
	ck_assert_int_eq(read_all(p, &opt, err, sizeof(err), &n), 0);
	ck_assert_uint_eq(n, 2);
	opt.device1 = 3;
	ck_assert_int_lt(read_all(p, &opt, err, sizeof(err), &n), 0);
	ck_assert_ptr_nonnull(strstr(err, "no device 2"));
}
END_TEST

/* Every prefix of a real snapshot (cut every 997 bytes) and single-byte
 * corruptions fail cleanly or read; none crash or hang. */
START_TEST(test_truncated_and_corrupted_pickles)
{
	FILE *fp = fopen(test_data("pickles/train_eval_emptycache.pickle"),
			 "rb");
	ck_assert_ptr_nonnull(fp);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	char err[512];
	for (size_t cut = 1; cut < n; cut += 997 * 7) {
		const char *p = write_bytes("cut.pickle", buf, cut);
		ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), NULL), 0);
		ck_assert_msg(strstr(err, "byte ") || strstr(err, ":"), "%s",
			      err);
	}
	for (size_t at = 3; at < n; at += 4099) {
		char saved = buf[at];
		buf[at] = (char)(buf[at] ^ 0x5a);
		const char *p = write_bytes("bad.pickle", buf, n);
		read_all(p, NULL, err, sizeof(err), NULL);
		buf[at] = saved;
	}
}
END_TEST

START_TEST(test_bad_binary_and_rmm_inputs)
{
	const char *csv = test_data("traces/bert_infer_varlen.csv");
	char csvcopy[4200];
	snprintf(csvcopy, sizeof(csvcopy), "%s", csv);
	const char *bin = tmp_path("b.msimtr");
	convert(csvcopy, bin, "bin");
	FILE *fp = fopen(bin, "rb");
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	char err[512];
	/* Truncated anywhere: an error, entry by entry or a block at a
	 * time. */
	for (size_t cut = 0; cut < n; cut += 1 + cut / 3) {
		const char *p = write_bytes("cut.msimtr", buf, cut);
		msim_trace_options_t opt = {
			.format = msim_trace_format_find("bin")};
		for (int f = 0; f < 2; f++) {
			read_by_fill = f;
			ck_assert_msg(read_all(p, &opt, err, sizeof(err),
					       NULL) < 0,
				      "cut at %zu accepted", cut);
		}
		read_by_fill = false;
	}
	/* A flipped payload byte: the checksum. */
	buf[100] ^= 1;
	const char *p = write_bytes("flip.msimtr", buf, n);
	ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), NULL), 0);
	ck_assert_msg(strstr(err, "checksum mismatch") && strstr(err, "byte 16"),
		      "%s", err);
	buf[100] ^= 1;
	buf[8] = 7; /* version */
	p = write_bytes("ver.msimtr", buf, n);
	ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), NULL), 0);
	ck_assert_ptr_nonnull(strstr(err, "version 7"));

	static const struct {
		const char *text, *why;
	} r[] = {
		{"Thread,Time,Action,Pointer,Size,Stream\n"
		 "1,10:00:00.5,allocate,0x10,x,0x0\n", ":2: size 'x'"},
		{"Thread,Time,Action,Pointer,Size,Stream\n"
		 "1,25:00:00.5,allocate,0x10,8,0x0\n", ":2: time"},
		{"Thread,Time,Action,Pointer,Size,Stream\n"
		 "1,1.5,reallocate,0x10,8,0x0\n", ":2: unknown action"},
		{"Thread,Time,Action,Pointer,Size,Stream\n"
		 "1,1.5,free,0x10,8,0x0\n", ":2: free_completed of unknown"},
	};
	static const msim_trace_options_t strict = {.strict = true};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		p = write_bytes("r.csv", r[i].text, strlen(r[i].text));
		ck_assert_int_lt(read_all(p, &strict, err, sizeof(err), NULL),
				 0);
		ck_assert_msg(strstr(err, r[i].why), "%s", err);
	}
	/* RMM's time of day and pointers read right. */
	const char *ok = "Thread,Time,Action,Pointer,Size,Stream\n"
			 "7,23:59:59.999999,allocate,0x7f0000001000,256,0x5\n"
			 "7,00:00:00:000001,free,0x7f0000001000,256,0x5\n";
	p = write_bytes("ok.csv", ok, strlen(ok));
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	ck_assert_str_eq(msim_trace_format_name(t), "rmm");
	msim_req_t q;
	ck_assert_int_eq(msim_trace_next(t, &q), 1);
	ck_assert_uint_eq(q.addr, 0x7f0000001000);
	ck_assert_uint_eq(q.stream, 5);
	ck_assert_uint_eq(q.size, 256);
	ck_assert_int_eq(msim_trace_next(t, &q), 1);
	ck_assert_int_eq(q.kind, MSIM_REQ_FREE);
	ck_assert_uint_eq(q.time, 2000); /* 2 us later, across midnight */
	msim_trace_close(t);
}
END_TEST


/* Every request of a trace, by msim_trace_fill() (cap k) or, for k = 0,
 * by msim_trace_next(). */
static msim_req_t *
all_requests(const char *path, bool deferred, size_t k, size_t *n_out,
	     msim_trace_tally_t *tally, uint64_t *hash)
{
	char why[512];
	msim_trace_t *t;
	msim_trace_options_t opt = {.deferred_frees = deferred};
	ck_assert_msg(msim_trace_open(path, &opt, &t, why, sizeof(why)) == 0,
		      "%s", why);
	size_t n = 0, cap = 1024;
	msim_req_t *v = malloc(cap * sizeof(*v));
	int rc;
	for (;;) {
		while (n + k + 16 > cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		if (k == 0) {
			if ((rc = msim_trace_next(t, &v[n])) != 1)
				break;
			n++;
			continue;
		}
		size_t got;
		rc = msim_trace_fill(t, &v[n], k, &got);
		ck_assert_uint_le(got, k);
		n += got;
		if (rc != 1)
			break;
	}
	ck_assert_msg(rc == 0, "%s", msim_trace_errmsg(t));
	ck_assert(msim_trace_ended(t));
	msim_trace_tally(t, tally);
	*hash = msim_trace_hash(t);
	msim_trace_close(t);
	*n_out = n;
	return v;
}

static const char *const fill_traces[] = {
	"bert_infer_varlen", "gpt2_fp32", "gpt2_varlen", "prefetch_2stream",
	"resnet50_amp", "train_eval_emptycache",
};

/* The binary format's own request stage (dense ids written by convert,
 * free pairs in one record) gives every request of the CSV's, field for
 * field, with deferred frees or without, whatever the batch size. */
START_TEST(test_bin_fill_equals_csv_requests)
{
	char csv[4200], rel[128];
	snprintf(rel, sizeof(rel), "traces/%s.csv", fill_traces[_i]);
	snprintf(csv, sizeof(csv), "%s", test_data(rel));
	const char *bin = tmp_path("f.msimtr");
	convert(csv, bin, "bin");
	for (int d = 0; d < 2; d++) {
		size_t na, nb;
		msim_trace_tally_t ta, tb;
		uint64_t ha, hb;
		msim_req_t *a = all_requests(csv, d, 0, &na, &ta, &ha);
		static const size_t caps[] = {2, 3, 16384};
		for (size_t c = 0; c < 3; c++) {
			msim_req_t *b = all_requests(bin, d, caps[c], &nb, &tb,
						     &hb);
			ck_assert_uint_eq(na, nb);
			for (size_t i = 0; i < na; i++)
				ck_assert_msg(a[i].time == b[i].time &&
					      a[i].size == b[i].size &&
					      a[i].stream == b[i].stream &&
					      a[i].addr == b[i].addr &&
					      a[i].id == b[i].id &&
					      a[i].kind == b[i].kind &&
					      a[i].flags == b[i].flags,
					      "%s: request %zu differs",
					      fill_traces[_i], i);
			ck_assert_uint_eq(ta.entries, tb.entries);
			ck_assert(!memcmp(ta.actions, tb.actions,
					  sizeof(ta.actions)));
			ck_assert_uint_eq(ta.first_us, tb.first_us);
			ck_assert_uint_eq(ta.last_us, tb.last_us);
			ck_assert_int_eq(ta.seg_bytes, tb.seg_bytes);
			free(b);
		}
		/* The CSV read a block at a time too. */
		msim_req_t *c = all_requests(csv, d, 7, &nb, &tb, &hb);
		ck_assert_uint_eq(na, nb);
		ck_assert_uint_eq(ha, hb);
		ck_assert(!memcmp(a, c, na * sizeof(*a)));
		free(c);
		free(a);
	}
}
END_TEST

static void
put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

/* CRC32C bit by bit (the format's block checksum since version 2). */
static uint32_t
crc32c_ref(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

/* A binary trace of one block of n entries in the payload pl, in version
 * v (checksums by the version's rule). */
static const char *
bin_file(const char *name, unsigned v, const uint8_t *pl, uint32_t len,
	 uint32_t n)
{
	static uint8_t f[256];
	size_t k = 0;
	memcpy(f, "\x89MSIMTR\n", 8);
	put_u32(f + 8, v);
	put_u32(f + 12, 0);
	k = 16;
	uint8_t end[8];
	put_u64(end, n);
	const uint8_t *body[2] = {pl, end};
	uint32_t lens[2] = {len, 8}, ns[2] = {n, 0};
	for (int b = 0; b < 2; b++) {
		uint64_t sum;
		if (v >= 2) {
			sum = crc32c_ref(body[b], lens[b]);
		} else {
			msim_hash_t h;
			msim_hash_init(&h);
			msim_hash_update(&h, body[b], lens[b]);
			sum = msim_hash_final(&h);
		}
		put_u32(f + k, ns[b]);
		put_u32(f + k + 4, lens[b]);
		put_u64(f + k + 8, sum);
		memcpy(f + k + 16, body[b], lens[b]);
		k += 16 + lens[b];
	}
	return write_bytes(name, f, k);
}

/* Version 1 files (raw records, msim_hash checksums) still read: an alloc
 * of 512 bytes at 0x1000 on stream 3, freed 5 us later. */
START_TEST(test_bin_version1_still_read)
{
	static const uint8_t pl[] = {
		0x10, 0x00, 0x80, 0x40, 0x80, 0x04, 0x03, /* alloc, stream */
		0x01, 0x0a, 0x00, 0x80, 0x04,             /* free_requested */
		0x02, 0x00, 0x00, 0x80, 0x04,             /* free_completed */
	};
	const char *p = bin_file("v1.msimtr", 1, pl, sizeof(pl), 3);
	for (size_t k = 0; k < 2; k++) {
		size_t n;
		msim_trace_tally_t ta;
		uint64_t h;
		msim_req_t *v = all_requests(p, true, k ? 4 : 0, &n, &ta, &h);
		ck_assert_uint_eq(n, 3);
		ck_assert_int_eq(v[0].kind, MSIM_REQ_ALLOC);
		ck_assert_uint_eq(v[0].addr, 0x1000);
		ck_assert_uint_eq(v[0].size, 512);
		ck_assert_uint_eq(v[0].stream, 3);
		ck_assert_int_eq(v[1].kind, MSIM_REQ_FREE_REQUESTED);
		ck_assert_uint_eq(v[1].time, 5000);
		ck_assert_int_eq(v[2].kind, MSIM_REQ_FREE);
		ck_assert_uint_eq(v[2].addr, 0x1000);
		ck_assert_uint_eq(v[1].id, v[0].id);
		ck_assert_uint_eq(v[2].id, v[0].id);
		free(v);
	}
	/* The same raw records in version 2 read the same, a block at a
	 * time too (the request stage takes them over). */
	p = bin_file("v2.msimtr", 2, pl, sizeof(pl), 3);
	size_t n;
	msim_trace_tally_t ta;
	uint64_t h;
	msim_req_t *v = all_requests(p, true, 2, &n, &ta, &h);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[2].addr, 0x1000);
	ck_assert_int_eq(v[2].kind, MSIM_REQ_FREE);
	free(v);
}
END_TEST

/* Actions past the tag's low 4 bits: a raw record with bit 6 is action
 * 16 + the low bits (empty_cache is 16), in version 2 only; one this
 * memsim does not know is an error naming it, or skipped and counted with
 * lenient, through both request stages. */
START_TEST(test_bin_ext_actions)
{
	/* empty_cache (stream 0 given), action 18 (17 is reset_peaks),
	 * empty_cache. */
	static const uint8_t pl[] = {0x50, 0, 0, 0, 0, 0x42, 0, 0, 0,
				     0x40, 0x02, 0, 0};
	char err[512];
	const char *p = bin_file("ext.msimtr", 2, pl, 5, 1);
	msim_trace_t *t;
	msim_entry_t e;
	msim_req_t r;
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	ck_assert_int_eq(msim_trace_next_entry(t, &e), 1);
	ck_assert_int_eq(e.action, MSIM_ACT_EMPTY_CACHE);
	ck_assert_str_eq(msim_action_name(e.action), "empty_cache");
	ck_assert_int_eq(msim_trace_next_entry(t, &e), 0);
	msim_trace_close(t);
	for (int f = 0; f < 2; f++) {
		size_t k = 0;
		ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)),
				 0);
		if (f)
			ck_assert_int_eq(msim_trace_fill(t, &r, 4, &k), 0);
		else
			ck_assert_int_eq(msim_trace_next(t, &r), 1);
		ck_assert_int_eq(r.kind, MSIM_REQ_EMPTY_CACHE);
		ck_assert_int_eq(r.time, 0);
		msim_trace_close(t);
	}
	p = bin_file("ext17.msimtr", 2, pl, sizeof(pl), 3);
	for (int f = 0; f < 2; f++) {
		read_by_fill = f;
		uint64_t n = 0;
		ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), &n), 0);
		ck_assert_msg(strstr(err, "ext17.msimtr: byte 37: unknown action "
				      "18 (a newer memsim's file?"), "%s", err);
		msim_trace_options_t opt = {.lenient = true};
		ck_assert_int_eq(read_all(p, &opt, err, sizeof(err), &n), 0);
		ck_assert_uint_eq(n, 2);
	}
	read_by_fill = false;
	ck_assert_int_eq(msim_trace_open(p, &(msim_trace_options_t){
				.lenient = true}, &t, err, sizeof(err)), 0);
	while (msim_trace_next(t, &r) == 1)
		;
	const char *first;
	ck_assert_uint_eq(msim_trace_skipped(t, &first), 1);
	ck_assert_str_eq(first, "action 18");
	msim_trace_close(t);
	/* Version 1 had no such records. */
	p = bin_file("ext1.msimtr", 1, pl, 5, 1);
	ck_assert_int_lt(read_all(p, NULL, err, sizeof(err), NULL), 0);
	ck_assert_msg(strstr(err, "bad tag 0x50"), "%s", err);
}
END_TEST

/* Version 2's ids are checked: a free of an id not live, an alloc of an
 * id live, a pair past its block, an id record in version 1. */
START_TEST(test_bin_bad_ids)
{
	static const struct {
		unsigned v;
		uint8_t pl[24];
		uint32_t len, n;
		const char *why;
	} c[] = {
		{2, {0x32, 0x00, 0x00, 0x08, 0x00}, 5, 1, "free of id 0, not live"},
		{2, {0x30, 0x00, 0x00, 0x80, 0x40, 0x08, 0x00,
		     0x20, 0x00, 0x00, 0x80, 0x40, 0x08}, 13, 2,
		 "id 0 is not the one"},
		{2, {0x30, 0x00, 0x05, 0x80, 0x40, 0x08, 0x00}, 7, 1,
		 "id 5 is not the one"},
		{2, {0x30, 0x00, 0x00, 0x80, 0x40, 0x08, 0x00,
		     0xe1, 0x00, 0x00, 0x02}, 11, 2, "pair past the block"},
		{1, {0x30, 0x00, 0x00, 0x80, 0x40, 0x08, 0x00}, 7, 1,
		 "bad tag 0x30"},
	};
	char err[512];
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *p = bin_file("id.msimtr", c[i].v, c[i].pl, c[i].len,
					 c[i].n);
		for (int f = 0; f < 2; f++) {
			read_by_fill = f;
			msim_trace_options_t opt = {.deferred_frees = true};
			ck_assert_int_lt(read_all(p, &opt, err, sizeof(err),
						  NULL), 0);
			ck_assert_msg(strstr(err, c[i].why), "case %zu: %s", i,
				      err);
		}
		read_by_fill = false;
	}
	/* What the request stage rejects stays a raw record, and reads as
	 * the same error as from the CSV. */
	static const char *const rows[] = {
		"alloc,4096,512,0\nalloc,4096,256,0\n", "still live",
		"alloc,4096,0,0\n", "alloc of 0 bytes",
		"free_completed,4096,512,0\n", "free_completed of unknown",
		"oom,0,0,0\n", "oom of 0 bytes",
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i += 2) {
		char text[256];
		snprintf(text, sizeof(text), "action,addr,size,stream\n%s",
			 rows[i]);
		const char *csv = write_bytes("raw.csv", text, strlen(text));
		char csvcopy[256];
		snprintf(csvcopy, sizeof(csvcopy), "%s", csv);
		const char *bin = tmp_path("raw.msimtr");
		convert(csvcopy, bin, "bin");
		msim_trace_options_t strict = {.strict = true};
		for (int f = 0; f < 2; f++) {
			read_by_fill = f;
			ck_assert_int_lt(read_all(bin, &strict, err,
						  sizeof(err), NULL), 0);
			ck_assert_msg(strstr(err, rows[i + 1]), "%s", err);
		}
		read_by_fill = false;
	}
	/* A partial history (a free of a block allocated before it began:
	 * seeded where met), an oom, expandable segments' maps: the request
	 * stage takes over from the binary format's, with its ids. */
	const char *text =
		"seq,time_us,action,addr,size,stream\n"
		"0,10,alloc,4096,512,0\n"
		"1,11,alloc,8192,512,0\n"
		"2,12,free_requested,4096,512,0\n"
		"3,13,free_completed,4096,512,0\n"
		"4,14,oom,1000,1024,0\n"
		"5,15,free_completed,65536,256,0\n"
		"6,16,alloc,4096,128,0\n"
		"7,17,segment_map,1048576,2097152,0\n"
		"8,18,alloc,12288,512,0\n"
		"9,19,free_requested,8192,512,0\n"
		"10,20,free_completed,8192,512,0\n"
		"11,21,free_completed,4096,128,0\n";
	const char *csv = write_bytes("seed.csv", text, strlen(text));
	char csvcopy[256];
	snprintf(csvcopy, sizeof(csvcopy), "%s", csv);
	const char *bin = tmp_path("seed.msimtr");
	convert(csvcopy, bin, "bin");
	size_t na, nb;
	msim_trace_tally_t ta, tb;
	uint64_t ha, hb;
	msim_req_t *a = all_requests(csvcopy, true, 0, &na, &ta, &ha);
	msim_req_t *b = all_requests(bin, true, 2, &nb, &tb, &hb);
	ck_assert_uint_eq(na, nb);
	ck_assert_uint_eq(na, 13);
	ck_assert(!memcmp(a, b, na * sizeof(*a)));
	ck_assert_uint_eq(ta.entries, tb.entries);
	ck_assert_int_eq(ta.seg_bytes, tb.seg_bytes);
	free(a);
	free(b);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("trace_formats");
	TCase *tc = tcase_create("formats");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_loop_test(tc, test_pickle_requests_equal_csv, 0, NWORKLOADS);
	tcase_add_loop_test(tc, test_same_run_from_every_format, 0, 4);
	tcase_add_test(tc, test_bin_round_trip_is_exact);
	tcase_add_loop_test(tc, test_recording_reproduces_emptycache, 0, 2);
	tcase_add_test(tc, test_hidden_empty_cache_rules);
	tcase_add_test(tc, test_hostile_pickles_fail_cleanly);
	tcase_add_test(tc, test_deep_nesting_is_bounded);
	tcase_add_test(tc, test_pickle_device_option);
	tcase_add_test(tc, test_truncated_and_corrupted_pickles);
	tcase_add_test(tc, test_bad_binary_and_rmm_inputs);
	tcase_add_loop_test(tc, test_bin_fill_equals_csv_requests, 0,
			    sizeof(fill_traces) / sizeof(fill_traces[0]));
	tcase_add_test(tc, test_bin_version1_still_read);
	tcase_add_test(tc, test_bin_bad_ids);
	tcase_add_test(tc, test_bin_ext_actions);
	tcase_add_test(tc, test_unhashed_reader);
	tcase_add_test(tc, test_snapshot_flag_and_cache);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
