/* latscope-probe on Windows: the cost of a (nearly) null system call, timed per call and in
 * batches, as bench/syscall.c does on Linux (the loop, the batch figure and the header:
 * bench/nullcall.h).  Which call (docs/windows.md): Win32 calls that
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

typedef LONG(NTAPI *test_alert_fn)(void);
typedef LONG(NTAPI *query_process_fn)(HANDLE, PROCESSINFOCLASS, PVOID, ULONG, PULONG);

struct nullcall_state {
    test_alert_fn test_alert;
    query_process_fn query_process;
    HANDLE file;
};

/* the call's own status: 0 on success */
static inline long do_op(int op, struct nullcall_state *st) {
    if (op == 0) return st->test_alert();
    if (op == 1) {
        PROCESS_BASIC_INFORMATION pbi;
        ULONG len;
        return st->query_process(GetCurrentProcess(), ProcessBasicInformation, &pbi,
                                 sizeof pbi, &len);
    }
    char buf[1];
    DWORD r;
    return ReadFile(st->file, buf, 0, &r, NULL) ? 0 : -1;
}

static inline int op_ok(int op, long r) {
    (void)op;
    return r == 0;
}

__attribute__((noreturn)) static void op_failed(long r) {
    die(EXIT_FAIL, "the timed system call failed (status %#lx)", (unsigned long)r);
}

#include "bench/nullcall.h"

static const struct pdef syscall_params[] = {
    {"op", P_ENUM, "testalert", NULL,
     "testalert: NtTestAlert (enters the kernel, no APC to deliver); ppid: "
     "NtQueryInformationProcess(ProcessBasicInformation), the parent's id; read0: ReadFile "
     "of 0 bytes from an open file",
     op_choices, 0, 0, NULL},
    NULLCALL_PARAMS,
};

/* The calls of op=, ready (the thread is pinned): ntdll's entry points looked up once, read0's
 * file made. */
static void nullcall_open(struct nullcall_run *r) {
    const char *opname = param(r->ctx, "op")->s;
    int op = !strcmp(opname, "testalert") ? 0 : !strcmp(opname, "ppid") ? 1 : 2;
    struct nullcall_state st = {.file = INVALID_HANDLE_VALUE};
    HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    st.test_alert = (test_alert_fn)(void (*)(void))GetProcAddress(ntdll, "NtTestAlert");
    st.query_process =
        (query_process_fn)(void (*)(void))GetProcAddress(ntdll, "NtQueryInformationProcess");
    if (!st.test_alert || !st.query_process)
        die(EXIT_UNSUPPORTED, "ntdll has no NtTestAlert or NtQueryInformationProcess");
    if (op == 2) {
        /* a file of our own that nobody can open, deleted when closed */
        char dir[MAX_PATH], path[MAX_PATH];
        if (!GetTempPathA(sizeof dir, dir) || !GetTempFileNameA(dir, "lsc", 0, path))
            die(EXIT_UNSUPPORTED, "cannot create a file in %%TEMP%% (error %lu)",
                GetLastError());
        st.file = CreateFileA(path, GENERIC_READ, 0, NULL, TRUNCATE_EXISTING,
                              FILE_FLAG_DELETE_ON_CLOSE, NULL);
        if (st.file == INVALID_HANDLE_VALUE) {
            DeleteFileA(path);
            die(EXIT_UNSUPPORTED, "cannot open %s (error %lu)", path, GetLastError());
        }
    }
    static const char *const timed[] = {
        "NtTestAlert() (ntdll, looked up once)",
        "NtQueryInformationProcess(GetCurrentProcess(), ProcessBasicInformation, ...)",
        "ReadFile(h, buf, 0, ...) on an open file in %TEMP%, deleted on close"};
    r->op = op;
    r->st = st;
    r->opname = opname;
    r->timed = timed[op];
}

static void nullcall_close(struct nullcall_run *r) {
    if (r->st.file != INVALID_HANDLE_VALUE) CloseHandle(r->st.file);
    r->st.file = INVALID_HANDLE_VALUE;
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
    NULLCALL_BENCH_FIELDS,
};
