/*
 * A user of memsim.h and nothing else: replays a trace as `memsim run`
 * does and prints every figure as "name value", one a line, then the
 * length of the timeline, so tests/api.sh can hold it against
 * `memsim run --json`.  The usage is the one a program written against
 * the installed library (pkg-config memsim) has:
 *
 *	api_run TRACE [POLICY [CONF [OPTION=VALUE ...]]]
 *	api_run --check    the API's contract on errors, printing each
 *	api_run --load DB RUN_ID   the figures of a stored run (memsim_load())
 *	api_run --lab PATTERN LO HI CAP TRACE TUNECAP DB
 *	                   memsim_fit() over PATTERN ({B}) under CAP and
 *	                   memsim_tune() of TRACE under TUNECAP into DB,
 *	                   printing "fit B" and "tune CONF", then the
 *	                   errors (memsim_record()'s printed)
 *
 * Errors: one line on stderr with the library's message, exit 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memsim.h>

static int fails;

#define EXPECT(cond)                                                       \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "api_run:%d: %s\n", __LINE__, #cond); \
			fails++;                                           \
		}                                                          \
	} while (0)

/* The errors of the contract, each with its code and a message. */
static int
check(const char *trace)
{
	memsim_run_t *r;
	int64_t v;
	double d;
	const char *t;
	memsim_point_t pt;

	EXPECT(strcmp(memsim_version(), "") != 0);
	EXPECT(strcmp(memsim_policy_name(0), "pytorch") == 0 ||
	       memsim_policy_name(0) != NULL);
	size_t np = 0;
	while (memsim_policy_name(np))
		np++;
	EXPECT(np >= 2 && memsim_policy_summary(np) == NULL);

	EXPECT(memsim_open(&r, "") == MEMSIM_EINVAL);
	EXPECT(strstr(memsim_errmsg(r), "no trace") != NULL);
	memsim_close(r);

	EXPECT(memsim_open(&r, trace) == 0);
	/* Nothing to read before the replay. */
	EXPECT(memsim_count(r) == 0 && memsim_timeline_len(r) == 0);
	EXPECT(memsim_get_int(r, "requests", &v) == MEMSIM_ESTATE);
	EXPECT(memsim_store(r, "x.db", NULL) == MEMSIM_ESTATE);
	EXPECT(memsim_set_policy(r, "nosuch", NULL) == MEMSIM_EPOLICY);
	EXPECT(strstr(memsim_errmsg(r), "nosuch") != NULL);
	EXPECT(memsim_set_policy(r, "pytorch", "max_split_size_mb:x") ==
	       MEMSIM_EPARAMS);
	printf("EPARAMS %s\n", memsim_errmsg(r));
	EXPECT(memsim_set_option(r, "nosuch", "1") == MEMSIM_ENOTFOUND);
	EXPECT(memsim_set_option(r, "cap", "lots") == MEMSIM_EINVAL);
	printf("EINVAL %s\n", memsim_errmsg(r));
	EXPECT(memsim_set_option(r, "fraction", "1.5") == MEMSIM_EINVAL);
	EXPECT(memsim_set_option(r, "keep_going", "maybe") == MEMSIM_EINVAL);
	EXPECT(memsim_set_option(r, "addresses", "here") == MEMSIM_EINVAL);
	/* A cap above the device is the job's to refuse. */
	EXPECT(memsim_set_option(r, "cap", "1TiB") == 0);
	EXPECT(memsim_replay(r) == MEMSIM_ECAP);
	printf("ECAP %s\n", memsim_errmsg(r));
	EXPECT(memsim_replay(r) == MEMSIM_ESTATE);
	memsim_close(r);

	/* A missing trace: the reader's code and the file's name. */
	EXPECT(memsim_open(&r, "/nonexistent/trace.csv") == 0);
	int rc = memsim_replay(r);
	EXPECT(rc < 0);
	EXPECT(strstr(memsim_errmsg(r), "/nonexistent/trace.csv") != NULL);
	printf("missing %s: %s\n", memsim_strerror(rc), memsim_errmsg(r));
	memsim_close(r);

	/* After a replay: kinds, and the settings are closed. */
	EXPECT(memsim_open(&r, trace) == 0);
	EXPECT(memsim_replay(r) == 0);
	EXPECT(memsim_set_option(r, "cap", "1GiB") == MEMSIM_ESTATE);
	EXPECT(memsim_set_policy(r, "pytorch", NULL) == MEMSIM_ESTATE);
	EXPECT(memsim_get_kind(r, "policy") == MEMSIM_TEXT);
	EXPECT(memsim_get_kind(r, "frag_mean") == MEMSIM_REAL);
	EXPECT(memsim_get_kind(r, "nosuch") == MEMSIM_ENOTFOUND);
	EXPECT(memsim_get_text(r, "policy", &t) == 0 &&
	       strcmp(t, "pytorch") == 0);
	EXPECT(memsim_get_int(r, "policy", &v) == MEMSIM_EINVAL);
	EXPECT(memsim_get_real(r, "policy", &d) == MEMSIM_EINVAL);
	EXPECT(memsim_get_real(r, "requests", &d) == 0 && d > 0);
	EXPECT(memsim_get_int(r, "nosuch", &v) == MEMSIM_ENOTFOUND);
	size_t n = memsim_timeline_len(r);
	EXPECT(n > 0);
	EXPECT(memsim_timeline_get(r, n, &pt) == MEMSIM_EINVAL);
	EXPECT(memsim_timeline_get(r, n - 1, &pt) == 0);
	memsim_close(r);
	memsim_close(NULL);
	return fails ? 1 : 0;
}

