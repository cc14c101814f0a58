#include "settings.h"

#include <stdlib.h>

int sr_setting(const char *name, int unset)
{
    const char *env = getenv(name);
    return env && *env ? atoi(env) : unset;
}
