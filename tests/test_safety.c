// test_safety.c: output files are never lost (temporary file + rename, links followed, a
// disk-limited write), gzip output, same-file detection, the memory budget, handle checks.
#define _POSIX_C_SOURCE 200809L // mkdtemp, fork, setrlimit, symlink, lstat under -std=c11
#include "internal.h"
#include "testlib.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k = 0;
  char *p = buf[k++ & 3];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int ok = fputs(text, f) != EOF;
  return fclose(f) == 0 && ok ? 0 : -1;
}

// The whole file (at most cap - 1 bytes), NUL-terminated; -1 when it cannot be read.
static long read_all(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = '\0';
  return (long)n;
}

// Names in `dir` other than . and .., and how many: a failed write must leave no temporary file.
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

// Run `fn` in a child process (for a file size limit, or to drop root's privileges so that a
// read-only directory is read-only); the child's checks print their own failures. Returns true
// when the child passed. Children never enter an OpenMP region (libgomp does not survive fork):
// they only write vectors made by the parent.
static bool in_child(void (*fn)(void *), void *arg, bool unprivileged, rlim_t fsize) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (fsize) {
      signal(SIGXFSZ, SIG_IGN); // a write past the limit fails with EFBIG instead of killing
      struct rlimit rl = {fsize, fsize};
      if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
    }
    if (unprivileged && geteuid() == 0) {
      // root ignores permission bits: become nobody (65534) so they apply.
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(4);
    }
    fn(arg);
    fflush(NULL);
    _exit(msp_test_failures ? 1 : 0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

typedef struct {
  msp_vector v;
  const char *path;
} write_job;

// The write must fail with MSP_ERR_IO and a message naming the file.
static void expect_write_fails(void *arg) {
  write_job *j = arg;
  CHECK_STATUS(msp_vector_write_mtx(j->v, j->path), MSP_ERR_IO);
  CHECK(strstr(msp_last_error(), j->path) != NULL, "message names %s: %s", j->path,
        msp_last_error());
}

static const char *const OLD_TEXT = "%%MatrixMarket matrix array real general\n2 1\n7\n8\n";

static void test_safe_write(msp_context ctx) {
  msp_vector v = NULL;
  char buf[1 << 16];
  CHECK_OK(msp_vector_create(ctx, 3, &v));
  CHECK_OK(msp_vector_set(v, (const double[]){1.5, -2.0, 3.25}));

  // Success replaces the previous file and leaves nothing else in the directory.
  mkdir(tmp_path("ok"), 0755);
  const char *ok = tmp_path("ok/y.mtx");
  CHECK(write_text(ok, OLD_TEXT) == 0, "write %s", ok);
  CHECK_OK(msp_vector_write_mtx(v, ok));
  CHECK(read_all(ok, buf, sizeof buf) > 0 && strstr(buf, "\n3 1\n1.5\n-2\n3.25\n"),
        "new content: %s", buf);
  CHECK(count_entries(tmp_path("ok")) == 1, "only y.mtx in the directory (no temporary left)");

  // Item 1: a directory that cannot be written: the write fails, the old file stays as it was.
  mkdir(tmp_path("ro"), 0755);
  const char *ro = tmp_path("ro/y.mtx");
  CHECK(write_text(ro, OLD_TEXT) == 0, "write %s", ro);
  chmod(ro, 0644);
  chmod(tmp_path("ro"), 0555);
  write_job j = {v, ro};
  CHECK(in_child(expect_write_fails, &j, true, 0), "write into a read-only directory");
  CHECK(read_all(ro, buf, sizeof buf) > 0 && strcmp(buf, OLD_TEXT) == 0,
        "previous file intact after the failed write: %s", buf);
  CHECK(count_entries(tmp_path("ro")) == 1, "no temporary file left in ro/");

  // A symbolic link whose target lies in the read-only directory: the link survives.
  const char *link = tmp_path("link.mtx");
  CHECK(symlink("ro/y.mtx", link) == 0, "symlink");
  j.path = link;
  CHECK(in_child(expect_write_fails, &j, true, 0), "write through a link into ro/");
  struct stat sb;
  CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode), "the link is still a link");
  CHECK(read_all(link, buf, sizeof buf) > 0 && strcmp(buf, OLD_TEXT) == 0, "its target intact: %s",
        buf);
  chmod(tmp_path("ro"), 0755);

  // A link whose target can be written: the target is replaced, the link stays a link.
  const char *link2 = tmp_path("link2.mtx");
  CHECK(symlink("ok/y.mtx", link2) == 0, "symlink");
  CHECK(write_text(ok, OLD_TEXT) == 0, "rewrite %s", ok);
  CHECK_OK(msp_vector_write_mtx(v, link2));
  CHECK(lstat(link2, &sb) == 0 && S_ISLNK(sb.st_mode), "the link is still a link after a write");
  CHECK(read_all(ok, buf, sizeof buf) > 0 && strstr(buf, "\n3.25\n"), "target rewritten: %s", buf);

  // A disk-limited write (RLIMIT_FSIZE of 1 KiB, the `ulimit -f 1` of the report): the
  // previous file is not truncated.
  msp_vector big = NULL;
  CHECK_OK(msp_vector_create(ctx, 2000, &big));
  CHECK_OK(msp_vector_fill(big, 1.0 / 3.0));
  CHECK(write_text(ok, OLD_TEXT) == 0, "rewrite %s", ok);
  write_job jb = {big, ok};
  CHECK(in_child(expect_write_fails, &jb, false, 1024), "write past a 1 KiB file size limit");
  CHECK(read_all(ok, buf, sizeof buf) > 0 && strcmp(buf, OLD_TEXT) == 0,
        "previous file intact after the disk-limited write: %s", buf);
  CHECK(count_entries(tmp_path("ok")) == 1, "no temporary file left after EFBIG");

  // A device cannot be replaced by a rename: it is written in place (and stays a device).
  CHECK_OK(msp_vector_write_mtx(v, "/dev/null"));
  CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode), "/dev/null is still a device");

  // Item 3: a .gz name is written gzip, and reads back equal.
  const char *gz = tmp_path("y.mtx.gz");
  CHECK_OK(msp_vector_write_mtx(big, gz));
  long n = read_all(gz, buf, sizeof buf);
  CHECK(n > 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b,
        "gzip magic bytes at the start of %s", gz);
  CHECK(n < 2000 * 18, "compressed (%ld bytes)", n);
  msp_vector back = NULL;
  CHECK_OK(msp_vector_read_mtx(ctx, gz, 0, &back));
  double a[2000], b[2000];
  CHECK_OK(msp_vector_get(big, a));
  CHECK_OK(msp_vector_get(back, b));
  CHECK(msp_vector_length(back) == 2000 && memcmp(a, b, sizeof a) == 0, "gzip round trip exact");
  CHECK_OK(msp_vector_destroy(&back));
  CHECK_OK(msp_vector_destroy(&big));
  CHECK_OK(msp_vector_destroy(&v));
}