/* The experiments' calls: their answers, then their errors. */
static int
lab(char **a)
{
	char why[1024], conf[1024];
	long best;
	uint64_t cap = strtoull(a[3], NULL, 10);
	int rc = memsim_fit(a[0], "B", atol(a[1]), atol(a[2]), cap, NULL,
			    &best, why, sizeof(why));
	EXPECT(rc == 0);
	printf("fit %ld\n", best);
	uint64_t tcap = strtoull(a[5], NULL, 10);
	rc = memsim_tune(a[4], tcap, a[6], conf, sizeof(conf), why,
			 sizeof(why));
	EXPECT(rc == 0);
	printf("tune %s\n", rc ? why : conf);
	/* Below the smallest: none fits, lo - 1. */
	EXPECT(memsim_fit(a[0], "B", atol(a[1]), atol(a[2]), 1048576, NULL,
			  &best, why, sizeof(why)) == 0);
	EXPECT(best == atol(a[1]) - 1);
	EXPECT(memsim_tune(a[4], 1048576, a[6], conf, sizeof(conf), NULL,
			   0) == 1);
	EXPECT(memsim_fit("/nonexistent/x-{B}.csv", "B", 1, 2, cap, NULL,
			  &best, why, sizeof(why)) == MEMSIM_EIO);
	EXPECT(strstr(why, "/nonexistent/x-1.csv") != NULL);
	EXPECT(memsim_fit(a[0], "C", 1, 2, cap, NULL, &best, why,
			  sizeof(why)) == MEMSIM_EINVAL);
	EXPECT(memsim_tune("/nonexistent/t.csv", tcap, a[6], conf,
			   sizeof(conf), why, sizeof(why)) < 0);
	char *cmd[] = {"/nonexistent/python3", "script.py"}, out[4200];
	snprintf(out, sizeof(out), "%s.csv", a[6]);
	rc = memsim_record(out, cmd, 2, why, sizeof(why));
	printf("record %d %s\n", rc, why);
	/* the output is checked before anything runs */
	rc = memsim_record("/nonexistent/out.csv", cmd, 2, why, sizeof(why));
	printf("record-out %d %s\n", rc, why);
	EXPECT(memsim_record("out.csv", cmd, 0, why, sizeof(why)) ==
	       MEMSIM_EINVAL);
	return fails ? 1 : 0;
}

static void
print_figures(const memsim_run_t *r)
{
	for (size_t i = 0; i < memsim_count(r); i++) {
		const char *name = memsim_name(r, i);
		int64_t v;
		double d;
		const char *t;
		switch (memsim_get_kind(r, name)) {
		case MEMSIM_INT:
			memsim_get_int(r, name, &v);
			printf("%s %" PRId64 "\n", name, v);
			break;
		case MEMSIM_BOOL:
			memsim_get_int(r, name, &v);
			printf("%s %s\n", name, v ? "true" : "false");
			break;
		case MEMSIM_REAL:
			memsim_get_real(r, name, &d);
			printf("%s %.6f\n", name, d);
			break;
		default:
			memsim_get_text(r, name, &t);
			printf("%s %s\n", name, t);
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--check"))
		return check(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--load")) {
		memsim_run_t *r;
		int rc = memsim_load(&r, argv[2], strtoll(argv[3], NULL, 10));
		if (rc) {
			fprintf(stderr, "api_run: %s (%s)\n",
				r ? memsim_errmsg(r) : "", memsim_strerror(rc));
			memsim_close(r);
			return 1;
		}
		print_figures(r);
		memsim_close(r);
		return 0;
	}
	if (argc == 9 && !strcmp(argv[1], "--lab"))
		return lab(argv + 2);
	if (argc < 2) {
		fprintf(stderr, "usage: api_run TRACE [POLICY [CONF "
			"[OPTION=VALUE ...]]] | --check TRACE | --load DB "
			"RUN_ID\n");
		return 2;
	}
	memsim_run_t *r;
	int rc = memsim_open(&r, argv[1]);
	if (!rc && argc > 2)
		rc = memsim_set_policy(r, argv[2], argc > 3 ? argv[3] : NULL);
	for (int i = 4; !rc && i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "api_run: %s: not OPTION=VALUE\n",
				argv[i]);
			memsim_close(r);
			return 2;
		}
		*eq = '\0';
		rc = memsim_set_option(r, argv[i], eq + 1);
	}
	if (!rc)
		rc = memsim_replay(r);
	const char *db = getenv("API_RUN_DB");
	if (!rc && db)
		rc = memsim_store(r, db, NULL);
	if (rc) {
		fprintf(stderr, "api_run: %s (%s)\n", memsim_errmsg(r),
			memsim_strerror(rc));
		memsim_close(r);
		return 1;
	}
	print_figures(r);
	size_t n = memsim_timeline_len(r);
	memsim_point_t last = {0};
	if (n)
		memsim_timeline_get(r, n - 1, &last);
	printf("timeline %zu points, last at request %" PRIu64
	       " reserved %" PRId64 "\n", n, last.request, last.reserved);
	memsim_close(r);
	return 0;
}
