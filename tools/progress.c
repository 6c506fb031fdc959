// progress.c: a one-line indication on stderr that long work is under way, from a helper thread
// that wakes twice a second; the work itself is a library call that reports nothing while it runs.
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int enabled;
static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int running, stop, shown;
static char what[160];
static struct timespec started;

void progress_enable(int on) {
  enabled = on;
}

static double since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void *run(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 500000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    int rc = 0;
    while (!stop && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&wake, &lock, &until);
    const double s = since(&started);
    if (!stop && s >= 1.0) {
      // \r and "erase to the end of the line": the same line is rewritten each time.
      fprintf(stderr, "\r\033[K%s ... %.0f s", what, s);
      fflush(stderr);
      shown = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

void progress_start(const char *w) {
  if (!enabled || running) return;
  snprintf(what, sizeof what, "%s", w);
  clock_gettime(CLOCK_MONOTONIC, &started);
  stop = 0;
  shown = 0;
  running = pthread_create(&thread, NULL, run, NULL) == 0;
}

void progress_stop(void) {
  if (!running) return;
  pthread_mutex_lock(&lock);
  stop = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  running = 0;
  if (shown) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
}
