/* latscope-probe: the platform layer for Windows (platform.h), built with MinGW-w64
 * (docs/windows.md).  What Windows has no counterpart for (signals, fork, drop_caches, a
 * parent to die with) answers "not here" as stub.c does; per-thread usage is not known. */
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <string.h>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <bcrypt.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/clock.h"

/* Before main: the standard streams in binary mode, so that the probe writes the same bytes
 * as on Linux (JSON lines end in \n, not \r\n); no error dialog boxes ever. */
__attribute__((constructor)) static void windows_init(void) {
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX);
}

uint64_t qpc_frequency(void) {
    LARGE_INTEGER f;
    return QueryPerformanceFrequency(&f) ? (uint64_t)f.QuadPart : 0;
}

/* ---------------------------------------------------------------- CPUs and memory */

/* --sched and --mlock are Linux's (SetPriorityClass is another model): refused here. */
int plat_realtime(int policy, int prio, int lock) {
    (void)prio;
    return policy || lock ? ENOSYS : 0;
}
void plat_realtime_undo(void) {}
int plat_realtime_max(void) { return 0; }

int plat_pin_thread(int cpu) {
    if (cpu < 0) return 0;
    if (cpu >= 64) return EINVAL; /* one processor group: its 64 CPUs */
    return SetThreadAffinityMask(GetCurrentThread(), (DWORD_PTR)1 << cpu) ? 0 : EINVAL;
}
/* the process's mask stands for "unpinned" (a thread's own cannot be read on its own) */
int plat_affinity_save(void) { return 0; }
int plat_affinity_restore(void) {
    DWORD_PTR proc, sys;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys)) return EINVAL;
    return SetThreadAffinityMask(GetCurrentThread(), proc) ? 0 : EINVAL;
}
int plat_cpu_usable(int cpu) {
    DWORD_PTR proc, sys;
    if (cpu < 0 || cpu >= 64 || !GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
        return 0;
    return (proc >> cpu) & 1;
}
int plat_cpus_configured(void) { return (int)GetMaximumProcessorCount(ALL_PROCESSOR_GROUPS); }
int plat_cpus_online(void) { return (int)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS); }
long long plat_available_memory(void) {
    MEMORYSTATUSEX m = {.dwLength = sizeof m};
    return GlobalMemoryStatusEx(&m) ? (long long)m.ullAvailPhys : -1;
}

/* ---------------------------------------------------------------- system facts */

