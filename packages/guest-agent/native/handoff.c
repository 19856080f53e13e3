/*
 * Warren handoff: lets a server in the sandbox take connections from the host
 * by descriptor, so their bytes skip the relay. Loaded with LD_PRELOAD into
 * PostgreSQL (see the database START script). It replaces accept() and
 * accept4() for listeners whose Unix socket lies in $WARREN_HANDOFF_DIR:
 * there the relay connects and sends, with one byte, the descriptor of a data
 * connection it dialed to the host (SCM_RIGHTS); accept returns that
 * descriptor instead of the relay's connection, and the server reads and
 * writes the host socket itself. Under gVisor each message then crosses into
 * the sandbox once, not three times (host socket, relay thread, loopback TCP).
 *
 * The peer address returned is 127.0.0.1 port 0, so the server applies its
 * rules for loopback TCP (for PostgreSQL: SCRAM), never those for local Unix
 * socket clients (trust): the bytes come from outside the sandbox. A
 * connection on such a listener that brings no descriptor is closed and
 * accept fails with ECONNABORTED, which servers skip. Other listeners, and
 * everything when the variable is unset, go to the C library unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

static accept4_fn next_accept4(void) {
  static accept4_fn next;
  if (!next) next = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
  return next;
}

/* Whether `fd` listens on a Unix socket inside the handoff directory. */
static int handoff_listener(int fd) {
  const char *dir = getenv("WARREN_HANDOFF_DIR");
  if (!dir || !*dir) return 0;
  struct sockaddr_un a;
  socklen_t n = sizeof a;
  memset(&a, 0, sizeof a);
  if (getsockname(fd, (struct sockaddr *)&a, &n) < 0 || a.sun_family != AF_UNIX) return 0;
  size_t len = strlen(dir);
  return strncmp(a.sun_path, dir, len) == 0 && a.sun_path[len] == '/';
}

/* Reads the one byte and the one descriptor the relay sends; -1 if it did not. */
static int take_descriptor(int conn, int flags) {
  struct timeval wait = {.tv_sec = 2};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  struct msghdr m = {
      .msg_iov = &iov,
      .msg_iovlen = 1,
      .msg_control = control.buf,
      .msg_controllen = sizeof control.buf,
  };
  ssize_t r;
  do r = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  int fd = -1, extra = 0;
  for (struct cmsghdr *h = r == 1 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int got;
      memcpy(&got, CMSG_DATA(h) + i * sizeof(int), sizeof got);
      if (fd < 0)
        fd = got;
      else {
        close(got);
        extra = 1;
      }
    }
  }
  int type = 0;
  socklen_t tl = sizeof type;
  if (fd >= 0 && (extra || (m.msg_flags & MSG_CTRUNC) ||
                  getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM)) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0) {
    if (!(flags & SOCK_CLOEXEC)) fcntl(fd, F_SETFD, 0);
    if (flags & SOCK_NONBLOCK) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return fd;
}

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
  accept4_fn next = next_accept4();
  if (!next) {
    errno = ENOSYS;
    return -1;
  }
  if (!handoff_listener(sockfd)) return next(sockfd, addr, addrlen, flags);
  int conn = next(sockfd, NULL, NULL, SOCK_CLOEXEC);
  if (conn < 0) return -1;
  int fd = take_descriptor(conn, flags);
  close(conn);
  if (fd < 0) {
    errno = ECONNABORTED;
    return -1;
  }
  if (addr && addrlen) {
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = 0};
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(addr, &peer, *addrlen < sizeof peer ? *addrlen : sizeof peer);
    *addrlen = sizeof peer;
  }
  return fd;
}

int accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen) {
  return accept4(sockfd, addr, addrlen, 0);
}
