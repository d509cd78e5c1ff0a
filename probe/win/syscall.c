/* latscope-probe on Windows: the cost of a (nearly) null system call, timed per call and in
 * batches, as bench/syscall.c does on Linux.  Which call (docs/windows.md): Win32 calls that
 * return a process's facts (GetCurrentProcessId, GetCurrentThreadId) read them from user
 * memory (the TEB) and never enter the kernel, so they are no system call at all.
 *   testalert: NtTestAlert, an ntdll stub that enters the kernel, finds no APC queued for the
 *              thread and returns: the nearest Windows has to a null system call;
 *   ppid:      NtQueryInformationProcess(ProcessBasicInformation) on the process itself, which
 *              enters the kernel and copies out a small record (the parent's id among it):
 *              Windows's getppid;
 *   read0:     ReadFile of 0 bytes from an open file (NtReadFile), as read0 on Linux. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <winternl.h>

static const char *const op_choices[] = {"testalert", "ppid", "read0", NULL};

static const struct pdef syscall_params[] = {
    {"op", P_ENUM, "testalert", NULL,
     "testalert: NtTestAlert (enters the kernel, no APC to deliver); ppid: "
     "NtQueryInformationProcess(ProcessBasicInformation), the parent's id; read0: ReadFile "
     "of 0 bytes from an open file",
     op_choices, 0, 0, NULL},
    {"batch", P_INT, "1000", "calls",
     "calls timed together for the batch figure (per call = batch time / calls)", NULL, 1,
     10000000, NULL},
    {"batches", P_INT, "100", "batches", "number of batches for the batch figure", NULL, 1,
     100000, NULL},
    {"cpu", P_CPU, "none", "cpu", "pin the measuring thread to this CPU (none: unpinned)", NULL,
     0, 0, NULL},
};

static const struct coldef syscall_columns[] = {
    {"call", "one system call, from the clock read before it to the clock read after it",
     "call", NULL},
};

typedef LONG(NTAPI *test_alert_fn)(void);
typedef LONG(NTAPI *query_process_fn)(HANDLE, PROCESSINFOCLASS, PVOID, ULONG, PULONG);
static test_alert_fn nt_test_alert;
static query_process_fn nt_query_process;
static HANDLE g_file = INVALID_HANDLE_VALUE;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 0 on success (the call's own status) */
static inline long do_op(int op) {
    if (op == 0) return nt_test_alert();
    if (op == 1) {
        PROCESS_BASIC_INFORMATION pbi;
        ULONG len;
        return nt_query_process(GetCurrentProcess(), ProcessBasicInformation, &pbi, sizeof pbi,
                                &len);
    }
    char buf[1];
    DWORD r;
    return ReadFile(g_file, buf, 0, &r, NULL) ? 0 : -1;
}

static int syscall_check(const struct bench *b, const struct pval *pv, char *err,
                         size_t errlen) {
    return cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
}

