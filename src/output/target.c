/* target.c - the output file as a file-system object, on rank 0 and before HDF5 touches it:
 * what may be written (a regular file that is not one of the inputs, in a writable
 * directory, not in use by another kval job), the exclusive PATH.part-XXXXXXXX a run lays
 * the file out in (O_EXCL, a unique name per job, space reserved up front so that a full
 * disk is refused before any collective HDF5 call), the lock a run holds for its lifetime
 * (an open-file-description fcntl lock on one byte far past the data, so it is not dropped
 * when HDF5 closes its own descriptors, does not collide with MPI-IO's byte-range locks,
 * and works where the file system supports POSIX locks: local disks, NFS, Lustre with
 * -o flock, GPFS; elsewhere a warning), and publishing PATH.part as PATH without replacing
 * a file that appeared meanwhile or one that another job is writing. */
#define _GNU_SOURCE
#include "output/target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "output/internal.h"

#define LOCK_BYTE ((off_t)1 << 62) /* the one byte every kval run locks in its output */
#define PART_SUFFIX ".part-"
#define PART_HEX 8

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

/* fcntl on LOCK_BYTE: cmd F_OFD_SETLK or F_OFD_GETLK, type F_WRLCK/F_RDLCK. 0 on success
 * (for GETLK: *held says whether another holder conflicts), else errno. */
static int lock_byte(int fd, int cmd, short type, int *held) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = LOCK_BYTE;
  fl.l_len = 1;
  if (fcntl(fd, cmd, &fl) != 0) return errno;
  if (held) *held = fl.l_type != F_UNLCK;
  return 0;
}

static int lock_unsupported(int e) { return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == ENOLCK; }

static void warn_no_lock(const char *path, int e) {
  kv_output_user_error("warning: cannot lock '%s' (%s): this file system does not support POSIX locks, so "
                       "nothing stops another job from writing the same file at the same time", path, strerror(e));
}

/* Take this run's write lock on fd: KV_OK (also when locks are unsupported, with a
 * warning), KV_REFUSED when another job holds it. */
static kv_status take_lock(int fd, const char *path) {
  int e = lock_byte(fd, F_OFD_SETLK, F_WRLCK, NULL);
  if (e == 0) return KV_OK;
  if (e == EAGAIN || e == EACCES) {
    kv_output_user_error("'%s' is in use by another kval job (it holds the file's lock); wait until that job "
                         "ends or choose another file", path);
    return KV_REFUSED;
  }
  if (lock_unsupported(e)) {
    warn_no_lock(path, e);
    return KV_OK;
  }
  kv_output_user_error("cannot lock '%s': %s", path, strerror(e));
  return KV_ERR;
}

/* Is an existing file in use by a running kval job? KV_REFUSED (reported) when it is. */
static kv_status check_not_in_use(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return KV_OK; /* unreadable: the caller's own open reports it */
  int held = 0, e = lock_byte(fd, F_OFD_GETLK, F_WRLCK, &held);
  close(fd);
  if (e == 0 && held) {
    kv_output_user_error("'%s' is in use by another kval job (it holds the file's lock); wait until that job "
                         "ends or choose another file", path);
    return KV_REFUSED;
  }
  return KV_OK;
}

/* The directory of path, for messages and space checks. */
static void dir_of(const char *path, char *dir, size_t n) {
  const char *slash = strrchr(path, '/');
  snprintf(dir, n, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
}

kv_status kv_target_check(const char *path, int force, int resume, const char *deck_path) {
  struct stat sb, deck;
  if (lstat(path, &sb) != 0) {
    if (errno != ENOENT) {
      kv_output_user_error("cannot use output file '%s': %s", path, strerror(errno));
      return KV_ERR;
    }
    if (resume) {
      kv_output_user_error("--resume %s: %s", path, strerror(errno));
      return KV_REFUSED;
    }
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0) {
      kv_output_user_error("cannot create output file '%s': directory '%s': %s (expected a writable directory)", path,
                           dir, strerror(errno));
      return KV_ERR;
    }
    return KV_OK;
  }
  const char *opt = resume ? "--resume" : "-o";
  if (S_ISDIR(sb.st_mode)) {
    kv_output_user_error("output file '%s' is a directory; give a file name with %s", path, opt);
    return KV_REFUSED;
  }
  if (!S_ISREG(sb.st_mode)) {
    kv_output_user_error("output file '%s' is %s, not a regular file: kval writes only regular files (give another "
                         "file name with %s)", path, kind_of(sb.st_mode), opt);
    return KV_REFUSED;
  }
  if (deck_path && stat(deck_path, &deck) == 0 && deck.st_dev == sb.st_dev && deck.st_ino == sb.st_ino) {
    kv_output_user_error("output file '%s' is the deck '%s': kval never writes over its input (give another file "
                         "name with %s)", path, deck_path, opt);
    return KV_REFUSED;
  }
  if (!resume && !force) {
    kv_output_user_error("output file '%s' exists; use --force to overwrite or --resume %s to continue it", path,
                         path);
    return KV_REFUSED;
  }
  return check_not_in_use(path);
}

