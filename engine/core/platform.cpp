#include <oxinfer/platform.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define OXINFER_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

#if defined(__linux__)
#include <sys/sysinfo.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#elif defined(__APPLE__)
#include <mach/mach.h>
#include <sys/sysctl.h>
#elif defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif

namespace oxinfer {
namespace {

#if OXINFER_X86
struct Registers {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf = 0) {
    Registers r;
#if defined(_MSC_VER)
    int out[4];
    __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
    r = {static_cast<unsigned>(out[0]), static_cast<unsigned>(out[1]), static_cast<unsigned>(out[2]), static_cast<unsigned>(out[3])};
#else
    __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
#endif
    return r;
}

unsigned long long xgetbv0() {
#if defined(_MSC_VER)
    return _xgetbv(0);
#else
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<unsigned long long>(edx) << 32) | eax;
#endif
}

bool bit(unsigned value, int index) { return (value >> index) & 1u; }

void detect_x86(PlatformInfo& info) {
    CpuFeatures& f = info.features;
    const Registers l0 = cpuid(0);
    const unsigned max_leaf = l0.eax;
    info.cpu_vendor.clear();
    for (unsigned word : {l0.ebx, l0.edx, l0.ecx})
        for (int b = 0; b < 4; ++b) info.cpu_vendor += static_cast<char>((word >> (8 * b)) & 0xff);
    const Registers l1 = cpuid(1);
    // The extended family counts only when the base family is 15 (the Intel and AMD manuals).
    const unsigned base_family = (l1.eax >> 8) & 0xf;
    info.cpu_family = static_cast<int>(base_family == 0xf ? base_family + ((l1.eax >> 20) & 0xff) : base_family);
    f.sse42 = bit(l1.ecx, 20);
    f.fma = bit(l1.ecx, 12);
    f.f16c = bit(l1.ecx, 29);
    const bool osxsave = bit(l1.ecx, 27);
    // The CPU may support AVX/AVX-512 while the OS does not save their registers: check XCR0.
    const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;
    const bool os_amx = (xcr0 & 0x60000) == 0x60000;
    f.avx = bit(l1.ecx, 28) && os_ymm;
    f.fma = f.fma && os_ymm;
    f.f16c = f.f16c && os_ymm;
    if (max_leaf >= 7) {
        const Registers l7 = cpuid(7, 0);
        f.avx2 = bit(l7.ebx, 5) && os_ymm;
        f.avx512f = bit(l7.ebx, 16) && os_zmm;
        f.avx512dq = bit(l7.ebx, 17) && os_zmm;
        f.avx512bw = bit(l7.ebx, 30) && os_zmm;
        f.avx512vl = bit(l7.ebx, 31) && os_zmm;
        f.avx512_vnni = bit(l7.ecx, 11) && os_zmm;
        f.avx512_fp16 = bit(l7.edx, 23) && os_zmm;
        f.amx_bf16 = bit(l7.edx, 22) && os_amx;
        f.amx_tile = bit(l7.edx, 24) && os_amx;
        f.amx_int8 = bit(l7.edx, 25) && os_amx;
        if (l7.eax >= 1) {
            const Registers l71 = cpuid(7, 1);
            f.avx_vnni = bit(l71.eax, 4) && os_ymm;
            f.avx512_bf16 = bit(l71.eax, 5) && os_zmm;
        }
    }
    if (cpuid(0x80000000).eax >= 0x80000004) {
        char brand[49] = {};
        for (unsigned i = 0; i < 3; ++i) {
            const Registers r = cpuid(0x80000002 + i);
            const unsigned words[4] = {r.eax, r.ebx, r.ecx, r.edx};
            for (int w = 0; w < 4; ++w)
                for (int b = 0; b < 4; ++b) brand[i * 16 + w * 4 + b] = static_cast<char>((words[w] >> (8 * b)) & 0xff);
        }
        std::string name = brand;
        const auto first = name.find_first_not_of(' ');
        const auto last = name.find_last_not_of(' ');
        if (first != std::string::npos) info.cpu_name = name.substr(first, last - first + 1);
    }
}
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
void detect_arm(PlatformInfo& info) {
    CpuFeatures& f = info.features;
    f.neon = true;  // mandatory on AArch64
#if defined(__linux__)
    const unsigned long caps = getauxval(AT_HWCAP);
    const unsigned long caps2 = getauxval(AT_HWCAP2);
    f.dotprod = caps & HWCAP_ASIMDDP;
    f.arm_fp16 = caps & HWCAP_FPHP;
    f.sve = caps & HWCAP_SVE;
#ifdef HWCAP2_I8MM
    f.i8mm = caps2 & HWCAP2_I8MM;
#endif
#ifdef HWCAP2_BF16
    f.arm_bf16 = caps2 & HWCAP2_BF16;
#endif
    (void)caps2;
#elif defined(__APPLE__)
    auto flag = [](const char* name) {
        int value = 0;
        size_t size = sizeof value;
        return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
    };
    f.dotprod = flag("hw.optional.arm.FEAT_DotProd");
    f.i8mm = flag("hw.optional.arm.FEAT_I8MM");
    f.arm_fp16 = flag("hw.optional.arm.FEAT_FP16");
    f.arm_bf16 = flag("hw.optional.arm.FEAT_BF16");
#endif
}
#endif

#if defined(__linux__)
std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// Physical cores: distinct (package, core) pairs in sysfs; SMT siblings share a pair.
int linux_physical_cores(int logical) {
    std::set<std::pair<std::string, std::string>> cores;
    for (int cpu = 0; cpu < logical; ++cpu) {
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        const std::string core = read_first_line(base + "core_id");
        if (core.empty()) continue;
        cores.insert({read_first_line(base + "physical_package_id"), core});
    }
    return cores.empty() ? logical : static_cast<int>(cores.size());
}

uint64_t meminfo_kib(const std::string& key) {
    std::ifstream in("/proc/meminfo");
    std::string name;
    uint64_t value = 0;
    std::string unit;
    while (in >> name >> value >> unit)
        if (name == key + ":") return value;
    return 0;
}

std::string linux_cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        // x86 says "model name", some Arm kernels "Model" or "Hardware".
        for (const char* key : {"model name", "Model", "Hardware"}) {
            if (line.rfind(key, 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
            }
        }
    }
    return {};
}
#endif

