// safe_write.c: replacing a file without ever losing it, for every file the library and the
// program write (msp__safe_open / write / commit / abort), and the comparison of paths.
//
// The output goes to a temporary file created next to the target (O_EXCL, never through a link
// planted at its name), is flushed to the disk (fsync), and only then renamed over the target;
// a symbolic link is followed, so the file it points to is replaced and the link itself stays.
// A failure at any step removes the temporary file and leaves the target as it was. The
// temporary name is ".NAME.tmp-HOST-PID-N" (NAME cut to fit the file system's name limit): a
// process killed while writing leaves it behind, and the next write into that directory on the
// same host removes those whose process no longer runs.
#define _DEFAULT_SOURCE // lstat, readlink, fsync, fchmod, gethostname, dirent, kill, *at()
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The longest part of the target's name kept in the temporary name: with the suffix (host up to
// 64, two numbers) it stays under NAME_MAX (255), so a target whose own name is legal gets one.
#define TMP_BASE_MAX 120

struct msp__safe_file_s {
  char *name;   // the path as the caller gave it (for messages)
  char *target; // the file to replace, symbolic links followed; NULL: written in place
  int dir;      // its directory, open: the names below are relative to it, so a target path
                // at the system's length limit still gets a temporary file (-1: none)
  char *base;   // the target's name in dir
  char *tmp;    // the temporary file's name in dir; NULL once renamed
  FILE *f;
};

msp_status msp__same_file(const char *a, const char *b, int *same) {
  struct stat sa, sb;
  MSP_CHECK_ARG(a && b && same, "msp__same_file: NULL argument");
  *same = 0;
  const char *paths[2] = {a, b};
  struct stat *sts[2] = {&sa, &sb};
  for (int k = 0; k < 2; k++) {
    if (stat(paths[k], sts[k]) == 0) continue;
    if (errno == ENOENT || errno == ENOTDIR) return MSP_SUCCESS; // a file that does not exist
    return msp__error(MSP_ERR_IO, "%s: cannot examine: %s", paths[k], strerror(errno));
  }
  *same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return MSP_SUCCESS;
}

// A copy of `n` bytes of s followed by `tail` (NUL-terminated), allocated through the library.
static msp_status path_join(char **out, const char *s, size_t n, const char *tail) {
  size_t t = strlen(tail);
  msp_status st = msp__alloc((void **)out, n + t + 1, 1, "file name");
  if (st != MSP_SUCCESS) return st;
  memcpy(*out, s, n);
  memcpy(*out + n, tail, t + 1);
  return MSP_SUCCESS;
}

// The file that writing `path` must replace: symbolic links followed (a relative link from the
// link's directory), so the link stays a link. The final name need not exist.
static msp_status resolve_target(const char *path, char **out) {
  msp_status st = MSP_SUCCESS;
  char *cur = NULL, *link = NULL, *next = NULL;
  *out = NULL;
  MSP_TRY(path_join(&cur, path, strlen(path), ""));
  for (int hops = 0;; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
    if (hops == 40) {
      st = msp__error(MSP_ERR_IO, "cannot write %s: more than 40 symbolic links to follow", path);
      goto exit;
    }
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096;
    MSP_TRY(msp__alloc((void **)&link, cap, 1, "symbolic link target"));
    ssize_t n = readlink(cur, link, cap);
    if (n < 0 || (size_t)n >= cap) {
      st = msp__error(MSP_ERR_IO, "cannot write %s: cannot read the symbolic link %s: %s", path,
                      cur, n < 0 ? strerror(errno) : "its target changed while being read");
      goto exit;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash)
      MSP_TRY(path_join(&next, link, (size_t)n, ""));
    else
      MSP_TRY(path_join(&next, cur, (size_t)(slash - cur) + 1, link));
    MSP_FREE(link);
    msp__free(cur);
    cur = next;
    next = NULL;
  }
  *out = cur;
  cur = NULL;
exit:
  msp__free(cur);
  msp__free(link);
  msp__free(next);
  return st;
}

// The directory part of a path ("." for a bare name), with a trailing '/' when not ".".
static msp_status dir_of(const char *path, char **out) {
  const char *slash = strrchr(path, '/');
  if (!slash) return path_join(out, ".", 1, "");
  return path_join(out, path, (size_t)(slash - path) + 1, "");
}

