#include "sparsering.h"

#include "../opencl/opencl.h"
#include "device_api.h"

#define SR_STR2(x) #x
#define SR_STR(x) SR_STR2(x)
#define SR_VERSION SR_STR(SR_VERSION_MAJOR) "." SR_STR(SR_VERSION_MINOR) "." SR_STR(SR_VERSION_PATCH)

const char *sr_version_string(void)
{
    if (sr_device_built())
        return sr_opencl_built() ? SR_VERSION " (cpu+cuda+opencl)" : SR_VERSION " (cpu+cuda)";
    return sr_opencl_built() ? SR_VERSION " (cpu+opencl)" : SR_VERSION " (cpu)";
}
