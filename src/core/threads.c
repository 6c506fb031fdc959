// threads.c: the host threads of an operation: a context's count (msp_context_set_threads), or
// by default as many as the machine has free, applied around each operation.
#define _POSIX_C_SOURCE 200809L // clock_gettime
#include "internal.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

msp_status msp_context_set_threads(msp_context ctx, int threads) {
  MSP_CHECK_HANDLE(msp__check_context(ctx, "msp_context_set_threads", "ctx"));
  MSP_CHECK_ARG(threads >= 0,
                "msp_context_set_threads: thread count %d is negative (0 restores the default)",
                threads);
  ctx->threads = threads;
  return MSP_SUCCESS;
}

int msp__threads_free(int max, int online, int running, int own) {
  // Everything runnable but the caller and the team's own spinning workers is competition.
  int others = running - 1 - (own > 1 ? own - 1 : 0);
  if (others < 0) others = 0;
  int n = online - others;
  if (n > max) n = max;
  return n < 1 ? 1 : n;
}

// The machine's runnable tasks (the fourth field of /proc/loadavg, "running/total"), read at most
// every 10 ms: an operation takes the threads that other programs leave free, because a team
// larger than the free cores waits at every barrier for a member that is not running (a time
// slice of another program), which costs far more than the member's share of the work.
#define RUNNING_PERIOD_NS 10000000LL
static _Atomic long long running_read_ns = -RUNNING_PERIOD_NS;
static atomic_int running_tasks = 1;
static atomic_int last_team = 1; // the last team size: its workers may still spin (see below)

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int running_now(void) {
  const long long t = now_ns();
  if (t - atomic_load(&running_read_ns) < RUNNING_PERIOD_NS) return atomic_load(&running_tasks);
  atomic_store(&running_read_ns, t);
  int running = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf %d/", &a, &b, &c, &running) != 4) running = -1;
    fclose(f);
  }
  if (running < 1) running = 1; // no such file (not Linux): nothing is known to compete
  atomic_store(&running_tasks, running);
  return running;
}

// Workers of a team that just finished may still be running for a moment (a spinning OpenMP
// runtime waits before it sleeps), so they are not counted as competition for that long; the
// window is the order of an OpenMP runtime's default spin before sleeping. With the passive
// policy they sleep at once: counting them for the window then only lets the next call take
// its previous team again.
#define SPIN_WINDOW_NS 1000000LL
static _Atomic long long team_left_ns = -SPIN_WINDOW_NS;

static int spinning_workers(void) {
  if (now_ns() - atomic_load(&team_left_ns) >= SPIN_WINDOW_NS) return 1;
  return atomic_load(&last_team);
}

// A count the program chose (omp_set_num_threads, or OMP_NUM_THREADS as the runtime read it, to
// other than one thread per CPU) is kept; OpenMP's own default gives way to competing programs.
// An exact count for every call is msp_context_set_threads's.
static int default_threads(void) {
  const int max = omp_get_max_threads();
  if (max <= 1 || max != omp_get_num_procs()) return max;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1) online = max;
  return msp__threads_free(max, (int)online, running_now(), spinning_workers());
}

int msp_context_threads(const msp_context ctx) {
  if (msp__check_context(ctx, "msp_context_threads", "ctx") != MSP_SUCCESS) return 0;
  return ctx->threads > 0 ? ctx->threads : default_threads();
}

// OpenMP's thread count is a setting of the calling thread: it is set for the operation and put
// back afterwards, so the caller's own parallel regions keep theirs.
int msp__threads_enter(const msp_context ctx) {
  return msp__threads_enter_work(ctx, 0);
}

int msp__threads_enter_work(const msp_context ctx, int64_t work) {
  if (!ctx || ctx->magic != MSP__MAGIC_CONTEXT || omp_in_parallel()) return 0;
  // A default team no larger than the work can use: waking a worker costs more than the share
  // of a small product it would take over. Work for one thread skips the look at the machine's
  // load, whose clock reads cost a small product as much as its arithmetic.
  const int64_t useful = work > 0 ? (work + MSP__THREAD_GRAIN - 1) / MSP__THREAD_GRAIN : 0;
  int n = ctx->threads > 0 ? ctx->threads : useful == 1 ? 1 : default_threads();
  if (ctx->threads <= 0 && useful > 0 && useful < n) n = (int)useful;
  atomic_store(&last_team, n);
  const int prev = omp_get_max_threads();
  if (prev == n) return 0;
  omp_set_num_threads(n);
  return prev;
}

void msp__threads_leave(int prev) {
  // A team of one leaves no worker spinning: no clock read.
  if (atomic_load(&last_team) > 1) atomic_store(&team_left_ns, now_ns());
  if (prev > 0) omp_set_num_threads(prev);
}