msp_status msp__same_target(const char *a, const char *b, int *same) {
  msp_status st = MSP_SUCCESS;
  char *ta = NULL, *tb = NULL, *da = NULL, *db = NULL;
  MSP_CHECK_ARG(a && b && same, "msp__same_target: NULL argument");
  *same = 0;
  MSP_TRY(msp__same_file(a, b, same));
  if (*same) goto exit;
  // Files that do not exist yet: the same name in the same directory (links followed).
  MSP_TRY(resolve_target(a, &ta));
  MSP_TRY(resolve_target(b, &tb));
  const char *sa = strrchr(ta, '/'), *sb = strrchr(tb, '/');
  const char *na = sa ? sa + 1 : ta, *nb = sb ? sb + 1 : tb;
  if (strcmp(na, nb) != 0) goto exit;
  MSP_TRY(dir_of(ta, &da));
  MSP_TRY(dir_of(tb, &db));
  MSP_TRY(msp__same_file(da, db, same));
exit:
  msp__free(ta);
  msp__free(tb);
  msp__free(da);
  msp__free(db);
  return st;
}

// This host's name as the temporary names carry it (letters, digits, '-' and '.'; at most 64).
static void host_tag(char *out, size_t n) {
  char h[256];
  if (gethostname(h, sizeof h) != 0) snprintf(h, sizeof h, "host");
  h[sizeof h - 1] = '\0';
  size_t k = 0;
  for (const char *p = h; *p && k + 1 < n && k < 64; p++)
    out[k++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                              (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'
                          ? *p
                          : '_');
  out[k] = '\0';
}

// Remove the temporary files that writers on this host left in directory `dir` (an open
// descriptor) when they were killed: ".NAME.tmp-HOST-PID-N" whose process PID no longer runs,
// regular files of this user only. Best effort: a directory that cannot be read is left alone.
static void remove_stale(int dir, const char *host) {
  const int fd = dup(dir);
  if (fd < 0) return;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  char tag[96];
  const int tl = snprintf(tag, sizeof tag, ".tmp-%s-", host);
  const uid_t me = geteuid();
  const long self = (long)getpid();
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const char *n = e->d_name;
    if (n[0] != '.') continue;
    const char *t = strstr(n, tag);
    if (!t || t == n) continue;
    // the last occurrence: NAME may contain the tag itself
    for (const char *u; (u = strstr(t + 1, tag)) != NULL;)
      t = u;
    char *end = NULL;
    errno = 0;
    const long pid = strtol(t + tl, &end, 10);
    if (errno || pid <= 0 || !end || *end != '-') continue;
    char *end2 = NULL;
    (void)strtoul(end + 1, &end2, 10);
    if (!end2 || end2 == end + 1 || *end2 != '\0') continue;
    if (pid == self || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; // alive (or unknown)
    struct stat sb;
    if (fstatat(dir, n, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == me)
      (void)unlinkat(dir, n, 0);
  }
  closedir(d);
}

static msp_status io_fail(const msp__safe_file *s, const char *step, int err) {
  return msp__error(MSP_ERR_IO, "cannot write %s: %s%s%s (the previous file, if any, is unchanged)",
                    s->name, step, step[0] ? ": " : "", strerror(err));
}

void msp__safe_abort(msp__safe_file **sp) {
  if (!sp || !*sp) return;
  msp__safe_file *s = *sp;
  if (s->f) fclose(s->f);
  if (s->tmp) unlinkat(s->dir, s->tmp, 0); // only the temporary file: never the target
  if (s->dir >= 0) close(s->dir);
  msp__free(s->tmp);
  msp__free(s->base);
  msp__free(s->target);
  msp__free(s->name);
  msp__free(s);
  *sp = NULL;
}

msp_status msp__safe_open(const char *path, msp__safe_file **out) {
  msp_status st = MSP_SUCCESS;
  msp__safe_file *s = NULL;
  char *dir = NULL;
  int fd = -1;
  MSP_CHECK_ARG(out, "msp__safe_open: out is NULL");
  *out = NULL;
  MSP_CHECK_ARG(path && path[0], "msp__safe_open: path is NULL or empty");
  MSP_TRY(MSP_ALLOC_ZERO(s, 1, "file writer"));
  s->dir = -1;
  MSP_TRY(path_join(&s->name, path, strlen(path), ""));
  {
    // A device or a pipe (/dev/stdout, a FIFO) cannot be replaced by a rename: it is written in
    // place, as there is no previous content to keep.
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      st = msp__error(MSP_ERR_IO, "cannot write %s: it is a directory", path);
      goto exit;
    }
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
      s->f = fopen(path, "wb");
      if (!s->f) {
        st = io_fail(s, "", errno);
        goto exit;
      }
      *out = s;
      return MSP_SUCCESS;
    }
  }
  MSP_TRY(resolve_target(path, &s->target));
  MSP_TRY(dir_of(s->target, &dir));
  {
    const char *slash = strrchr(s->target, '/');
    const char *base = slash ? slash + 1 : s->target;
    MSP_TRY(path_join(&s->base, base, strlen(base), ""));
  }
  s->dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dir < 0) {
    st = io_fail(s, "cannot open its directory", errno);
    goto exit;
  }
  char host[80];
  host_tag(host, sizeof host);
  remove_stale(s->dir, host);
  // The temporary file: next to the target (so rename replaces it atomically, on the same file
  // system), hidden, with a name no other writer picks (host, process id and a counter),
  // created exclusively: a link planted at that name is never followed.
  {
    static _Atomic unsigned counter = 0;
    for (int attempt = 0; fd < 0; attempt++) {
      char tail[TMP_BASE_MAX + 160];
      snprintf(tail, sizeof tail, ".%.*s.tmp-%s-%ld-%u", TMP_BASE_MAX, s->base, host,
               (long)getpid(), atomic_fetch_add(&counter, 1u));
      MSP_FREE(s->tmp);
      MSP_TRY(path_join(&s->tmp, tail, strlen(tail), ""));
      fd = openat(s->dir, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
      if (fd < 0 && (errno != EEXIST || attempt == 100)) {
        const int err = errno;
        MSP_FREE(s->tmp); // never created: nothing to remove
        st = io_fail(s, "cannot create a temporary file in its directory", err);
        goto exit;
      }
    }
  }
  {
    // Replacing a file keeps its permission bits; a new one gets 0666 less the umask (open).
    struct stat sb;
    if (fstatat(s->dir, s->base, &sb, 0) == 0) (void)fchmod(fd, sb.st_mode & 07777);
  }
  s->f = fdopen(fd, "wb");
  if (!s->f) {
    st = io_fail(s, "", errno);
    goto exit;
  }
  fd = -1; // owned by s->f now
  *out = s;
  s = NULL;
exit:
  if (fd >= 0) close(fd);
  msp__free(dir);
  msp__safe_abort(&s);
  return st;
}

msp_status msp__safe_write(msp__safe_file *s, const void *data, size_t n) {
  errno = 0;
  if (n && fwrite(data, 1, n, s->f) != n) return io_fail(s, "", errno ? errno : EIO);
  return MSP_SUCCESS;
}

msp_status msp__safe_commit(msp__safe_file **sp) {
  msp_status st = MSP_SUCCESS;
  msp__safe_file *s = *sp;
  errno = 0;
  if (fflush(s->f) != 0 || (s->target && fsync(fileno(s->f)) != 0)) {
    st = io_fail(s, "", errno ? errno : EIO);
    goto exit;
  }
  {
    FILE *f = s->f;
    s->f = NULL;
    if (fclose(f) != 0) {
      st = io_fail(s, "", errno);
      goto exit;
    }
  }
  if (s->target) {
    if (renameat(s->dir, s->tmp, s->dir, s->base) != 0) {
      st = io_fail(s, "cannot rename the temporary file over it", errno);
      goto exit;
    }
    MSP_FREE(s->tmp); // renamed: nothing to remove
    // the directory entry of the rename made durable (best effort: some file systems refuse)
    (void)fsync(s->dir);
  }
exit:
  msp__safe_abort(sp);
  return st;
}