void detect_cores_and_memory(PlatformInfo& info) {
    info.logical_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    info.physical_cores = info.logical_cores;
#if defined(__linux__)
    info.physical_cores = linux_physical_cores(static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)));
    if (info.physical_cores > info.logical_cores) info.physical_cores = info.logical_cores;
    info.total_ram_bytes = meminfo_kib("MemTotal") * 1024;
    info.available_ram_bytes = meminfo_kib("MemAvailable") * 1024;
    if (info.total_ram_bytes == 0) {
        struct sysinfo si {};
        if (sysinfo(&si) == 0) {
            info.total_ram_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
            info.available_ram_bytes = static_cast<uint64_t>(si.freeram) * si.mem_unit;
        }
    }
    if (info.cpu_name.empty()) info.cpu_name = linux_cpu_name();
#elif defined(__APPLE__)
    int value = 0;
    size_t size = sizeof value;
    if (sysctlbyname("hw.physicalcpu", &value, &size, nullptr, 0) == 0) info.physical_cores = value;
    uint64_t memory = 0;
    size = sizeof memory;
    if (sysctlbyname("hw.memsize", &memory, &size, nullptr, 0) == 0) info.total_ram_bytes = memory;
    vm_statistics64_data_t vm{};
    mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, reinterpret_cast<host_info64_t>(&vm), &count) == KERN_SUCCESS)
        info.available_ram_bytes = (static_cast<uint64_t>(vm.free_count) + vm.inactive_count) * vm_page_size;
    char brand[256] = {};
    size = sizeof brand;
    if (info.cpu_name.empty() && sysctlbyname("machdep.cpu.brand_string", brand, &size, nullptr, 0) == 0) info.cpu_name = brand;
#elif defined(_WIN32)
    MEMORYSTATUSEX status{};
    status.dwLength = sizeof status;
    if (GlobalMemoryStatusEx(&status)) {
        info.total_ram_bytes = status.ullTotalPhys;
        info.available_ram_bytes = status.ullAvailPhys;
    }
    DWORD length = 0;
    GetLogicalProcessorInformationEx(RelationProcessorCore, nullptr, &length);
    std::string buffer(length, '\0');
    auto* first = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.data());
    if (length && GetLogicalProcessorInformationEx(RelationProcessorCore, first, &length)) {
        int cores = 0;
        for (DWORD offset = 0; offset < length;) {
            auto* item = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.data() + offset);
            ++cores;
            offset += item->Size;
        }
        info.physical_cores = cores;
    }
#endif
    if (info.physical_cores < 1) info.physical_cores = 1;
}

std::string machine_arch() {
#if defined(__x86_64__) || defined(_M_X64)
    return "x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
    return "aarch64";
#elif defined(__i386__)
    return "x86";
#else
    return "unknown";
#endif
}

}  // namespace

std::vector<std::string> CpuFeatures::names() const {
    const std::pair<bool, const char*> all[] = {
        {sse42, "SSE4.2"},        {avx, "AVX"},
        {avx2, "AVX2"},           {fma, "FMA"},
        {f16c, "F16C"},           {avx_vnni, "AVX_VNNI"},
        {avx512f, "AVX512F"},     {avx512bw, "AVX512BW"},
        {avx512vl, "AVX512VL"},   {avx512dq, "AVX512DQ"},
        {avx512_vnni, "AVX512_VNNI"}, {avx512_bf16, "AVX512_BF16"},
        {avx512_fp16, "AVX512_FP16"}, {amx_tile, "AMX_TILE"},
        {amx_int8, "AMX_INT8"},   {amx_bf16, "AMX_BF16"},
        {neon, "NEON"},           {dotprod, "DOTPROD"},
        {i8mm, "I8MM"},           {arm_fp16, "FP16"},
        {arm_bf16, "BF16"},       {sve, "SVE"},
    };
    std::vector<std::string> out;
    for (const auto& [present, name] : all)
        if (present) out.emplace_back(name);
    return out;
}

std::string PlatformInfo::summary() const {
    std::ostringstream out;
    out << (cpu_name.empty() ? "unknown CPU" : cpu_name) << " (" << arch << ") · " << physical_cores
        << (physical_cores == 1 ? " core / " : " cores / ") << logical_cores << (logical_cores == 1 ? " thread" : " threads")
        << " ·";
    const auto names = features.names();
    if (names.empty()) out << " no SIMD extensions";
    for (const auto& name : names) out << ' ' << name;
    out << " · " << format_bytes(total_ram_bytes) << " RAM (" << format_bytes(available_ram_bytes) << " available)";
    return out.str();
}

PlatformInfo detect_platform() {
    PlatformInfo info;
    info.arch = machine_arch();
#if OXINFER_X86
    detect_x86(info);
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
    detect_arm(info);
#endif
    detect_cores_and_memory(info);
    if (info.cpu_name.empty()) info.cpu_name = "unknown";
    if (info.cpu_vendor.empty()) info.cpu_vendor = "unknown";
    return info;
}

const PlatformInfo& platform() {
    static const PlatformInfo info = detect_platform();
    return info;
}

std::string format_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    return text;
}

}  // namespace oxinfer
