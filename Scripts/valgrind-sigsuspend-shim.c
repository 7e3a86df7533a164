// valgrind 3.19 writes into the signal mask passed to rt_sigsuspend; libdispatch's main-queue loop passes a
// `static const` one (a read-only page), which kills valgrind with an internal SIGSEGV. Preloaded under valgrind
// (Scripts/count-eval-instructions.sh, Examples/TagService/bench/bench-service.sh), this hands the kernel a
// writable copy.
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return syscall(SYS_rt_sigsuspend, &copy, 8); }
