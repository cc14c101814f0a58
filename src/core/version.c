#include "sparsering.h"

#include "device_api.h"

#define SR_STR2(x) #x
#define SR_STR(x) SR_STR2(x)
#define SR_VERSION SR_STR(SR_VERSION_MAJOR) "." SR_STR(SR_VERSION_MINOR) "." SR_STR(SR_VERSION_PATCH)

const char *sr_version_string(void) { return sr_device_built() ? SR_VERSION " (cpu+cuda)" : SR_VERSION " (cpu)"; }