// Item 2: the helper the program uses to refuse an output that is one of its inputs.
static void test_same_file(void) {
  const char *a = tmp_path("same_a.mtx"), *b = tmp_path("same_b.mtx");
  const char *la = tmp_path("same_link.mtx"), *ha = tmp_path("same_hard.mtx");
  CHECK(write_text(a, OLD_TEXT) == 0 && write_text(b, OLD_TEXT) == 0, "write inputs");
  CHECK(symlink("same_a.mtx", la) == 0 && link(a, ha) == 0, "links");
  int same = -1;
  CHECK_OK(msp__same_file(a, a, &same));
  CHECK(same == 1, "a file is itself");
  CHECK_OK(msp__same_file(a, la, &same));
  CHECK(same == 1, "a symbolic link to a is a");
  CHECK_OK(msp__same_file(ha, a, &same));
  CHECK(same == 1, "a hard link to a is a");
  CHECK_OK(msp__same_file(a, b, &same));
  CHECK(same == 0, "equal contents are not the same file");
  CHECK_OK(msp__same_file(a, tmp_path("not-there.mtx"), &same));
  CHECK(same == 0, "a file that does not exist is not the same");
  CHECK_STATUS(msp__same_file(a, NULL, &same), MSP_ERR_INVALID_ARGUMENT);
}

