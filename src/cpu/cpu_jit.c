/* The host JIT (cpu_jit.h): compile with the system C compiler, cache on disk, dlopen. */
#define _GNU_SOURCE
#include "cpu_jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/error.h"

struct sr_jit_library {
    void *handle;
};

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER; /* one compile at a time in a process */

uint64_t sr_jit_hash(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator: "ab" + "c" differs from "a" + "bc" */
}

static const char *compiler(void)
{
    const char *cc = getenv("SPARSERING_CC");
    return cc && *cc ? cc : "cc";
}

static const char *compiler_flags(void)
{
    const char *f = getenv("SPARSERING_CFLAGS");
    return f ? f : "-O3";
}

/* mkdir -p: true when the folder exists afterwards. */
static bool make_folder(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    struct stat st;
    return (mkdir(path, 0700) == 0 || errno == EEXIST) && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool sr_jit_cache_folder(char *out, size_t size)
{
    const char *env = getenv("SPARSERING_JIT_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env)
        snprintf(out, size, "%s", env);
    else if (xdg && *xdg)
        snprintf(out, size, "%s/sparsering/jit", xdg);
    else if (home && *home)
        snprintf(out, size, "%s/.cache/sparsering/jit", home);
    else
        snprintf(out, size, "%s/sparsering-jit-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getuid());
    if (make_folder(out))
        return true;
    if (env && *env)
        return false; /* asked for: say so rather than write elsewhere */
    snprintf(out, size, "%s/sparsering-jit-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getuid());
    return make_folder(out);
}

/* Runs the compiler on c_path into so_path, its messages into err_path: the exit status (-1 when
 * it could not start, 127 when it was not found). */
static int run_compiler(const char *c_path, const char *so_path, const char *err_path)
{
    char flags[512];
    snprintf(flags, sizeof flags, "%s", compiler_flags());
    const char *argv[48];
    int n = 0;
    argv[n++] = compiler();
    for (char *tok = strtok(flags, " \t"); tok && n < 40; tok = strtok(NULL, " \t"))
        argv[n++] = tok;
    argv[n++] = "-fPIC";
    argv[n++] = "-shared";
    argv[n++] = "-o";
    argv[n++] = so_path;
    argv[n++] = c_path;
    argv[n++] = "-lm";
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first bytes of a file, for an error message. */
static void read_head(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t got = fread(out, 1, size - 1, f);
    out[got] = '\0';
    fclose(f);
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

sr_status sr_jit_load(const char *source, const char *what, sr_jit_library **lib)
{
    *lib = NULL;
    uint64_t h = sr_jit_hash(SR_JIT_HASH_START, source);
    h = sr_jit_hash(sr_jit_hash(sr_jit_hash(h, compiler()), compiler_flags()), sr_version_string());
    pthread_mutex_lock(&jit_lock);
    char folder[1024], so_path[1200], tmp_so[1300], c_path[1300], err_path[1300];
    sr_status st = SR_SUCCESS;
    if (!sr_jit_cache_folder(folder, sizeof folder)) {
        st = sr_error(SR_ERROR_IO, "%s: no folder for compiled kernels (%s: %s; set SPARSERING_JIT_CACHE)", what,
                      folder, strerror(errno));
        goto done;
    }
    snprintf(so_path, sizeof so_path, "%s/sr_%016llx.so", folder, (unsigned long long)h);
    if (access(so_path, R_OK) != 0) { /* not cached: compile beside it, then rename into place */
        snprintf(c_path, sizeof c_path, "%s/sr_%016llx.%d.c", folder, (unsigned long long)h, (int)getpid());
        snprintf(tmp_so, sizeof tmp_so, "%s/sr_%016llx.%d.so", folder, (unsigned long long)h, (int)getpid());
        snprintf(err_path, sizeof err_path, "%s/sr_%016llx.%d.log", folder, (unsigned long long)h, (int)getpid());
        if (!write_file(c_path, source)) {
            st = sr_error(SR_ERROR_IO, "%s: cannot write %s: %s", what, c_path, strerror(errno));
            goto done;
        }
        const int rc = run_compiler(c_path, tmp_so, err_path);
        char messages[1536];
        read_head(err_path, messages, sizeof messages);
        remove(err_path);
        remove(c_path);
        if (rc != 0) {
            remove(tmp_so);
            if (rc == 127 || rc == -1)
                st = sr_error(SR_ERROR_UNSUPPORTED, "%s: the C compiler '%s' could not be run (user definitions on "
                              "the CPU are compiled by it; SPARSERING_CC names another)", what, compiler());
            else
                st = sr_error(SR_ERROR_INVALID_ARGUMENT, "%s does not compile (%s, exit %d):\n%s", what, compiler(), rc,
                              messages);
            goto done;
        }
        if (rename(tmp_so, so_path) != 0) {
            st = sr_error(SR_ERROR_IO, "%s: cannot move the compiled kernels to %s: %s", what, so_path, strerror(errno));
            remove(tmp_so);
            goto done;
        }
    }
    void *handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        st = sr_error(SR_ERROR_IO, "%s: cannot load %s: %s (remove it to compile again)", what, so_path, why ? why : "?");
        goto done;
    }
    *lib = malloc(sizeof **lib);
    if (!*lib) {
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    (*lib)->handle = handle;
done:
    pthread_mutex_unlock(&jit_lock);
    return st;
}

sr_status sr_jit_load_formatted(const char *what, sr_jit_library **lib, const char *format, ...)
{
    va_list args, again;
    va_start(args, format);
    va_copy(again, args);
    const int length = vsnprintf(NULL, 0, format, args);
    va_end(args);
    char *source = length >= 0 ? malloc((size_t)length + 1) : NULL;
    if (source)
        vsnprintf(source, (size_t)length + 1, format, again);
    va_end(again);
    if (!source) {
        *lib = NULL;
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for the kernels' source", what);
    }
    sr_status st = sr_jit_load(source, what, lib);
    free(source);
    return st;
}

void *sr_jit_symbol(sr_jit_library *lib, const char *name) { return lib ? dlsym(lib->handle, name) : NULL; }
