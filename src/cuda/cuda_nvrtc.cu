// NVRTC programs (cuda_nvrtc.cuh): compile, cache on disk and in memory, load.
#include "cuda_nvrtc.cuh"

#include <nvrtc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include "../cpu/cpu_jit.h"
// the device headers a program may include, embedded at build time (CMakeLists.txt)
extern const char sr_rtc_device_base[];
extern const char sr_rtc_spmm_kernels[];
extern const char sr_rtc_spmv_split_kernels[];
extern const char sr_rtc_metric_kernels[];
extern const char sr_rtc_ewise_kernels[];
extern const char sr_rtc_structure_kernels[];
extern const char sr_rtc_sddmm_kernels[];
extern const char sr_rtc_mxm_ordered[];
}

namespace sr_cuda {

struct jit_program {
    cudaLibrary_t library = nullptr;
    std::vector<std::string> names;
    std::vector<cudaKernel_t> kernels;
};

namespace {

const char *const kHeaderNames[] = {"cuda_device_base.cuh", "cuda_spmm_kernels.cuh", "cuda_spmv_split_kernels.cuh",
                                    "cuda_metric_kernels.cuh", "cuda_ewise_kernels.cuh", "cuda_structure_kernels.cuh",
                                    "cuda_sddmm_kernels.cuh", "cuda_mxm_ordered.cuh"};
const char *const kHeaderSources[] = {sr_rtc_device_base,    sr_rtc_spmm_kernels,  sr_rtc_spmv_split_kernels,
                                      sr_rtc_metric_kernels, sr_rtc_ewise_kernels, sr_rtc_structure_kernels,
                                      sr_rtc_sddmm_kernels, sr_rtc_mxm_ordered};
constexpr int kHeaders = sizeof kHeaderNames / sizeof kHeaderNames[0];

std::mutex jit_lock;                          // one compile or load at a time
std::map<uint64_t, jit_program *> programs;   // by key, for the process (never unloaded)

// NVRTC's version and the options every program is compiled with.
std::string nvrtc_version() {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return std::to_string(major) + "." + std::to_string(minor);
}

// --split-compile=0: NVRTC optimizes the kernels on every core (2 cores: 1.3 s -> 0.95 s for a
// semiring's two programs).
std::vector<std::string> options_for(int arch) {
    return {"--gpu-architecture=sm_" + std::to_string(arch), "--std=c++17", "--split-compile=0", "-DSR_RTC=1"};
}

uint64_t key_of(const std::string &source, const std::vector<std::string> &kernels, int arch) {
    uint64_t h = sr_jit_hash(SR_JIT_HASH_START, source.c_str());
    for (int i = 0; i < kHeaders; i++)
        h = sr_jit_hash(h, kHeaderSources[i]);
    for (const std::string &k : kernels)
        h = sr_jit_hash(h, k.c_str());
    for (const std::string &o : options_for(arch))
        h = sr_jit_hash(h, o.c_str());
    return sr_jit_hash(sr_jit_hash(h, nvrtc_version().c_str()), sr_version_string());
}

sr_status nvrtc_failed(nvrtcResult r, const char *what, const char *call) {
    return sr_error(SR_ERROR_INTERNAL, "%s: %s failed: %s", what, call, nvrtcGetErrorString(r));
}

#define SR_NVRTC_TRY(call)                                                                       \
    do {                                                                                         \
        const nvrtcResult sr_nvrtc_r_ = (call);                                                  \
        if (sr_nvrtc_r_ != NVRTC_SUCCESS) {                                                      \
            nvrtcDestroyProgram(&prog);                                                          \
            return nvrtc_failed(sr_nvrtc_r_, what, #call);                                       \
        }                                                                                        \
    } while (0)

// source -> CUBIN for sm_<arch>, and the kernels' lowered names in the order asked.
sr_status compile(const char *what, const std::string &source, const std::vector<std::string> &kernels, int arch,
                  std::string *cubin, std::vector<std::string> *lowered) {
    nvrtcProgram prog = nullptr;
    const nvrtcResult created =
        nvrtcCreateProgram(&prog, source.c_str(), "sr_user.cu", kHeaders, kHeaderSources, kHeaderNames);
    if (created != NVRTC_SUCCESS)
        return nvrtc_failed(created, what, "nvrtcCreateProgram");
    for (const std::string &k : kernels)
        SR_NVRTC_TRY(nvrtcAddNameExpression(prog, k.c_str()));
    const std::vector<std::string> options = options_for(arch);
    std::vector<const char *> argv;
    for (const std::string &o : options)
        argv.push_back(o.c_str());
    nvrtcResult compiled = nvrtcCompileProgram(prog, (int)argv.size(), argv.data());
    if (compiled == NVRTC_ERROR_INVALID_OPTION) { // an NVRTC without --split-compile: on one core
        argv.erase(std::find(argv.begin(), argv.end(), std::string("--split-compile=0")));
        compiled = nvrtcCompileProgram(prog, (int)argv.size(), argv.data());
    }
    if (compiled != NVRTC_SUCCESS) {
        size_t size = 0;
        std::string log;
        if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
            log.resize(size);
            nvrtcGetProgramLog(prog, &log[0]);
            log.resize(std::min<size_t>(strlen(log.c_str()), 1500)); // the first errors: the expression's
        }
        nvrtcDestroyProgram(&prog);
        return sr_error(compiled == NVRTC_ERROR_COMPILATION ? SR_ERROR_INVALID_ARGUMENT : SR_ERROR_INTERNAL,
                        "%s does not compile for the GPU (NVRTC %s, sm_%d):\n%s", what, nvrtc_version().c_str(), arch,
                        log.c_str());
    }
    size_t bytes = 0;
    SR_NVRTC_TRY(nvrtcGetCUBINSize(prog, &bytes));
    cubin->assign(bytes, '\0');
    SR_NVRTC_TRY(nvrtcGetCUBIN(prog, &(*cubin)[0]));
    lowered->clear();
    for (const std::string &k : kernels) {
        const char *name = nullptr;
        SR_NVRTC_TRY(nvrtcGetLoweredName(prog, k.c_str(), &name));
        lowered->push_back(name);
    }
    nvrtcDestroyProgram(&prog);
    return SR_SUCCESS;
}

bool read_file(const std::string &path, std::string *out) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f)
        return false;
    out->clear();
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        out->append(chunk, n);
    const bool ok = !ferror(f);
    fclose(f);
    return ok;
}