// Item 8: impossible sizes fail at once, before allocating, naming bytes needed and available.
static void test_memory_budget(msp_context ctx) {
  msp_matrix A = NULL;
  // The report's 94-byte file: 2e9 x 2e9 declared, 3 entries.
  const char *huge = tmp_path("huge.mtx");
  CHECK(write_text(huge, "%%MatrixMarket matrix coordinate real general\n"
                         "2000000000 2000000000 3\n1 1 1.0\n2 2 2.0\n3 3 3.0\n") == 0,
        "write %s", huge);
  CHECK_OK(msp_set_memory_limit((size_t)1 << 30));
  CHECK_STATUS(msp_matrix_read_mtx(ctx, huge, 0, &A), MSP_ERR_OUT_OF_MEMORY);
  CHECK(A == NULL, "no matrix");
  const char *m = msp_last_error();
  CHECK(strstr(m, huge) && strstr(m, "needs") && strstr(m, "1073741824 bytes") &&
            strstr(m, "msp_set_memory_limit"),
        "message names the file, the bytes needed and the limit: %s", m);
  // Within the limit, the same limit lets an ordinary file through.
  const char *small = tmp_path("small.mtx");
  CHECK(write_text(small, "%%MatrixMarket matrix coordinate real general\n3 3 1\n2 2 5\n") == 0,
        "write %s", small);
  CHECK_OK(msp_matrix_read_mtx(ctx, small, 0, &A));
  CHECK_OK(msp_matrix_destroy(&A));
  msp_vector v = NULL;
  CHECK_STATUS(msp_vector_create(ctx, (int64_t)1 << 30, &v), MSP_ERR_OUT_OF_MEMORY);
  CHECK(strstr(msp_last_error(), "vector") && strstr(msp_last_error(), "needs"),
        "vector message: %s", msp_last_error());
  CHECK_OK(msp_set_memory_limit(0));

  // Against the physical memory (no limit set): 2e12 nonzeros need terabytes on any machine.
  CHECK_STATUS(msp_matrix_generate(ctx, "random:2000000000:1000", &A), MSP_ERR_OUT_OF_MEMORY);
  m = msp_last_error();
  CHECK(strstr(m, "needs") && strstr(m, "available") && strstr(m, "physical memory"),
        "generate message: %s", m);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double phys = (double)pages * (double)page;
  if (pages > 0 && page > 0 && phys < 3.2e10) {
    CHECK_STATUS(msp_matrix_read_mtx(ctx, huge, 0, &A), MSP_ERR_OUT_OF_MEMORY);
    CHECK(strstr(msp_last_error(), "physical memory"), "message: %s", msp_last_error());
  } else {
    printf("test_safety: the 2e9 x 2e9 file against physical memory skipped: %.3g bytes of "
           "memory hold its 32 GB (checked against a 1 GiB limit above)\n",
           phys);
  }
}