static void run_syscall(struct runctx *ctx) {
    const char *opname = param(ctx, "op")->s;
    int op = !strcmp(opname, "testalert") ? 0 : !strcmp(opname, "ppid") ? 1 : 2;
    long long batch = param(ctx, "batch")->i, batches = param(ctx, "batches")->i;
    int cpu = (int)param(ctx, "cpu")->i;
    pin_or_die(cpu);
    HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    nt_test_alert = (test_alert_fn)(void (*)(void))GetProcAddress(ntdll, "NtTestAlert");
    nt_query_process =
        (query_process_fn)(void (*)(void))GetProcAddress(ntdll, "NtQueryInformationProcess");
    if (!nt_test_alert || !nt_query_process)
        die(EXIT_UNSUPPORTED, "ntdll has no NtTestAlert or NtQueryInformationProcess");
    if (op == 2) {
        /* a file of our own that nobody can open, deleted when closed */
        char dir[MAX_PATH], path[MAX_PATH];
        if (!GetTempPathA(sizeof dir, dir) || !GetTempFileNameA(dir, "lsc", 0, path))
            die(EXIT_UNSUPPORTED, "cannot create a file in %%TEMP%% (error %lu)",
                GetLastError());
        g_file = CreateFileA(path, GENERIC_READ, 0, NULL, TRUNCATE_EXISTING,
                             FILE_FLAG_DELETE_ON_CLOSE, NULL);
        if (g_file == INVALID_HANDLE_VALUE) {
            DeleteFileA(path);
            die(EXIT_UNSUPPORTED, "cannot open %s (error %lu)", path, GetLastError());
        }
    }
    struct column *c = add_column(ctx, "call", syscall_columns[0].desc, "call", 0);
    ctx->t_start = alloc_samples((size_t)ctx->n);
    double *bv = xcalloc((size_t)batches, sizeof(double));

    uint64_t total = (uint64_t)(ctx->n + ctx->warmup), warm = (uint64_t)ctx->warmup, t0 = 0;
    touch_stack();
    for (uint64_t i = 0; i < total; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        uint64_t a = clk_start();
        inject_delay();
        long r = do_op(op);
        uint64_t b = clk_end();
        if (r != 0) die(EXIT_FAIL, "the timed system call failed (status %#lx)", (unsigned long)r);
        if (i >= warm) {
            if (i == warm) t0 = a;
            c->data[i - warm] = (int64_t)(b - a);
            ctx->t_start[i - warm] = (int64_t)(a - t0);
        }
        progress_set(ctx, i + 1);
    }
    ctx->t0 = t0;
    ctx->nroles = 1;
    ctx->roles[0].role = "main";
    for (long long k = 0; k < batches; k++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        long bad = 0;
        uint64_t a = clk_start();
        for (long long m = 0; m < batch; m++) bad |= do_op(op);
        uint64_t b = clk_end();
        if (bad) die(EXIT_FAIL, "a system call in a batch failed");
        bv[k] = ((double)(b - a) * ctx->clk.ns_per_tick - ctx->clk.overhead_ns) / (double)batch;
    }
    if (g_file != INVALID_HANDLE_VALUE) CloseHandle(g_file);
    double *sorted = xcalloc((size_t)batches, sizeof(double));
    memcpy(sorted, bv, (size_t)batches * sizeof(double));
    qsort(sorted, (size_t)batches, sizeof(double), cmp_d);

    static const char *const timed[] = {
        "NtTestAlert() (ntdll, looked up once)",
        "NtQueryInformationProcess(GetCurrentProcess(), ProcessBasicInformation, ...)",
        "ReadFile(h, buf, 0, ...) on an open file in %TEMP%, deleted on close"};
    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "op", opname);
    jb_str(j, "timed_region", timed[op]);
    jb_int(j, "cpu", cpu);
    jb_obj(j, "batch");
    jb_int(j, "calls_per_batch", batch);
    jb_int(j, "batches", batches);
    jb_num(j, "per_call_median_ns", sorted[batches / 2]);
    jb_num(j, "per_call_min_ns", sorted[0]);
    jb_num(j, "per_call_max_ns", sorted[batches - 1]);
    jb_str(j, "note", "per call = (batch time - clock overhead) / calls; no clock read "
                      "between calls, so it is the clock-free cost to check the per-call "
                      "samples against");
    jb_arr(j, "per_call_ns");
    for (long long k = 0; k < batches; k++) jb_num(j, NULL, bv[k]);
    jb_end_arr(j);
    jb_end_obj(j);
    jb_end_obj(j);
    free(bv);
    free(sorted);
}

static const struct scenario syscall_scenarios[] = {
    {"syscall", "op=testalert", 20000, 0, 1, "NtTestAlert: a nearly null system call"},
    {"syscall-ppid", "op=ppid", 20000, 0, 1, "NtQueryInformationProcess: Windows's getppid"},
    {"syscall-read0", "op=read0", 20000, 0, 1, "ReadFile of 0 bytes from an open file"},
};

const struct bench bench_syscall = {
    .name = "syscall",
    .summary = "a nearly null system call (NtTestAlert, NtQueryInformationProcess, or ReadFile "
               "of 0 bytes), per call and batched",
    .params = syscall_params,
    .nparams = COUNT(syscall_params),
    .columns = syscall_columns,
    .ncolumns = COUNT(syscall_columns),
    .check = syscall_check,
    .run = run_syscall,
    .default_n = 100000,
    .kind = "syscall",
    .scenarios = syscall_scenarios,
    .nscenarios = COUNT(syscall_scenarios),
    .display = {.roles = {"main"},
                .check_label = "batch figure",
                .check_value = "bench.batch.per_call_median_ns",
                .check_column = "call",
                .check_minus = "clock.overhead_ns",
                .check_detail = "{bench.batch.calls_per_batch} calls × {bench.batch.batches} "
                                "batches, median"},
};
