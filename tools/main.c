/* sparsering: the command-line program (cli_main.c) with Ctrl-C handling. */
#include <signal.h>

#include "cli.h"

/* The first Ctrl-C asks the running call to stop at its next progress report (it then fails with
 * SR_ERROR_CANCELLED, freeing what it holds); a second one ends the process at once. */
static void on_interrupt(int sig)
{
    cli_interrupted = 1;
    signal(sig, SIG_DFL);
}

int main(int argc, char **argv)
{
    signal(SIGINT, on_interrupt);
    return cli_main(argc, argv);
}
