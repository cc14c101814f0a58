/* libFuzzer target: the command-line program's argument parsing (cli_main) on arbitrary argument
 * vectors. The input is split at newlines and NUL bytes into up to 24 arguments after
 * "sparsering"; the program runs in a scratch folder holding small valid inputs (a.mtx, b.mtx,
 * g.mtx, y.txt, labels.txt, r.csv, grammar.txt, edges.txt) so commands get past opening their
 * files. Any exit code is fine; a crash, a leak or a sanitizer report is not. Inputs naming a
 * path outside the folder ('/'), the generator (demo: its sizes are the user's to choose),
 * --threads (thousands of threads) or more than 999 sweeps or steps (counts_work) are skipped. The context's host memory is capped by the
 * prepended --host-memory. It changes directory: give libFuzzer absolute corpus and artifact
 * paths. Build: cmake -DSPARSERING_FUZZ=ON with clang (README, "Fuzzing"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tools/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(name, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

/* The scratch folder and its inputs, once; stdout goes to /dev/null (results are not checked). */
static void setup(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/sr_fuzz_cli_%d", (int)getpid());
    mkdir(dir, 0700);
    if (chdir(dir) != 0)
        abort();
    write_file("a.mtx", "%%MatrixMarket matrix coordinate real general\n4 3 5\n1 1 1.5\n1 3 -2\n2 2 3\n3 1 0.5\n4 3 1\n");
    write_file("b.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 3 2\n3 2 -1\n3 3 4\n");
    write_file("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 6\n1 2\n2 3\n3 4\n4 5\n5 1\n2 4\n");
    write_file("y.txt", "1\n-2\n0.5\n");
    write_file("labels.txt", "1\n-1\n1\n-1\n");
    write_file("r.csv", "userId,movieId,rating,timestamp\n1,10,4.0,0\n1,20,3.5,0\n2,10,5.0,0\n3,30,2.0,0\n2,30,1.0,0\n");
    write_file("grammar.txt", "S -> a S b | a b\n");
    write_file("edges.txt", "0 1 a\n1 2 a\n2 3 b\n3 0 b\n");
    if (!freopen("/dev/null", "w", stdout))
        abort();
}

/* Options whose value is an amount of work the user asks for (sweeps, steps, the rank):
 * 60,000 ALS sweeps are slow, not wrong, so values past 999 are skipped. */
static bool counts_work(const char *option)
{
    static const char *const names[] = {"--iterations", "--max-iter", "--cg-steps", "--rank"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(option, names[i]) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready = false;
    if (!ready) {
        setup();
        ready = true;
    }
    if (size > 1024)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    enum { PREFIX = 5, MAX_ARGS = 24 };
    char *argv[PREFIX + MAX_ARGS + 1] = {"sparsering", "--backend", "cpu", "--host-memory", "256M"};
    int argc = PREFIX;
    bool skip = false;
    for (char *p = text, *end = text + size; p <= end && argc < PREFIX + MAX_ARGS;) {
        char *stop = p;
        while (stop < end && *stop != '\n' && *stop != '\0')
            stop++;
        *stop = '\0';
        argv[argc++] = p;
        skip = skip || strchr(p, '/') || strcmp(p, "demo") == 0 || strcmp(p, "--threads") == 0 ||
               (argc > PREFIX + 1 && counts_work(argv[argc - 2]) && strlen(p) > 3);
        p = stop + 1;
    }
    argv[argc] = NULL;
    if (!skip)
        (void)cli_main(argc, argv);
    free(text);
    return 0;
}
