// replay_main.c: run each file of a directory (or each named file) through the fuzz target once,
// without libFuzzer: the CTest test fuzz_replay replays the seed corpus this way.
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// Feed one file to the target; 0 on success, 1 when it cannot be read.
static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    uint8_t *grown = realloc(buf, 2 * cap);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  int bad = ferror(f) || !buf;
  fclose(f);
  if (bad) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

// Replay every regular file of dir in name order; returns the number of errors.
static int replay_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open directory %s\n", dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int errors = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown) {
        errors++;
        break;
      }
      names = grown;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) {
      errors++;
      break;
    }
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, compare_names);
  for (size_t i = 0; i < n; i++) {
    struct stat sb;
    if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
      errors += replay_file(names[i]);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return errors;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
    return 2;
  }
  int errors = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
      errors += replay_dir(argv[i], &count);
    } else {
      errors += replay_file(argv[i]);
      count++;
    }
  }
  printf("replayed %d inputs, %d unreadable\n", count, errors);
  return errors || count == 0 ? 1 : 0;
}
