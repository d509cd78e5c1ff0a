/* latscope-probe: what the operating system provides.
 *
 * Everything the core, the benchmarks and the ping-pong driver need from the system beyond
 * POSIX sits behind these calls: linux.c implements them for Linux; stub.c shows the set
 * another system implements (meson compiles one of the two, with posix.c; stub.c is compiled
 * on Linux too, so that it keeps up with this header); windows.c implements them all for
 * Windows (docs/windows.md).  A mechanism that is a Linux facility in itself
 * (eventfd, futex, network namespaces, POSIX message queues) uses it in its own file.
 * Nothing here allocates through the probe's helpers or dies: callers decide what an error
 * means.  No call here is ever made inside a timed region. */
#ifndef LATSCOPE_PLATFORM_H
#define LATSCOPE_PLATFORM_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- CPUs and memory */

/* Pin the calling thread to one CPU (cpu < 0: leave it unpinned).  0, or an errno value. */
int plat_pin_thread(int cpu);
/* Real-time scheduling and locked memory for the calling process (--sched, --mlock):
 * policy PLAT_RT_FIFO or PLAT_RT_RR at prio (threads it creates and processes it forks
 * inherit the policy), and with lock every page it has and will have kept in memory
 * (mlockall; renewed in each process it forks, which does not inherit it). 0, or an errno:
 * EPERM without the right (root, CAP_SYS_NICE or RLIMIT_RTPRIO; CAP_IPC_LOCK or
 * RLIMIT_MEMLOCK), ENOSYS where the system has neither. */
enum { PLAT_RT_NONE = 0, PLAT_RT_FIFO = 1, PLAT_RT_RR = 2 };
int plat_realtime(int policy, int prio, int lock);
/* Back to the normal policy, memory unlocked (after a trial of plat_realtime). */
void plat_realtime_undo(void);
/* The highest priority of the real-time policies (99 on Linux), 0 where there are none. */
int plat_realtime_max(void);
/* The calling thread's CPU affinity kept now (plat_affinity_save), and given back to it later
 * (plat_affinity_restore): the arms of one run whose measuring thread is unpinned, after an
 * arm that pinned it.  0, or an errno value. */
int plat_affinity_save(void);
int plat_affinity_restore(void);
/* 1 if the CPU exists and this process may run on it (its affinity mask), else 0. */
int plat_cpu_usable(int cpu);
int plat_cpus_configured(void);
int plat_cpus_online(void);
/* Memory available to new allocations without swapping, in bytes; -1 when unknown. */
long long plat_available_memory(void);

/* ---------------------------------------------------------------- system facts */

/* The CPU's model name; 0, or -1 (buf is then "") when unknown. */
int plat_cpu_model(char *buf, size_t len);
/* The kernel's current clock source (e.g. "tsc", "kvm-clock"); 0, or -1 when unknown. */
int plat_clocksource(char *buf, size_t len);
/* 1 if the kernel says the TSC ticks at a constant rate through every CPU state and can be read
 * with rdtscp (where CPUID hides it, as hypervisors often do); else 0. */
int plat_tsc_invariant(void);

/* Whether this process runs under a user-mode emulator (qemu-user) instead of on a CPU of the
 * architecture it was built for: 1, with the emulator and what showed it (one phrase), else 0.
 * Linux: the kernel's own view of the process, which an emulator does not rewrite: the
 * executable of /proc/thread-self/exe is the emulator's (qemu-user rewrites /proc/self/exe
 * only), or /proc/cpuinfo describes a CPU of another architecture. */
struct emulation {
    char emulator[64];
    char evidence[512];
};
int plat_emulation(struct emulation *out);

/* ---------------------------------------------------------------- processes and signals */

/* Have the kernel send sig to this process when its parent dies (the probe at start, a forked
 * worker or peer).  0, or -1 where the system cannot (the caller must then watch its parent
 * itself).  The caller checks getppid() afterwards: a parent that died before the call is not
 * signalled. */
int plat_die_with_parent(int sig);
/* The start time of process pid (on Linux clock ticks since boot): with the pid it names one
 * process, so that a recycled pid is never taken for the one recorded.  0 when unknown. */
