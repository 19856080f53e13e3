/*
 * Warren spawner: a small, long-lived helper that starts processes for the
 * guest agent. Under gVisor, fork()ing the big Node.js process is slow; a
 * posix_spawn (vfork + exec) from this small process is several times faster.
 *
 * The parent talks to us over stdin (requests) and stdout (events) with
 * frames: u32 LE payload length | u8 type | u32 LE id | payload. The id names
 * one child and is chosen by the parent.
 *
 * Requests:
 *   SPAWN        NUL-terminated strings: cwd, cmd, argc, args..., envc, env K=V...
 *   STDIN        bytes for the child's stdin (buffered; never blocks us)
 *   STDIN_CLOSE  close the child's stdin once buffered bytes are written
 *   SIGNAL       decimal signal number, sent to the child's process group
 *   RELEASE      forget the child's output pipes (after exit, when a grandchild
 *                still holds them and the parent stopped waiting)
 *   HOSTNAME     set the sandbox's host name (id ignored; a restored copy of a
 *                snapshot takes its own name without starting a process)
 *   SPAWN_PTY    NUL-terminated cols, rows, then a SPAWN payload: the child runs
 *                on a new pseudo-terminal (its stdin, stdout and stderr), as
 *                the leader of a new session whose controlling terminal it is;
 *                its output comes as STDOUT (no STDERR), STDIN goes to it
 *   RESIZE       NUL-terminated cols, rows: TIOCSWINSZ on a PTY child's terminal
 *                (the kernel sends SIGWINCH to its foreground process group)
 * Events:
 *   STARTED (decimal pid), SPAWN_FAILED (decimal errno), STDOUT, STDERR,
 *   STDOUT_EOF, STDERR_EOF, EXITED ("<code>" or "signal:<n>").
 *
 * Children are started with posix_spawn (clone(CLONE_VFORK) + exec in glibc),
 * the program resolved against the PATH of the child's env (posix_spawnp
 * would search ours), in a new session (pgid = pid, as with Node's
 * `detached: true`) with a clean signal mask and default dispositions.
 *
 * One poll() loop serves the request pipe, every child's pipes and a
 * self-pipe written by the SIGCHLD handler. When our stdin reaches EOF the
 * parent is gone: we SIGKILL every child's process group and exit.
 *
 * Trampoline mode: `spawner --as <uid> <gid> <cmd> [args...]` (checked
 * before anything else) drops to that uid/gid (supplementary groups: just
 * gid) and execs cmd in place, resolved against the PATH of its environment:
 * posix_spawn cannot switch users, so the agent starts a non-root user's
 * process as this. Exec failure: "warren: <cmd>: ..." on stderr, exit 127
 * (not found) or 126.
 *
 * Build: gcc -static -O2 -Wall -Wextra -Werror -o spawner spawner.c
 * (static, so it runs in any image, glibc- or musl-based).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pty.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REQ_SPAWN = 1, REQ_STDIN = 2, REQ_STDIN_CLOSE = 3, REQ_SIGNAL = 4, REQ_RELEASE = 5 };
enum { REQ_HOSTNAME = 6, REQ_SPAWN_PTY = 7, REQ_RESIZE = 8 };
enum { EV_STARTED = 0x11, EV_SPAWN_FAILED, EV_STDOUT, EV_STDERR };
enum { EV_STDOUT_EOF = 0x15, EV_STDERR_EOF, EV_EXITED };

#define CAP_SYS_ADMIN_NR 21            /* linux/capability.h */
#define HEADER 9                      /* u32 length + u8 type + u32 id */
#define MAX_FRAME (64u << 20)         /* a larger request is a protocol error */
#define READ_CHUNK 65536              /* bytes read from a child pipe at a time */
#define STDIN_LIMIT (64u << 20)       /* pending stdin beyond this is dropped */
#define DEFAULT_PATH "/usr/bin:/bin"  /* what libuv uses when env has no PATH */