// Writes beside `path` and renames into place, so a reader never sees half a file.
bool write_file(const std::string &path, const std::string &data) {
    const std::string tmp = path + "." + std::to_string((long)getpid()) + ".tmp";
    FILE *f = fopen(tmp.c_str(), "wb");
    if (!f)
        return false;
    bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp.c_str(), path.c_str()) == 0)
        return true;
    remove(tmp.c_str());
    return false;
}

// The disk cache's files for a key: the CUBIN and its lowered names (one a line); empty paths
// when there is no cache folder (then every new process compiles).
void cache_paths(uint64_t key, std::string *cubin_path, std::string *names_path) {
    char folder[1024];
    cubin_path->clear();
    names_path->clear();
    if (!sr_jit_cache_folder(folder, sizeof folder))
        return;
    std::string cuda = std::string(folder) + "/cuda";
    if (mkdir(cuda.c_str(), 0700) != 0 && errno != EEXIST)
        return;
    char name[64];
    snprintf(name, sizeof name, "/sr_%016llx", (unsigned long long)key);
    *cubin_path = cuda + name + ".cubin";
    *names_path = cuda + name + ".names";
}

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        const size_t end = text.find('\n', start);
        lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    return lines;
}

int current_arch() {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return major * 10 + minor;
}

} // namespace

sr_status jit_compile_only(const char *what, const std::string &source, const std::vector<std::string> &kernels,
                           int arch, size_t *cubin_bytes, std::vector<std::string> *lowered) {
    std::string cubin;
    std::lock_guard<std::mutex> hold(jit_lock);
    SR_TRY(compile(what, source, kernels, arch, &cubin, lowered));
    *cubin_bytes = cubin.size();
    return SR_SUCCESS;
}

sr_status jit_program_for(const char *what, const std::string &source, const std::vector<std::string> &kernels,
                          int arch, jit_program **program) {
    if (arch == 0)
        arch = current_arch();
    const uint64_t key = key_of(source, kernels, arch);
    std::lock_guard<std::mutex> hold(jit_lock);
    const auto found = programs.find(key);
    if (found != programs.end()) {
        *program = found->second;
        return SR_SUCCESS;
    }
    std::string cubin_path, names_path, cubin, names_text;
    std::vector<std::string> lowered;
    cache_paths(key, &cubin_path, &names_path);
    const bool cached = !cubin_path.empty() && read_file(names_path, &names_text) && read_file(cubin_path, &cubin) &&
                        (lowered = split_lines(names_text)).size() == kernels.size() && !cubin.empty();
    if (!cached) {
        SR_TRY(compile(what, source, kernels, arch, &cubin, &lowered));
        if (!cubin_path.empty()) { // names first: a CUBIN on disk always has its names beside it
            std::string text;
            for (const std::string &l : lowered)
                text += l + "\n";
            if (write_file(names_path, text))
                write_file(cubin_path, cubin);
        }
    }
    jit_program *p = new (std::nothrow) jit_program;
    if (!p)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory");
    cudaError_t err = cudaLibraryLoadData(&p->library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (err != cudaSuccess) {
        delete p;
        return sr_error(SR_ERROR_INTERNAL, "%s: the compiled kernels do not load (%s%s%s)", what,
                        cudaGetErrorString(err), cached ? "; remove " : "", cached ? cubin_path.c_str() : "");
    }
    p->names = kernels;
    p->kernels.resize(kernels.size());
    for (size_t k = 0; k < kernels.size(); k++) {
        err = cudaLibraryGetKernel(&p->kernels[k], p->library, lowered[k].c_str());
        if (err != cudaSuccess) {
            cudaLibraryUnload(p->library);
            delete p;
            return sr_error(SR_ERROR_INTERNAL, "%s: kernel %s (%s) not found in the compiled program (%s)", what,
                            kernels[k].c_str(), lowered[k].c_str(), cudaGetErrorString(err));
        }
    }
    programs[key] = p;
    *program = p;
    return SR_SUCCESS;
}

sr_status jit_kernel(const jit_program *program, const char *name_expression, cudaKernel_t *kernel) {
    for (size_t k = 0; k < program->names.size(); k++)
        if (program->names[k] == name_expression) {
            *kernel = program->kernels[k];
            return SR_SUCCESS;
        }
    return sr_error(SR_ERROR_INTERNAL, "the compiled program has no kernel %s", name_expression);
}

} // namespace sr_cuda