int plat_cpu_model(char *buf, size_t len) {
    if (len) buf[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned r[12], a, b, c, d;
    if (len < 49 || !__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u) return -1;
    for (unsigned k = 0; k < 3; k++) __get_cpuid(0x80000002u + k, &r[4 * k], &r[4 * k + 1],
                                                 &r[4 * k + 2], &r[4 * k + 3]);
    char s[49];
    memcpy(s, r, 48);
    s[48] = 0;
    const char *p = s;
    while (*p == ' ') p++;
    snprintf(buf, len, "%s", p);
    return *buf ? 0 : -1;
#else
    return -1;
#endif
}
int plat_clocksource(char *buf, size_t len) {
    if (len) buf[0] = 0;
    return -1;
}
int plat_tsc_invariant(void) { return 0; } /* CPUID alone decides (clock.c) */

/* Wine stands in for Windows: its ntdll exports wine_get_version (and the host system's name
 * in wine_get_host_version).  Its figures are not Windows figures (docs/windows.md). */
int plat_emulation(struct emulation *out) {
    memset(out, 0, sizeof *out);
    HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    typedef const char *(__cdecl * wine_version_fn)(void);
    typedef void(__cdecl * wine_host_fn)(const char **sysname, const char **release);
    wine_version_fn wv =
        ntdll ? (wine_version_fn)(void (*)(void))GetProcAddress(ntdll, "wine_get_version") : NULL;
    if (!wv) return 0;
    wine_host_fn wh = (wine_host_fn)(void (*)(void))GetProcAddress(ntdll, "wine_get_host_version");
    const char *hs = NULL, *hr = NULL;
    if (wh) wh(&hs, &hr);
    snprintf(out->emulator, sizeof out->emulator, "wine %s", wv());
    snprintf(out->evidence, sizeof out->evidence,
             "ntdll exports wine_get_version (%s): Wine runs this Windows program on %s %s",
             wv(), hs ? hs : "another system", hr ? hr : "");
    return 1;
}

/* ---------------------------------------------------------------- processes and signals */

int plat_die_with_parent(int sig) {
    (void)sig;
    errno = ENOSYS;
    return -1;
}
unsigned long long plat_proc_start(pid_t pid) {
    (void)pid;
    return 0;
}
int plat_wait_signal(const sigset_t *set, double timeout_s) {
    (void)set;
    Sleep((DWORD)(timeout_s * 1000));
    return 0;
}
int plat_signal_fd_open(const sigset_t *set) {
    (void)set;
    errno = ENOSYS;
    return -1;
}
int plat_signal_fd_read(int fd) {
    (void)fd;
    return -1;
}
void plat_thread_usage(struct thread_usage *u) { memset(u, 0, sizeof *u); }

/* ---------------------------------------------------------------- randomness */

int plat_random(void *buf, size_t len) {
    if (BCryptGenRandom(NULL, buf, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- file systems */

int plat_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname) {
    /* no directory descriptors: win/output.c renames with MoveFileExA, which never replaces */
    (void)olddirfd, (void)oldname, (void)newdirfd, (void)newname;
    errno = ENOSYS;
    return -1;
}

/* The volume of path: its mount point (GetVolumePathName), its file system (NTFS, ...) and
 * its volume name as source. */
int plat_fsinfo(const char *path, struct fsinfo *out) {
    memset(out, 0, sizeof *out);
    out->rotational = -1; /* unknown */
    if (!GetFullPathNameA(path, sizeof out->path, out->path, NULL))
        snprintf(out->path, sizeof out->path, "%s", path);
    char root[MAX_PATH], fstype[64] = "", volname[MAX_PATH] = "";
    if (!GetVolumePathNameA(out->path, root, sizeof root)) return -1;
    snprintf(out->mount_point, sizeof out->mount_point, "%s", root);
    DWORD serial = 0, maxlen = 0, flags = 0;
    if (GetVolumeInformationA(root, NULL, 0, &serial, &maxlen, &flags, fstype, sizeof fstype))
        snprintf(out->fstype, sizeof out->fstype, "%s", fstype);
    if (GetVolumeNameForVolumeMountPointA(root, volname, sizeof volname))
        snprintf(out->source, sizeof out->source, "%s", volname);
    return 0;
}
void plat_fsinfo_unescape(char *s) { (void)s; }
int plat_fsinfo_parse_line(const char *line, struct fsinfo *out) {
    (void)line, (void)out;
    return -1;
}
int plat_fsinfo_mount(FILE *mountinfo, const char *real, struct fsinfo *out) {
    (void)mountinfo, (void)real, (void)out;
    return -1;
}

int plat_drop_caches_open(void) {
    errno = ENOSYS;
    return -1;
}
int plat_drop_caches(int fd) {
    (void)fd;
    errno = ENOSYS;
    return -1;
}

/* ---------------------------------------------------------------- the portable core's needs */

long plat_page_size(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize ? (long)si.dwPageSize : 4096;
}

int plat_fd_valid(int fd) { return _get_osfhandle(fd) != -1; }

long long plat_parent_pid(void) { return 0; } /* not needed: no parent to die with */

void plat_kill_wait(pid_t pid) {
    HANDLE h = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE, (DWORD)pid);
    if (!h) return;
    TerminateProcess(h, 1);
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
}

void plat_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
    (void)prepare, (void)parent, (void)child; /* no fork on Windows */
}

/* The version as the kernel reports it (RtlGetVersion: GetVersionEx answers what the
 * program's manifest asks for). */
void plat_os(struct plat_os *o) {
    memset(o, 0, sizeof *o);
    o->uid = o->euid = -1;
    DWORD n = sizeof o->hostname;
    if (!GetComputerNameExA(ComputerNameDnsHostname, o->hostname, &n)) o->hostname[0] = 0;
    snprintf(o->sysname, sizeof o->sysname, "Windows");
    HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    typedef LONG(WINAPI * rtl_get_version_fn)(OSVERSIONINFOEXW *);
    rtl_get_version_fn rgv =
        ntdll ? (rtl_get_version_fn)(void (*)(void))GetProcAddress(ntdll, "RtlGetVersion") : NULL;
    OSVERSIONINFOEXW v = {.dwOSVersionInfoSize = sizeof v};
    if (rgv && rgv(&v) == 0) {
        snprintf(o->release, sizeof o->release, "%lu.%lu.%lu", v.dwMajorVersion,
                 v.dwMinorVersion, v.dwBuildNumber);
        char sp[128] = "";
        WideCharToMultiByte(CP_UTF8, 0, v.szCSDVersion, -1, sp, sizeof sp, NULL, NULL);
        snprintf(o->version, sizeof o->version, "Windows %lu.%lu build %lu%s%s",
                 v.dwMajorVersion, v.dwMinorVersion, v.dwBuildNumber, *sp ? " " : "", sp);
    }
    SYSTEM_INFO si;
    GetNativeSystemInfo(&si);
    const char *m = si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64   ? "x86_64"
                    : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? "aarch64"
                    : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_INTEL ? "i686"
                                                                                : "";
    snprintf(o->machine, sizeof o->machine, "%s", m);
}
