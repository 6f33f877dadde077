/*
 * Error codes shared by every module.  One X-macro list generates the enum,
 * msim_strerror() and msim_err_name(), so a new code is one line here.
 * Functions return 0 on success or one of these negative codes; objects that
 * do I/O also keep a message naming the file, line and reason.
 */
#ifndef MSIM_SIM_ERROR_H
#define MSIM_SIM_ERROR_H

#define MSIM_ERRNO_MAP(XX)                                                 \
	XX(EINVAL, -1, "invalid argument")                                 \
	XX(ENOMEM, -2, "host out of memory")                               \
	XX(EDEVOOM, -3, "simulated device out of memory")                  \
	XX(EDB, -4, "results database error")                              \
	XX(EIO, -5, "input/output error")                                  \
	XX(EFORMAT, -6, "malformed input")                                 \
	XX(ENOTFOUND, -7, "not found")                                     \
	XX(ENOTSUP, -8, "not supported")

enum msim_errno {
#define XX(name, value, text) MSIM_##name = (value),
	MSIM_ERRNO_MAP(XX)
#undef XX
};

/* Returns a static description of code, or "unknown error". */
const char *msim_strerror(int code);

/* Returns the symbolic name of code ("EDEVOOM"), or "E?". */
const char *msim_err_name(int code);

#endif
