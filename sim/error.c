/* The tables behind msim_strerror() and msim_err_name(), from MSIM_ERRNO_MAP. */
#include <config.h>

#include "sim/error.h"

const char *
msim_strerror(int code)
{
	switch (code) {
	case 0:
		return "success";
#define XX(name, value, text)                                              \
	case MSIM_##name:                                                  \
		return text;
		MSIM_ERRNO_MAP(XX)
#undef XX
	}
	return "unknown error";
}

const char *
msim_err_name(int code)
{
	switch (code) {
	case 0:
		return "OK";
#define XX(name, value, text)                                              \
	case MSIM_##name:                                                  \
		return #name;
		MSIM_ERRNO_MAP(XX)
#undef XX
	}
	return "E?";
}