struct child {
  uint32_t id;
  pid_t pid;
  int in_fd, out_fd, err_fd;  /* our ends of the child's pipes, -1 once closed */
  char *in_buf;               /* stdin bytes not yet written: in_buf[in_off..in_len) */
  size_t in_off, in_len, in_cap;
  int in_close;               /* close stdin once in_buf is written */
  int exited;
  int pty;                    /* on a pseudo-terminal: in_fd and out_fd are its master */
};

static struct child **kids;
static size_t nkids, capkids;
static int sig_pipe[2] = {-1, -1};
static char *req_buf;
static size_t req_len, req_cap;

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) fputs("spawner: out of memory\n", stderr), exit(1);
  return q;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The parent is gone (or the protocol broke): kill every child's group and exit. */
static void shutdown_all(int status) {
  for (size_t i = 0; i < nkids; i++) kill(-kids[i]->pid, SIGKILL);
  exit(status);
}

/* Writes one event frame. Our stdout is deliberately blocking: the parent
 * always reads it, and blocking here is the backpressure that stops us from
 * reading child output faster than the parent consumes it. */
static void send_frame(uint8_t type, uint32_t id, const void *data, size_t len) {
  unsigned char hdr[HEADER];
  put32(hdr, (uint32_t)len);
  hdr[4] = type;
  put32(hdr + 5, id);
  struct iovec iov[2] = {{hdr, HEADER}, {(void *)data, len}};
  struct iovec *v = iov;
  int n = len ? 2 : 1;
  while (n > 0) {
    ssize_t w = writev(STDOUT_FILENO, v, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      shutdown_all(0); /* EPIPE: the parent died */
    }
    while (n > 0 && (size_t)w >= v->iov_len) w -= (ssize_t)v++->iov_len, n--;
    if (n > 0) v->iov_base = (char *)v->iov_base + w, v->iov_len -= (size_t)w;
  }
}

static void send_text(uint8_t type, uint32_t id, const char *fmt, int value) {
  char msg[32];
  int n = snprintf(msg, sizeof msg, fmt, value);
  send_frame(type, id, msg, (size_t)n);
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void close_stdin(struct child *c) {
  close_fd(&c->in_fd);
  free(c->in_buf), c->in_buf = NULL;
  c->in_off = c->in_len = c->in_cap = 0;
}

/* Writes buffered stdin until the pipe is full; EPIPE (the child closed its
 * stdin or exited) drops whatever is left. */
static void flush_stdin(struct child *c) {
  while (c->in_fd >= 0 && c->in_off < c->in_len) {
    ssize_t n = write(c->in_fd, c->in_buf + c->in_off, c->in_len - c->in_off);
    if (n > 0) c->in_off += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && errno == EAGAIN) return;
    else close_stdin(c);
  }
  c->in_off = c->in_len = 0;
  if (c->in_close) close_stdin(c);
}

/* Reads once from a child's stdout or stderr; returns 1 if bytes came. */
static int pump(struct child *c, int is_err) {
  static char buf[READ_CHUNK];
  int *fd = is_err ? &c->err_fd : &c->out_fd;
  if (*fd < 0) return 0;
  ssize_t n = read(*fd, buf, sizeof buf);
  if (n > 0) {
    send_frame(is_err ? EV_STDERR : EV_STDOUT, c->id, buf, (size_t)n);
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  close_fd(fd); /* EOF (or a read error, treated the same) */
  send_frame(is_err ? EV_STDERR_EOF : EV_STDOUT_EOF, c->id, NULL, 0);
  return 0;
}

/* Finds cmd the way execvp would, but in the PATH of the child's env:
 * posix_spawnp would search ours. Relative entries are taken relative to the
 * child's cwd. Returns 0 and the path in out, or an errno. */
static int resolve(const char *cmd, const char *path, const char *cwd, char *out, size_t cap) {
  if (!*cmd) return ENOENT;
  if (strchr(cmd, '/')) { /* used as given; a relative one resolves after the chdir */
    if (strlen(cmd) >= cap) return ENAMETOOLONG;
    strcpy(out, cmd);
    return 0;
  }
  int eacces = 0;
  for (const char *p = path;; p++) {
    const char *end = strchrnul(p, ':');
    int dl = (int)(end - p), n;
    if (dl == 0) n = snprintf(out, cap, "%s/%s", cwd, cmd); /* empty entry: the cwd */
    else if (*p == '/') n = snprintf(out, cap, "%.*s/%s", dl, p, cmd);
    else n = snprintf(out, cap, "%s/%.*s/%s", cwd, dl, p, cmd);
    struct stat st;
    if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(out, X_OK) == 0) return 0;
      eacces = 1;
    }
    if (!*end) break;
    p = end;
  }
  return eacces ? EACCES : ENOENT;
}

