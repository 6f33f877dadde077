/* `memsim gen`'s traces written out (lab/generate.h). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "lab/generate.h"
#include "sim/error.h"
#include "sim/file.h"

/* Opens out ("-": stdout) into *of; returns its stream, or NULL with why
 * filled. */
static FILE *
gen_open(msim_outfile_t *of, const char *out, char *why, size_t whylen)
{
	memset(of, 0, sizeof(*of));
	if (!strcmp(out, "-"))
		return stdout;
	return msim_outfile_open(of, out, why, whylen) ? NULL : of->fp;
}

/* Ends the output: committed when ok, else removed.  Returns 0 or an
 * error with why filled. */
static int
gen_close(msim_outfile_t *of, bool ok, char *why, size_t whylen)
{
	if (!of->fp)
		return 0;
	if (!ok) {
		msim_outfile_abort(of);
		return 0;
	}
	return msim_outfile_commit(of, why, whylen);
}

int
msim_generate_model(const msim_model_cfg_t *cfg, msim_gen_t *g,
		    const char *out, bool *out_err, char *why, size_t whylen)
{
	*out_err = false;
	why[0] = '\0';
	int rc = msim_model_generate(cfg, g, why, whylen);
	if (rc) {
		if (!why[0])
			snprintf(why, whylen, "%s", msim_strerror(rc));
		return rc;
	}
	*out_err = true;
	msim_outfile_t of;
	FILE *fp = gen_open(&of, out, why, whylen);
	if (!fp)
		return MSIM_EIO;
	if (msim_gen_write_csv(g, fp)) {
		gen_close(&of, false, why, whylen);
		snprintf(why, whylen, "writing '%s' failed", out);
		return MSIM_EIO;
	}
	return gen_close(&of, true, why, whylen);
}

int
msim_generate_random(const msim_random_cfg_t *cfg, msim_gen_t *g,
		     const char *out, bool *out_err, char *why, size_t whylen)
{
	*out_err = true;
	why[0] = '\0';
	msim_outfile_t of;
	FILE *fp = gen_open(&of, out, why, whylen);
	if (!fp)
		return MSIM_EIO;
	int rc = msim_gen_stream_csv(g, fp);
	if (!rc)
		rc = msim_random_generate(cfg, g, why, whylen);
	if (rc || ferror(fp)) {
		gen_close(&of, false, why, whylen);
		*out_err = !(rc && why[0]);
		if (*out_err)
			snprintf(why, whylen, "writing failed");
		return rc ? rc : MSIM_EIO;
	}
	return gen_close(&of, true, why, whylen);
}