// Item 9: magic numbers, destroy statuses, the live-object count, contexts not mixed.
static void test_handles(void) {
  msp_context c = NULL, d = NULL;
  msp_matrix A = NULL;
  msp_vector x = NULL, y = NULL, z = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &c));
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &d));
  CHECK_OK(msp_matrix_generate(c, "laplace2d:4", &A));
  CHECK_OK(msp_vector_create(c, 16, &x));
  CHECK_OK(msp_vector_create(c, 16, &y));
  CHECK_OK(msp_vector_create(d, 16, &z));
  CHECK_OK(msp_vector_fill(x, 1.0));

  // Destroying a context with live objects frees nothing and says how many.
  msp_context keep = c;
  CHECK_STATUS(msp_context_destroy(&c), MSP_ERR_INVALID_ARGUMENT);
  CHECK(c == keep, "the handle is left as it was");
  CHECK(strstr(msp_last_error(), "3 matrices and vectors"), "message counts 3 objects: %s",
        msp_last_error());
  CHECK_OK(msp_spmv(c, 1.0, A, x, 0.0, y)); // everything still works

  // An object made with another context is refused, even on the same backend.
  CHECK_STATUS(msp_spmv(d, 1.0, A, x, 0.0, z), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "another context"), "message: %s", msp_last_error());
  CHECK_STATUS(msp_axpby(c, 1.0, x, 1.0, z), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "vector y belongs to another context"), "message: %s",
        msp_last_error());

  // Not a handle at all.
  double junk[64];
  memset(junk, 0, sizeof junk);
  CHECK_STATUS(msp_vector_fill((msp_vector)(void *)junk, 1.0), MSP_ERR_INVALID_ARGUMENT);
  CHECK(strstr(msp_last_error(), "not a mixsparse vector"), "message: %s", msp_last_error());
  CHECK_STATUS(msp_matrix_get_csr((msp_matrix)(void *)junk, NULL, NULL, NULL),
               MSP_ERR_INVALID_ARGUMENT);
  CHECK(msp_matrix_rows((msp_matrix)(void *)junk) == 0, "accessor of a non-matrix gives 0");

  if (MSP_TEST_ASAN) {
    printf("test_safety: destroyed-handle cases skipped under AddressSanitizer (they read freed "
           "memory on purpose)\n");
  } else {
    // A copy of a handle destroyed twice: the second is an error, not a double free.
    msp_vector copy = y;
    CHECK_OK(msp_vector_destroy(&y));
    CHECK(y == NULL, "destroy sets the handle to NULL");
    CHECK_STATUS(msp_vector_destroy(&copy), MSP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msp_last_error(), "handle already destroyed"), "message: %s", msp_last_error());
    CHECK_STATUS(msp_nrm2(c, copy, junk), MSP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msp_last_error(), "handle already destroyed"), "message: %s", msp_last_error());
    msp_matrix mcopy = A;
    CHECK_OK(msp_matrix_destroy(&A));
    CHECK_STATUS(msp_matrix_destroy(&mcopy), MSP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msp_last_error(), "handle already destroyed"), "message: %s", msp_last_error());
  }
  CHECK_OK(msp_matrix_destroy(&A));
  CHECK_OK(msp_vector_destroy(&y));
  CHECK_OK(msp_vector_destroy(&x));
  CHECK_OK(msp_context_destroy(&c)); // now empty
  CHECK(c == NULL, "destroyed");
  CHECK_OK(msp_vector_destroy(&z));
  msp_context dcopy = d;
  CHECK_OK(msp_context_destroy(&d));
  if (!MSP_TEST_ASAN) {
    msp_vector w = NULL;
    CHECK_STATUS(msp_vector_create(dcopy, 4, &w), MSP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msp_last_error(), "handle already destroyed") && w == NULL, "message: %s",
          msp_last_error());
    CHECK_STATUS(msp_context_destroy(&dcopy), MSP_ERR_INVALID_ARGUMENT);
  }
}

// Item 16: the specification allows pattern only with general and symmetric.
static void test_pattern_skew(msp_context ctx) {
  msp_matrix A = NULL;
  const char *p = tmp_path("pskew.mtx");
  CHECK(write_text(p, "%%MatrixMarket matrix coordinate pattern skew-symmetric\n3 3 1\n2 1\n") == 0,
        "write %s", p);
  CHECK_STATUS(msp_matrix_read_mtx(ctx, p, 0, &A), MSP_ERR_MM_UNSUPPORTED);
  CHECK(strstr(msp_last_error(), p) && strstr(msp_last_error(), "line 1") &&
            strstr(msp_last_error(), "pattern skew-symmetric"),
        "message names file, line and the combination: %s", msp_last_error());
}

int main(void) {
  // a fresh directory under $TMPDIR (or /tmp): mkdtemp replaces the template's XXXXXX
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/msp_test_safety_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "mkdtemp(%s) failed: %s\n", tmpdir, strerror(errno));
    return 1;
  }
  chmod(tmpdir, 0755); // the unprivileged child must reach the directories inside
  msp_context ctx = NULL;
  CHECK_OK(msp_context_create(MSP_BACKEND_CPU, 0, &ctx));
  if (ctx) {
    test_safe_write(ctx);
    test_memory_budget(ctx);
    test_pattern_skew(ctx);
  }
  test_same_file();
  test_handles();
  CHECK_OK(msp_context_destroy(&ctx));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", tmpdir, tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return msp_test_finish("test_safety");
}
