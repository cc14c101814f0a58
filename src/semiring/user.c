/* The registry of user semirings (user.h): checks a definition, compiles its kernels, and keeps
 * it for the process. */
#include "user.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/types.h"
#include "semiring.h"
#include "user_registry.h"

static sr_user_registry registry = SR_USER_REGISTRY_INIT("semiring");

bool sr_semiring_is_user(int s) { return sr_user_semiring_of(s) != NULL; }

const sr_user_semiring *sr_user_semiring_of(int s)
{
    return s >= SR_USER_SEMIRING_FIRST ? sr_user_registry_at(&registry, s - SR_USER_SEMIRING_FIRST) : NULL;
}

/* ⊕ and its identity for the built-in monoid names, by value type. */
const char *sr_user_monoid_add(const char *name)
{
    if (strcmp(name, "plus") == 0)
        return "a + b";
    if (strcmp(name, "times") == 0)
        return "a * b";
    if (strcmp(name, "min") == 0) /* as SR_ADD_MIN: NaN omitted */
        return "((b) < (a) || (a) != (a)) ? (b) : (a)";
    if (strcmp(name, "max") == 0)
        return "((b) > (a) || (a) != (a)) ? (b) : (a)";
    if (strcmp(name, "or") == 0)
        return "a || b";
    if (strcmp(name, "and") == 0)
        return "a && b";
    return NULL;
}

const char *sr_user_monoid_identity(const char *name, sr_type type)
{
    const bool integer = type == SR_TYPE_INT32;
    if (strcmp(name, "min") == 0)
        return integer ? "INT32_MAX" : "INFINITY";
    if (strcmp(name, "max") == 0)
        return integer ? "INT32_MIN" : "-INFINITY";
    if (strcmp(name, "times") == 0 || strcmp(name, "and") == 0)
        return "1";
    return "0";
}

static bool is_monoid(const char *add) { return sr_user_monoid_add(add) != NULL; }

bool sr_user_same_text(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

sr_status sr_user_check_name(const char *fn, const char *name)
{
    SR_CHECK_ARG(name && *name, "%s: the definition has no name", fn);
    const size_t len = strlen(name);
    bool well_formed = len < 64 && islower((unsigned char)name[0]);
    for (size_t c = 0; c < len; c++)
        well_formed &= islower((unsigned char)name[c]) || isdigit((unsigned char)name[c]) || name[c] == '_';
    SR_CHECK_ARG(well_formed, "%s: the name '%s' must be a lower-case letter, then letters, digits or _ (at most 63)",
                 fn, name);
    return SR_SUCCESS;
}

static sr_status check_definition(const sr_semiring_def *d)
{
    SR_TRY(sr_user_check_name("sr_semiring_define", d->name));
    for (int s = 0; s < SR_SEMIRING_COUNT; s++)
        SR_CHECK_ARG(strcmp(d->name, sr_semiring_name((sr_semiring)s)) != 0,
                     "sr_semiring_define: '%s' is a built-in semiring's name; give yours another", d->name);
    SR_CHECK_ARG(d->type == SR_TYPE_INT32 || d->type == SR_TYPE_FLOAT32 || d->type == SR_TYPE_FLOAT64,
                 "sr_semiring_define: '%s' has type %d; a user semiring's values are int32, float32 or float64", d->name,
                 (int)d->type);
    SR_CHECK_ARG(d->add && *d->add, "sr_semiring_define: '%s' has no add (a monoid: plus, times, min, max, or, and; or "
                 "an expression over a and b)", d->name);
    SR_CHECK_ARG(d->multiply && *d->multiply, "sr_semiring_define: '%s' has no multiply (an expression over x and y)",
                 d->name);
    SR_CHECK_ARG(is_monoid(d->add) || (d->identity && *d->identity),
                 "sr_semiring_define: '%s' adds by the expression '%s', which needs its identity (identity: the value e "
                 "with e + a = a)", d->name, d->add);
    return SR_SUCCESS;
}

char *sr_user_copy_text(const char *s)
{
    if (!s)
        return NULL;
    char *c = malloc(strlen(s) + 1);
    if (c)
        strcpy(c, s);
    return c;
}

static const char *name_of(const void *entry) { return ((const sr_user_semiring *)entry)->def.name; }

static bool same_definition(const void *entry, const void *def)
{
    const sr_semiring_def *a = &((const sr_user_semiring *)entry)->def, *b = def;
    return a->type == b->type && sr_user_same_text(a->add, b->add) &&
           sr_user_same_text(a->identity, b->identity) && sr_user_same_text(a->multiply, b->multiply);
}

static sr_status clash(const char *fn, const void *entry)
{
    const sr_semiring_def *o = &((const sr_user_semiring *)entry)->def;
    return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: '%s' is defined already, as add '%s', multiply '%s' on %s; give the "
                    "new one another name", fn, o->name, o->add, o->multiply, sr_type_name(o->type));
}

static void destroy(void *entry)
{
    sr_user_semiring *u = entry;
    if (!u)
        return;
    free((char *)u->def.name);
    free((char *)u->def.add);
    free((char *)u->def.identity);
    free((char *)u->def.multiply);
    free(u);
}

static sr_status make(const void *definition, void **entry)
{
    const sr_semiring_def *def = definition;
    sr_user_semiring *u = calloc(1, sizeof *u);
    *entry = u;
    if (!u)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a semiring's definition");
    u->def = (sr_semiring_def){sr_user_copy_text(def->name), def->type, sr_user_copy_text(def->add),
                               sr_user_copy_text(def->identity), sr_user_copy_text(def->multiply)};
    if (!u->def.name || !u->def.add || !u->def.multiply || (def->identity && !u->def.identity))
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a semiring's definition");
    return sr_cpu_user_compile(u);
}

static const sr_user_kind kSemiringKind = {name_of, same_definition, clash, make, destroy};

sr_status sr_semiring_define(const sr_semiring_def *def, sr_semiring *s)
{
    SR_CHECK_ARG(def != NULL && s != NULL, "sr_semiring_define: the definition or the output pointer is NULL");
    SR_TRY(check_definition(def));
    int index = 0;
    SR_TRY(sr_user_registry_add(&registry, &kSemiringKind, "sr_semiring_define", def->name, def, &index));
    *s = (sr_semiring)(SR_USER_SEMIRING_FIRST + index);
    return SR_SUCCESS;
}

sr_status sr_semiring_definition(sr_semiring s, sr_semiring_def *def)
{
    SR_CHECK_ARG(def != NULL, "sr_semiring_definition: the output pointer is NULL");
    const sr_user_semiring *u = sr_user_semiring_of((int)s);
    SR_CHECK_ARG(u != NULL, "sr_semiring_definition: %d is not a user semiring", (int)s);
    *def = u->def;
    return SR_SUCCESS;
}