/* Returns the next NUL-terminated string of a payload, or NULL past its end. */
static const char *next_str(const char **p, const char *end) {
  const char *s = *p, *nul = s < end ? memchr(s, 0, (size_t)(end - s)) : NULL;
  if (!nul) return NULL;
  *p = nul + 1;
  return s;
}

static int parse_count(const char *s) {
  char *e;
  long v = s ? strtol(s, &e, 10) : -1;
  return s && *s && !*e && v >= 0 && v < 1000000 ? (int)v : -1;
}

static void add_child(struct child *c) {
  if (nkids == capkids) kids = xrealloc(kids, (capkids = capkids * 2 + 16) * sizeof *kids);
  kids[nkids++] = c;
  send_text(EV_STARTED, c->id, "%d", c->pid);
}

static int spawn_child(uint32_t id, const char **argv, const char **envp, const char *cwd) {
  const char *path = DEFAULT_PATH;
  for (const char **e = envp; *e; e++)
    if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
  char file[PATH_MAX];
  int rc = resolve(argv[1], path, cwd, file, sizeof file);
  if (rc) return rc;

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    rc = errno;
    for (int i = 0; i < 2; i++) close_fd(&in[i]), close_fd(&out[i]), close_fd(&err[i]);
    return rc;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0); /* dup2 clears O_CLOEXEC */
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addchdir_np(&fa, cwd);
  posix_spawnattr_init(&attr);
  /* A new session, hence its own process group (pgid = pid) so a signal
   * reaches the whole tree; this is what Node's `detached: true` did. (Not
   * SETPGROUP: setpgid fails with EPERM after setsid.) Empty signal mask and
   * default dispositions: we ignore SIGPIPE, the child must not. */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid;
  rc = posix_spawn(&pid, file, &fa, &attr, (char *const *)argv + 1, (char *const *)envp);
  if (rc == ENOEXEC) { /* no #! line: run it with the shell, as execvp does */
    argv[0] = "/bin/sh";
    argv[1] = file;
    rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, (char *const *)argv, (char *const *)envp);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]), close(out[1]), close(err[1]);
  if (rc) {
    close(in[1]), close(out[0]), close(err[0]);
    return rc;
  }
  /* Our ends never block the loop; the child's ends stay blocking. */
  int ours[] = {in[1], out[0], err[0]};
  for (int i = 0; i < 3; i++) fcntl(ours[i], F_SETFL, O_NONBLOCK);
  struct child *c = xrealloc(NULL, sizeof *c);
  *c = (struct child){.id = id, .pid = pid, .in_fd = in[1], .out_fd = out[0], .err_fd = err[0]};
  c->pty = 0;
  add_child(c);
  return 0;
}

/* A child on a new pseudo-terminal. posix_spawn cannot make a controlling
 * terminal, so this forks (cheap from this small process): the child starts a
 * session, takes the terminal's replica as its controlling terminal and its
 * stdio, and execs; an exec failure comes back as errno over a CLOEXEC pipe. */
