/* Kernels compiled at run time on the host: C source handed to the system C compiler, the shared
 * object cached on disk by a hash of the source, the compiler and the library's version, and
 * loaded with dlopen (GraphBLAS's CPU JIT works the same way). User semirings use it. */
#ifndef SR_CPU_JIT_H
#define SR_CPU_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sparsering.h"

/* A loaded shared object: its symbols stay valid for the process (never unloaded). */
typedef struct sr_jit_library sr_jit_library;

/* Compiles `source` (or finds it in the cache) and loads it. On failure the error names the
 * compiler and carries its first messages (a syntax error in a user's expression shows there).
 * `what` names the source in messages ("semiring weighted_min"). The compiler is SPARSERING_CC
 * (default cc), its options SPARSERING_CFLAGS (default -O3); the cache folder SPARSERING_JIT_CACHE
 * (default $XDG_CACHE_HOME/sparsering/jit, ~/.cache/sparsering/jit, else the temporary folder). */
sr_status sr_jit_load(const char *source, const char *what, sr_jit_library **lib);

/* sr_jit_load of the source `format` and its arguments make (printf's rules). */
sr_status sr_jit_load_formatted(const char *what, sr_jit_library **lib, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* The cache folder (made if missing; see sr_jit_load): false when none can be made. */
bool sr_jit_cache_folder(char *out, size_t size);

/* FNV-1a of h and the string s, with a separator after it: the caches' keys. */
uint64_t sr_jit_hash(uint64_t h, const char *s);
#define SR_JIT_HASH_START 14695981039346656037ull

/* A symbol of a loaded library, or NULL. */
void *sr_jit_symbol(sr_jit_library *lib, const char *name);

#endif