/* Remove PATH.part-XXXXXXXX files that no live job holds (left by killed jobs). */
static void remove_stale_parts(const char *path) {
  char dir[4096], prefix[4096];
  dir_of(path, dir, sizeof dir);
  const char *base = strrchr(path, '/');
  snprintf(prefix, sizeof prefix, "%s" PART_SUFFIX, base ? base + 1 : path);
  size_t np = strlen(prefix);
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (strncmp(de->d_name, prefix, np) != 0 || strlen(de->d_name) != np + PART_HEX ||
        strspn(de->d_name + np, "0123456789abcdef") != PART_HEX)
      continue;
    char stale[8192];
    snprintf(stale, sizeof stale, "%s/%s", dir, de->d_name);
    int fd = open(stale, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && lock_byte(fd, F_OFD_SETLK, F_WRLCK, NULL) == 0) unlink(stale);
    close(fd);
  }
  closedir(d);
}

/* Reserve need bytes for fd's file without changing its size: ENOSPC now rather than in the
 * middle of a collective HDF5 call. Where the file system cannot reserve, compare with its
 * free space. 0 or errno (ENOSPC with *avail set). */
static int reserve(int fd, double need, double *avail) {
  struct statvfs vs;
  *avail = fstatvfs(fd, &vs) == 0 ? (double)vs.f_bavail * (double)vs.f_frsize : -1;
  if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)need) == 0) return 0;
  int e = errno;
  if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL) return e;
  return *avail >= 0 && *avail < need ? ENOSPC : 0;
}

static kv_status report_space(const kv_target *t, int e, double avail) {
  char dir[4096];
  dir_of(t->path, dir, sizeof dir);
  if (e == ENOSPC || e == EDQUOT)
    kv_output_user_error("cannot create output file '%s': %s: it needs about %.1f MiB and the file system of '%s' "
                         "has %.1f MiB free", t->path, strerror(e), t->need / 1048576.0, dir,
                         avail < 0 ? 0.0 : avail / 1048576.0);
  else
    kv_output_user_error("cannot create output file '%s': reserving %.1f MiB in '%s': %s", t->path,
                         t->need / 1048576.0, t->part, strerror(e));
  return KV_ERR;
}

