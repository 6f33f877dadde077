/* stub */
#include <config.h>
#include "sim/cli.h"
int
msim_cmd_tune(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
