/* Unit tests of the clean-up list: order, cancel, run-now, and fork: a forked child that dies
 * runs the entries it registered itself, never its parent's. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

/* what each entry did, and in which process: shared with a forked child */
struct record {
    int n;
    char order[16];
    pid_t by[16];
};
static struct record *rec;

static void note(void *arg) {
    int k = __atomic_fetch_add(&rec->n, 1, __ATOMIC_SEQ_CST);
    if (k < 16) {
        rec->order[k] = *(const char *)arg;
        rec->by[k] = getpid();
    }
}

static void test_order_cancel_now(void) {
    memset(rec, 0, sizeof *rec);
    cleanup_push(note, "a");
    int hb = cleanup_push(note, "b");
    int hc = cleanup_push(note, "c");
    cleanup_push(note, "d");
    cleanup_cancel(hb);          /* released normally: never runs */
    cleanup_now(hc);             /* runs now, once */
    CHECK(rec->n == 1 && rec->order[0] == 'c');
    cleanup_now(hc);
    CHECK(rec->n == 1);
    cleanup_run();               /* the rest, last registered first */
    CHECK(rec->n == 3 && !memcmp(rec->order, "cda", 3));
    cleanup_run();               /* each entry once */
    CHECK(rec->n == 3);
}

/* A forked child inherits the list: its fatal error runs its own entries and exits with its
 * code, and leaves its parent's alone (they run in the parent, once). */
static void test_forked_child_dies_alone(void) {
    memset(rec, 0, sizeof *rec);
    cleanup_push(note, "P");
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2); /* its one error line */
        cleanup_push(note, "C");
        die(EXIT_UNSUPPORTED, "the child fails");
    }
    CHECK(child > 0);
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_UNSUPPORTED);
    CHECK(rec->n == 1 && rec->order[0] == 'C' && rec->by[0] == child);
    cleanup_run();
    CHECK(rec->n == 2 && rec->order[1] == 'P' && rec->by[1] == parent);
}

/* The same for a child that ends normally through cleanup_run (a worker process). */
static void test_forked_child_cleans_its_own(void) {
    memset(rec, 0, sizeof *rec);
    cleanup_push(note, "P");
    pid_t child = fork();
    if (child == 0) {
        cleanup_push(note, "W");
        cleanup_run();
        _exit(0);
    }
    int st = 0;
    CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(rec->n == 1 && rec->order[0] == 'W');
    cleanup_run();
    CHECK(rec->n == 2 && rec->order[1] == 'P');
}

int main(void) {
    rec = mmap(NULL, sizeof *rec, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rec == MAP_FAILED) return 2;
    test_order_cancel_now();
    test_forked_child_dies_alone();
    test_forked_child_cleans_its_own();
    return check_report();
}
