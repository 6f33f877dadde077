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
#include "testutil.h"
#include "traces/trace.h"

static char tmpdir[64];

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/memsim-fmt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *
tmp_path(const char *name)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

/* Writes n bytes to the temporary file name; returns its path. */
static const char *
write_bytes(const char *name, const void *data, size_t n)
{
	const char *p = tmp_path(name);
	FILE *fp = fopen(p, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, n, fp), n);
	fclose(fp);
	return p;
}

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
static int
read_all(const char *path, const msim_trace_options_t *opt, char *err,
	 size_t errlen, uint64_t *n_out)
{
	msim_trace_t *t;
	int rc = msim_trace_open(path, opt, &t, err, errlen);
	if (rc)
		return rc;
	msim_req_t r;
	uint64_t n = 0;
	while ((rc = msim_trace_next(t, &r)) == 1)
		n++;
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
	/* Truncated anywhere: an error. */
	for (size_t cut = 0; cut < n; cut += 1 + cut / 3) {
		const char *p = write_bytes("cut.msimtr", buf, cut);
		msim_trace_options_t opt = {
			.format = msim_trace_format_find("bin")};
		ck_assert_msg(read_all(p, &opt, err, sizeof(err), NULL) < 0,
			      "cut at %zu accepted", cut);
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

int
main(void)
{
	Suite *s = suite_create("trace_formats");
	TCase *tc = tcase_create("formats");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
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
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