kv_status kv_target_make_part(kv_target *t, const char *path, double need) {
  memset(t, 0, sizeof *t);
  t->fd = -1;
  t->need = need;
  if ((size_t)snprintf(t->path, sizeof t->path, "%s", path) >= sizeof t->path ||
      strlen(path) + strlen(PART_SUFFIX) + PART_HEX >= sizeof t->part) {
    kv_output_user_error("output file name '%s' is too long", path);
    return KV_REFUSED;
  }
  remove_stale_parts(path);
  unsigned long long seed = (unsigned long long)getpid() * 0x9E3779B97F4A7C15ULL ^ (unsigned long long)time(NULL);
  for (int attempt = 0; t->fd < 0 && attempt < 16; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (seed ^ (unsigned long long)ts.tv_nsec) * 0xBF58476D1CE4E5B9ULL;
    snprintf(t->part, sizeof t->part, "%s" PART_SUFFIX "%08x", path, (unsigned)(seed >> 32));
    t->fd = open(t->part, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (t->fd < 0 && errno != EEXIST) {
      kv_output_user_error("cannot create output file '%s': cannot create '%s': %s", path, t->part, strerror(errno));
      return KV_ERR;
    }
  }
  if (t->fd < 0) {
    kv_output_user_error("cannot create output file '%s': no unused name %s" PART_SUFFIX "XXXXXXXX", path, path);
    return KV_ERR;
  }
  kv_status st = take_lock(t->fd, t->part);
  double avail = 0;
  int e = st == KV_OK ? reserve(t->fd, need, &avail) : 0;
  if (e) st = report_space(t, e, avail);
  if (st != KV_OK) kv_target_discard(t);
  return st;
}

kv_status kv_target_reserve_again(kv_target *t) {
  double avail = 0;
  int e = reserve(t->fd, t->need, &avail);
  return e ? report_space(t, e, avail) : KV_OK;
}

/* rename(part, path) that fails when path exists (EEXIST); 0 or errno. */
static int rename_noreplace(const char *part, const char *path) {
  if (renameat2(AT_FDCWD, part, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
  int e = errno;
  if (e != EINVAL && e != ENOSYS && e != EOPNOTSUPP) return e;
  if (link(part, path) == 0) return unlink(part) == 0 ? 0 : errno;
  e = errno;
  if (e == EEXIST) return e;
  if (access(path, F_OK) == 0) return EEXIST;
  return rename(part, path) == 0 ? 0 : errno;
}

/* --force: replace path, which must not be in use; a read lock on the old file is held
 * while it is swapped out, and the swap is undone if path changed in between. */
static kv_status replace(kv_target *t) {
  int old = open(t->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (old < 0) {
    int e = errno == ENOENT ? rename_noreplace(t->part, t->path) : errno;
    if (e) kv_output_user_error("cannot rename '%s' to '%s': %s", t->part, t->path, strerror(e));
    return e ? KV_ERR : KV_OK;
  }
  kv_status st = KV_OK;
  int e = lock_byte(old, F_OFD_SETLK, F_RDLCK, NULL);
  struct stat was, got;
  if (e == EAGAIN || e == EACCES) {
    kv_output_user_error("'%s' is in use by another kval job (it holds the file's lock); --force does not replace "
                         "a file that is being written", t->path);
    st = KV_REFUSED;
  } else if (fstat(old, &was) != 0 || !S_ISREG(was.st_mode)) {
    kv_output_user_error("output file '%s' is no longer a regular file; not replaced", t->path);
    st = KV_REFUSED;
  } else if (renameat2(AT_FDCWD, t->part, AT_FDCWD, t->path, RENAME_EXCHANGE) == 0) {
    if (lstat(t->part, &got) == 0 && got.st_dev == was.st_dev && got.st_ino == was.st_ino) {
      unlink(t->part);
    } else {
      renameat2(AT_FDCWD, t->part, AT_FDCWD, t->path, RENAME_EXCHANGE);
      kv_output_user_error("output file '%s' was replaced by another job while this run was creating it; not "
                           "replaced again", t->path);
      st = KV_REFUSED;
    }
  } else if (rename(t->part, t->path) != 0) {
    kv_output_user_error("cannot rename '%s' to '%s': %s", t->part, t->path, strerror(errno));
    st = KV_ERR;
  }
  close(old);
  return st;
}

kv_status kv_target_publish(kv_target *t, int force) {
  kv_status st;
  if (force) {
    st = replace(t);
  } else {
    int e = rename_noreplace(t->part, t->path);
    st = e == 0 ? KV_OK : e == EEXIST ? KV_REFUSED : KV_ERR;
    if (e == EEXIST)
      kv_output_user_error("output file '%s' appeared while this run was creating it (another job with the same -o?); "
                           "it was left as it is", t->path);
    else if (e)
      kv_output_user_error("cannot rename '%s' to '%s': %s", t->part, t->path, strerror(e));
  }
  if (st == KV_OK) t->published = 1;
  return st;
}

kv_status kv_target_lock_existing(kv_target *t, const char *path) {
  memset(t, 0, sizeof *t);
  t->published = 1;
  snprintf(t->path, sizeof t->path, "%s", path);
  t->fd = open(path, O_RDWR | O_CLOEXEC);
  if (t->fd < 0) {
    kv_output_user_error("--resume %s: cannot open for reading and writing: %s", path, strerror(errno));
    return KV_REFUSED;
  }
  kv_status st = take_lock(t->fd, path);
  if (st != KV_OK) kv_target_discard(t);
  return st;
}

void kv_target_trim(kv_target *t) {
  struct stat sb;
  if (t->fd >= 0 && t->need > 0 && fstat(t->fd, &sb) == 0 && ftruncate(t->fd, sb.st_size) != 0)
    kv_output_user_error("warning: cannot release the unused reserved space of '%s': %s", t->path, strerror(errno));
}

void kv_target_discard(kv_target *t) {
  if (!t->published && t->part[0]) unlink(t->part);
  if (t->fd >= 0) close(t->fd);
  t->fd = -1;
  t->part[0] = '\0';
}
