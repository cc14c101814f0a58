/* User definitions (semirings, metrics) read from small files of 'key = value' lines, '#'
 * comments (docs/user-semirings.md), for the commands that take them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The text after "key =" on a line, trimmed, or NULL when the line is not that key's. */
static char *value_of(char *line, const char *key)
{
    const size_t n = strlen(key);
    while (*line == ' ' || *line == '\t')
        line++;
    if (strncmp(line, key, n) != 0)
        return NULL;
    line += n;
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line != '=')
        return NULL;
    line++;
    while (*line == ' ' || *line == '\t')
        line++;
    char *end = line + strlen(line);
    while (end > line && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    return line;
}

bool cli_read_keys(const char *path, const char *who, const char *const *keys, int n, char values[][CLI_DEF_VALUE],
                   bool *have)
{
    for (int k = 0; k < n; k++)
        have[k] = false;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sparsering %s: cannot open %s\n", who, path);
        return false;
    }
    char line[1024];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        bool known = false;
        for (int k = 0; k < n && !known; k++) {
            const char *v = value_of(line, keys[k]);
            if (v) {
                snprintf(values[k], CLI_DEF_VALUE, "%s", v);
                have[k] = known = true;
            }
        }
        if (!known) {
            fprintf(stderr, "sparsering %s: %s:%d: expected 'key = value' with a key of", who, path, lineno);
            for (int k = 0; k < n; k++)
                fprintf(stderr, "%s %s", k ? "," : "", keys[k]);
            fprintf(stderr, "\n");
            ok = false;
        }
    }
    fclose(f);
    return ok;
}

/* "true"/"yes"/"1" or "false"/"no"/"0" into *b; false for anything else. */
static bool read_flag(const char *text, bool *b)
{
    if (!strcmp(text, "true") || !strcmp(text, "yes") || !strcmp(text, "1"))
        return (*b = true), true;
    if (!strcmp(text, "false") || !strcmp(text, "no") || !strcmp(text, "0"))
        return (*b = false), true;
    return false;
}

int cli_define_metric(const char *path, const char *who, sr_metric *metric)
{
    static const char *const keys[] = {"name",       "pair",  "norm",  "distance", "over",
                                       "similarity", "pair2", "norm2", "reduce"};
    char values[9][CLI_DEF_VALUE];
    bool have[9];
    if (!cli_read_keys(path, who, keys, 9, values, have))
        return CLI_BAD_INPUT;
    bool over_union = false, similarity = false;
    if (have[4] && strcmp(values[4], "union") != 0 && strcmp(values[4], "intersection") != 0) {
        fprintf(stderr, "sparsering %s: %s: over = '%s': expected intersection or union\n", who, path, values[4]);
        return CLI_BAD_INPUT;
    }
    over_union = have[4] && strcmp(values[4], "union") == 0;
    if (have[5] && !read_flag(values[5], &similarity)) {
        fprintf(stderr, "sparsering %s: %s: similarity = '%s': expected true or false\n", who, path, values[5]);
        return CLI_BAD_INPUT;
    }
    sr_metric_def d = {have[0] ? values[0] : NULL, have[1] ? values[1] : NULL, have[2] ? values[2] : NULL,
                       have[3] ? values[3] : NULL, over_union, similarity, have[6] ? values[6] : NULL,
                       have[7] ? values[7] : NULL, have[8] ? values[8] : NULL};
    sr_status s = sr_metric_define(&d, metric);
    return s == SR_SUCCESS ? CLI_OK : cli_fail(s, path);
}

int cli_define_semiring(const char *path, const char *who, sr_semiring *semiring, sr_type *type)
{
    static const char *const keys[] = {"name", "add", "multiply", "identity", "type"};
    char values[5][CLI_DEF_VALUE];
    bool have[5];
    if (!cli_read_keys(path, who, keys, 5, values, have))
        return CLI_BAD_INPUT;
    *type = SR_TYPE_FLOAT64;
    if (have[4]) {
        if (strcmp(values[4], "int32") == 0)
            *type = SR_TYPE_INT32;
        else if (strcmp(values[4], "float32") == 0)
            *type = SR_TYPE_FLOAT32;
        else if (strcmp(values[4], "float64") != 0) {
            fprintf(stderr, "sparsering %s: %s: type '%s': expected int32, float32 or float64\n", who, path, values[4]);
            return CLI_BAD_INPUT;
        }
    }
    sr_semiring_def d = {have[0] ? values[0] : NULL, *type, have[1] ? values[1] : NULL, have[3] ? values[3] : NULL,
                         have[2] ? values[2] : NULL};
    sr_status s = sr_semiring_define(&d, semiring);
    return s == SR_SUCCESS ? CLI_OK : cli_fail(s, path);
}
