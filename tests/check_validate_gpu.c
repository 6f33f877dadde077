/*
 * Validation mode on a real GPU (raw and async): skipped (exit 77) on a
 * machine without one, as in CI.
 */
#include <config.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"
#include "traces/trace.h"
#include "validate/validate.h"

int
main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		fprintf(stderr, "no GPU: skipped\n");
		return 77;
	}
	int failed = 0;
	for (int mode = MSIM_VMODE_RAW; mode <= MSIM_VMODE_ASYNC; mode++) {
		msim_trace_t *t;
		char why[512];
		if (msim_trace_open(test_data("traces/bert_infer_varlen.csv"),
				    NULL, &t, why, sizeof(why))) {
			fprintf(stderr, "%s\n", why);
			return EXIT_FAILURE;
		}
		msim_measured_t m;
		if (msim_validate_cuda(t, mode, 0, UINT64_MAX, &m, why,
				       sizeof(why))) {
			fprintf(stderr, "%s: %s\n", msim_vmode_name(mode), why);
			failed++;
		} else {
			/* The live requested bytes peak exactly where the
			 * trace says (expected.tsv's requested peak). */
			if (m.st.allocated_bytes[0].peak != 1026319360 ||
			    m.st.reserved_bytes[0].peak <
				    m.st.allocated_bytes[0].peak ||
			    m.requests != 4504) {
				fprintf(stderr, "%s: peak %lld reserved %lld\n",
					msim_vmode_name(mode),
					(long long)m.st.allocated_bytes[0].peak,
					(long long)m.st.reserved_bytes[0].peak);
				failed++;
			}
			msim_measured_clear(&m);
		}
		msim_trace_close(t);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