static int spawn_pty_child(uint32_t id, const char **argv, const char **envp, const char *cwd,
                           struct winsize *ws) {
  const char *path = DEFAULT_PATH;
  for (const char **e = envp; *e; e++)
    if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
  char file[PATH_MAX];
  int rc = resolve(argv[1], path, cwd, file, sizeof file);
  if (rc) return rc;
  int master = -1, replica = -1, report[2] = {-1, -1};
  if (openpty(&master, &replica, NULL, NULL, ws) < 0) return errno;
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(replica, F_SETFD, FD_CLOEXEC);
  if (pipe2(report, O_CLOEXEC)) {
    rc = errno;
    close(master), close(replica);
    return rc;
  }
  pid_t pid = fork();
  if (pid < 0) {
    rc = errno;
    close(master), close(replica), close(report[0]), close(report[1]);
    return rc;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int err = 0;
    if (setsid() < 0 || ioctl(replica, TIOCSCTTY, 0) < 0) err = errno;
    if (!err && (dup2(replica, 0) < 0 || dup2(replica, 1) < 0 || dup2(replica, 2) < 0)) err = errno;
    if (!err && chdir(cwd) < 0) err = errno;
    if (!err) {
      execve(file, (char *const *)argv + 1, (char *const *)envp);
      err = errno;
      if (err == ENOEXEC) { /* no #! line: run it with the shell, as execvp does */
        argv[0] = "/bin/sh";
        argv[1] = file;
        execve("/bin/sh", (char *const *)argv, (char *const *)envp);
        err = errno;
      }
    }
    ssize_t w = write(report[1], &err, sizeof err);
    (void)w;
    _exit(127);
  }
  close(replica), close(report[1]);
  int err = 0;
  ssize_t n;
  while ((n = read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {}
  close(report[0]);
  if (n == (ssize_t)sizeof err) { /* exec failed: the child is reaped as a stranger */
    close(master);
    return err ? err : EINVAL;
  }
  /* Input and output get their own fd (one file description, hence one
   * O_NONBLOCK), so that closing stdin leaves the output open. */
  int in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
  if (in_fd < 0) {
    rc = errno;
    kill(-pid, SIGKILL);
    close(master);
    return rc;
  }
  fcntl(master, F_SETFL, O_NONBLOCK);
  struct child *c = xrealloc(NULL, sizeof *c);
  *c = (struct child){.id = id, .pid = pid, .in_fd = in_fd, .out_fd = master, .err_fd = -1};
  c->pty = 1;
  add_child(c);
  return 0;
}

static int parse_size(const char **p, const char *end, struct winsize *ws) {
  int cols = parse_count(next_str(p, end)), rows = parse_count(next_str(p, end));
  if (cols <= 0 || rows <= 0 || cols > 65535 || rows > 65535) return -1;
  *ws = (struct winsize){.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  return 0;
}

static void handle_spawn(uint32_t id, const char *p, size_t len, int pty) {
  const char *end = p + len;
  struct winsize ws;
  if (pty && parse_size(&p, end, &ws)) {
    send_text(EV_SPAWN_FAILED, id, "%d", EINVAL);
    return;
  }
  const char *cwd = next_str(&p, end), *cmd = next_str(&p, end);
  int argc = parse_count(next_str(&p, end)), envc = -1, rc = EINVAL, i = 0;
  const char **argv = NULL, **envp = NULL;
  if (cwd && cmd && argc >= 0) {
    /* argv[0] is room for the ENOEXEC retry; the real argv starts at argv[1]. */
    argv = xrealloc(NULL, sizeof *argv * (size_t)(argc + 3));
    argv[1] = cmd;
    for (i = 0; i < argc && (argv[i + 2] = next_str(&p, end)); i++) {}
    argv[argc + 2] = NULL;
    if (i == argc) envc = parse_count(next_str(&p, end));
  }
  if (envc >= 0) {
    envp = xrealloc(NULL, sizeof *envp * (size_t)(envc + 1));
    for (i = 0; i < envc && (envp[i] = next_str(&p, end)); i++) {}
    envp[envc] = NULL;
    if (i == envc)
      rc = pty ? spawn_pty_child(id, argv, envp, cwd, &ws) : spawn_child(id, argv, envp, cwd);
  }
  if (rc) send_text(EV_SPAWN_FAILED, id, "%d", rc);
  free(argv);
  free(envp);
}

static void handle_request(uint8_t type, uint32_t id, const char *p, size_t len) {
  struct child *c = NULL;
  if (type == REQ_SPAWN || type == REQ_SPAWN_PTY) {
    handle_spawn(id, p, len, type == REQ_SPAWN_PTY);
    return;
  }
  if (type == REQ_HOSTNAME) {
    if (sethostname(p, len) < 0) perror("spawner: sethostname");
    return;
  }
  for (size_t i = 0; i < nkids && !c; i++) c = kids[i]->id == id ? kids[i] : NULL;
  if (!c) return; /* already gone: nothing to do */
  if (type == REQ_STDIN && c->in_fd >= 0 && !c->in_close) {
    if (c->in_off) memmove(c->in_buf, c->in_buf + c->in_off, c->in_len -= c->in_off);
    c->in_off = 0;
    if (c->in_len + len > STDIN_LIMIT) return; /* the child is not reading: drop */
    if (c->in_len + len > c->in_cap)
      c->in_buf = xrealloc(c->in_buf, c->in_cap = 2 * (c->in_len + len));
    memcpy(c->in_buf + c->in_len, p, len);
    c->in_len += len;
    flush_stdin(c);
  } else if (type == REQ_STDIN_CLOSE) {
    c->in_close = 1;
    flush_stdin(c);
  } else if (type == REQ_SIGNAL) {
    char num[16] = {0};
    memcpy(num, p, len < sizeof num - 1 ? len : sizeof num - 1);
    int sig = atoi(num);
    if (kill(-c->pid, sig) < 0 && !c->exited) kill(c->pid, sig);
  } else if (type == REQ_RESIZE) {
    struct winsize ws;
    const char *end = p + len;
    int fd = c->out_fd >= 0 ? c->out_fd : c->in_fd;
    if (c->pty && fd >= 0 && !parse_size(&p, end, &ws)) ioctl(fd, TIOCSWINSZ, &ws);
  } else if (type == REQ_RELEASE) {
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
    close_stdin(c);
  }
}

/* Reads what the parent sent and handles every complete frame; 0 on EOF. */
static int read_requests(void) {
  if (req_cap - req_len < READ_CHUNK) /* grows geometrically: a frame may be large */
    req_buf = xrealloc(req_buf, req_cap = 2 * req_cap + READ_CHUNK);
  ssize_t n = read(STDIN_FILENO, req_buf + req_len, req_cap - req_len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (n <= 0) return 0;
  req_len += (size_t)n;
  size_t off = 0;
  while (req_len - off >= HEADER) {
    uint32_t len = get32(req_buf + off);
    if (len > MAX_FRAME) shutdown_all(2);
    if (req_len - off < HEADER + len) break;
    const char *f = req_buf + off;
    handle_request((uint8_t)f[4], get32(f + 5), f + HEADER, len);
    off += HEADER + len;
  }
  memmove(req_buf, req_buf + off, req_len - off);
  req_len -= off;
  return 1;
}

/* Collects exit statuses. As a subreaper we also adopt orphaned grandchildren;
 * their pids are not ours and are simply reaped. */
static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (size_t i = 0; i < nkids; i++) {
      struct child *c = kids[i];
      if (c->pid != pid || c->exited) continue;
      /* Forward output already in the pipes first, so it precedes EXITED. */
      for (int k = 0; k < 64 && (pump(c, 0) | pump(c, 1)); k++) {}
      c->exited = 1;
      close_stdin(c);
      if (WIFSIGNALED(status)) send_text(EV_EXITED, c->id, "signal:%d", WTERMSIG(status));
      else send_text(EV_EXITED, c->id, "%d", WEXITSTATUS(status));
      break;
    }
  }
}

static void on_sigchld(int sig) {
  int saved = errno;
  ssize_t r = write(sig_pipe[1], "", 1); /* a full pipe already means "reap" */
  (void)r, (void)sig, errno = saved;
}

static int parse_id(const char *s, unsigned long *out) {
  char *end;
  if (!*s) return -1;
  errno = 0;
  *out = strtoul(s, &end, 10);
  return errno || *end || *out > 0xfffffffeUL ? -1 : 0;
}

/* spawner --as <uid> <gid> <cmd> [args...]: become uid/gid and exec cmd. */
static int run_as(int argc, char **argv) {
  unsigned long uid, gid;
  if (argc < 5 || parse_id(argv[2], &uid) || parse_id(argv[3], &gid)) {
    fprintf(stderr, "warren: spawner --as: bad arguments\n");
    _exit(126);
  }
  gid_t g = (gid_t)gid;
  if (setgroups(1, &g) && setgroups(0, NULL)) {
    fprintf(stderr, "warren: setgroups: %s\n", strerror(errno));
    _exit(126);
  }
  if (setgid(g) || setuid((uid_t)uid) || getuid() != (uid_t)uid || getgid() != g) {
    fprintf(stderr, "warren: cannot switch to user %lu:%lu: %s\n", uid, gid, strerror(errno));
    _exit(126);
  }
  execvp(argv[4], argv + 4);
  int err = errno;
  if (err == ENOENT) fprintf(stderr, "warren: %s: command not found\n", argv[4]);
  else fprintf(stderr, "warren: %s: %s\n", argv[4], strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--as") == 0) return run_as(argc, argv);
  /* Make sure fds 0-2 exist, so a pipe never lands on them. */
  for (int fd; (fd = open("/dev/null", O_RDWR)) >= 0;)
    if (fd > 2) { close(fd); break; }
  fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) & ~O_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1); /* best effort: orphans are then ours to reap */
  /* We keep CAP_SYS_ADMIN (for HOSTNAME) but drop it from the bounding set, so
   * no program we start can gain it: they get the sandbox's default set. */
  prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN_NR, 0, 0, 0);
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) return perror("spawner: pipe"), 1;
  struct sigaction sa = {.sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);

  struct pollfd *pfds = NULL;
  struct child **owner = NULL;
  size_t cap = 0;
  for (;;) {
    size_t n = 2;
    if (cap < 2 + 3 * nkids) {
      cap = 2 + 3 * nkids + 16;
      pfds = xrealloc(pfds, cap * sizeof *pfds);
      owner = xrealloc(owner, cap * sizeof *owner);
    }
    pfds[0] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
    pfds[1] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
    for (size_t i = 0; i < nkids; i++) {
      struct child *c = kids[i];
      int in_fd = c->in_off < c->in_len ? c->in_fd : -1; /* stdin only while bytes wait */
      struct pollfd w[3] = {{c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
      for (int k = 0; k < 3; k++)
        if (w[k].fd >= 0) owner[n] = c, pfds[n++] = w[k];
    }
    if (poll(pfds, n, -1) < 0) {
      if (errno == EINTR) continue;
      perror("spawner: poll"), shutdown_all(1);
    }
    /* An fd is acted on only if its owner still has it open (a pump may have closed it). */
    for (size_t i = 2; i < n; i++) {
      struct child *c = owner[i];
      int fd = pfds[i].fd;
      if (!pfds[i].revents) continue;
      if (fd == c->out_fd) pump(c, 0);
      else if (fd == c->err_fd) pump(c, 1);
      else if (fd == c->in_fd) flush_stdin(c);
    }
    if (pfds[1].revents) {
      char buf[256];
      while (read(sig_pipe[0], buf, sizeof buf) > 0) {}
      reap();
    }
    if (pfds[0].revents && !read_requests()) shutdown_all(0);
    /* Forget children that exited and whose pipes are closed. */
    size_t kept = 0;
    for (size_t i = 0; i < nkids; i++) {
      struct child *c = kids[i];
      if (c->exited && c->out_fd < 0 && c->err_fd < 0) close_stdin(c), free(c);
      else kids[kept++] = c;
    }
    nkids = kept;
  }
}