unsigned long long plat_proc_start(pid_t pid);
/* Wait up to timeout_s for one of the signals in set (blocked in the calling thread): its
 * number, or 0 after the timeout or an interruption. */
int plat_wait_signal(const sigset_t *set, double timeout_s);
/* A descriptor that becomes readable when one of the signals in set (blocked) arrives, for
 * poll(); -1 with errno on failure.  plat_signal_fd_read takes one: its number, or -1. */
int plat_signal_fd_open(const sigset_t *set);
int plat_signal_fd_read(int fd);

/* A thread's resource usage: what a timed loop's measuring thread went through (page
 * faults, context switches). */
struct thread_usage {
    long minflt, majflt, nvcsw, nivcsw;
};
/* The calling thread's usage so far (all zero where the system cannot say per thread). */
void plat_thread_usage(struct thread_usage *u);

/* ---------------------------------------------------------------- randomness */

/* len unpredictable bytes (for names others must not guess); 0, or -1 with errno. */
int plat_random(void *buf, size_t len);

/* ---------------------------------------------------------------- file systems */

/* Rename old (relative to olddirfd) to new (relative to newdirfd) unless new exists: then -1
 * with errno EEXIST and nothing changed.  Where the file system cannot rename without
 * replacing, a hard link and an unlink do the same (the link, too, refuses an existing name).
 * 0, or -1 with errno. */
int plat_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname);

/* Which file system a path lives on (the environment's "filesystem": docs/store.md). */
struct fsinfo {
    char path[4096];          /* the path, resolved (as given when it cannot be) */
    char fstype[64];
    char source[512];
    char mount_point[1024];
    char mount_options[512];  /* the mount's own options */
    char super_options[512];  /* the file system's (superblock) options */
    unsigned long long magic; /* statfs f_type */
    /* the block device behind it, where there is one (Linux: /sys/dev/block): its name, its
     * queue's write cache ("write back": a flush makes writes durable; "write through"),
     * I/O scheduler and rotational flag (-1: unknown) */
    char device[64];
    char write_cache[32];
    char scheduler[32];
    int rotational;
};
/* 0 on success; fields are "" where unknown (path is always set). */
int plat_fsinfo(const char *path, struct fsinfo *out);
/* Linux mountinfo, exposed for tests: decode its octal escapes (\040 for a space) in place;
 * parse one line into mount point, type, source and options of out (0 on success); choose
 * the mount of the resolved path `real` from a mountinfo stream (0 when found). */
void plat_fsinfo_unescape(char *s);
int plat_fsinfo_parse_line(const char *line, struct fsinfo *out);
int plat_fsinfo_mount(FILE *mountinfo, const char *real, struct fsinfo *out);

/* Emptying the page cache, dentries and inodes (file cache=drop, root only): open the control
 * once (a descriptor, or -1 with errno: EACCES/EPERM without the privilege), then drop before
 * each iteration (writes dirty pages first; 0, or -1 with errno). */
int plat_drop_caches_open(void);
int plat_drop_caches(int fd);

/* ---------------------------------------------------------------- the portable core's needs
 *
 * What the core itself (main, clean-up, helpers, the sample file's environment) needs that is
 * POSIX on POSIX systems (platform/posix.c, compiled with linux.c or stub.c) and Win32 on
 * Windows (windows.c). */

/* The size of a memory page. */
long plat_page_size(void);
/* 1 if fd is an open file descriptor, else 0. */
int plat_fd_valid(int fd);
/* The parent process's id (0 when unknown). */
long long plat_parent_pid(void);
/* Kill child process pid at once and reap it (the clean-up list's cleanup_kill). */
void plat_kill_wait(pid_t pid);
/* Run prepare / parent / child around fork() (pthread_atfork); nothing where there is no
 * fork. */
void plat_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
/* The operating system, for the environment's "hostname", "kernel" and "process" (docs/
 * store.md): fields "" (uid, euid -1) where unknown. */
struct plat_os {
    char hostname[256];
    char sysname[128], release[128], version[256], machine[128];
    long long uid, euid;
};
void plat_os(struct plat_os *o);

#endif
