/* stub */
#include <config.h>
#include "sim/cli.h"
int
msim_cmd_plot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
