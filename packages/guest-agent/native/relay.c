/*
 * Warren relay: moves the bulk bytes between the sandbox and the host's data
 * socket for the guest agent. Under gVisor every system call of the agent's
 * event loop is expensive (non-blocking reads of 64 KiB, then epoll); here a
 * thread per direction does blocking reads and writes of 1 MiB, which the
 * runtime serves several times faster.
 *
 * The agent talks to us over stdin and stdout, one line per message, fields
 * separated by single spaces. Paths and reply texts travel as hex, so they may
 * hold any byte. Requests:
 *   <id> send <token> <hexpath> <size>    the first <size> bytes of a file out
 *   <id> recv <token> <hexpath> <mode|->  a file in (created or truncated), then
 *                                         `<id> done` or `<id> error <errno>`;
 *                                         the agent answers with:
 *   <id> reply <hextext>                  written on that connection, closed
 *   <id> port <token> <port>              a TCP connection to the sandbox's
 *                                         loopback (127.0.0.1, then ::1), bridged
 *                                         to the host: `<id> ok` / `<id> error <errno>`
 *   <id> unix <token> <hexpath>           a connection to the Unix socket <path>
 *                                         in the sandbox, bridged to the host:
 *                                         `<id> ok` / `<id> error <errno>`
 *   <id> hand <token> <hexpath> <port>    dial the host and hand that data
 *                                         connection's descriptor to the server
 *                                         listening on the Unix socket <path>
 *                                         (see handoff.c); if nothing listens
 *                                         there, bridge it to <port> as `port`
 *                                         does: `<id> ok` / `<id> error <errno>`
 *   <id> egress <token> <port> <port>     listen on those loopback ports and
 *                                         bridge every connection to the host
 *                                         (again: only the token changes)
 *   <id> drop                             end every bridge (before a checkpoint,
 *                                         no host socket may stay open), then
 *                                         `<id> dropped`
 * Each data connection starts with the transfer's token and a newline (see
 * GUEST_DATA_SOCKET). When stdin reaches EOF the agent is gone and we exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define BUF (1 << 20)
#define MAX_BRIDGES 4096
#define MAX_REPLIES 1024

static const char *data_socket;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bridges_done = PTHREAD_COND_INITIALIZER;

/* ---- messages to the agent ---- */

static void say(const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  line[n++] = '\n';
  pthread_mutex_lock(&lock);
  for (int off = 0; off < n;) {
    ssize_t w = write(1, line + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += w;
  }
  pthread_mutex_unlock(&lock);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w;
    n -= w;
  }
  return 0;
}

static int unhex(const char *hex, char *out, size_t cap) {
  size_t n = strlen(hex);
  if (n % 2 || n / 2 >= cap) return -1;
  for (size_t i = 0; i < n / 2; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
    out[i] = (char)v;
  }
  out[n / 2] = 0;
  return (int)(n / 2);
}

static void spawn_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  if (pthread_create(&t, &attr, fn, arg) != 0) abort();
  pthread_attr_destroy(&attr);
}

/* A connection to the Unix socket at `path`; -1 with errno on failure. */
static int connect_unix(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) return fd;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

/* Dials the host's data socket and sends the token; -1 with errno on failure. */
static int dial_data(const char *token) {
  int fd = connect_unix(data_socket);
  if (fd < 0) return -1;
  char head[160];
  int n = snprintf(head, sizeof head, "%s\n", token);
  if (write_all(fd, head, n) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* ---- bridges: two sockets, a thread per direction ---- */

struct bridge {
  int a, b;
  int live; /* directions still copying; the last one closes both */
};
static struct bridge *bridges[MAX_BRIDGES];
static int bridge_count;

struct direction {
  struct bridge *br;
  int from, to;
};

static void *copy_direction(void *arg) {
  struct direction *d = arg;
  char *buf = malloc(BUF);
  int broke = buf == NULL;
  while (!broke) {
    ssize_t r = read(d->from, buf, BUF);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) break;
    if (r < 0 || write_all(d->to, buf, r) < 0) broke = 1;
  }
  free(buf);
  struct bridge *br = d->br;
  pthread_mutex_lock(&lock);
  /* An orderly end travels across; a broken direction tears both down. */
  if (broke) {
    shutdown(br->a, SHUT_RDWR);
    shutdown(br->b, SHUT_RDWR);
  } else {
    shutdown(d->to, SHUT_WR);
  }
  int last = --br->live == 0;
  if (last) {
    for (int i = 0; i < bridge_count; i++)
      if (bridges[i] == br) {
        bridges[i] = bridges[--bridge_count];
        break;
      }
    if (bridge_count == 0) pthread_cond_broadcast(&bridges_done);
  }
  pthread_mutex_unlock(&lock);
  if (last) {
    close(br->a);
    close(br->b);
    free(br);
  }
  free(d);
  return NULL;
}

static void bridge(int a, int b) {
  struct bridge *br = malloc(sizeof *br);
  pthread_mutex_lock(&lock);
  if (!br || bridge_count == MAX_BRIDGES) {
    pthread_mutex_unlock(&lock);
    free(br);
    close(a);
    close(b);
    return;
  }
  *br = (struct bridge){.a = a, .b = b, .live = 2};
  bridges[bridge_count++] = br;
  pthread_mutex_unlock(&lock);
  struct direction *up = malloc(sizeof *up), *down = malloc(sizeof *down);
  if (!up || !down) abort();
  *up = (struct direction){br, a, b};
  *down = (struct direction){br, b, a};
  spawn_thread(copy_direction, up);
  spawn_thread(copy_direction, down);
}

/* Ends every bridge and waits until their threads have closed them. */
static void drop_all(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < bridge_count; i++) {
    shutdown(bridges[i]->a, SHUT_RDWR);
    shutdown(bridges[i]->b, SHUT_RDWR);
  }
  while (bridge_count > 0) pthread_cond_wait(&bridges_done, &lock);
  pthread_mutex_unlock(&lock);
}

/* ---- files ---- */

struct transfer {
  unsigned long id;
  char token[130];
  char path[4200];
  long long size; /* send: bytes to send */
  int mode;       /* recv: mode to set, or -1 */
};

static void *send_file(void *arg) {
  struct transfer *t = arg;
  int file = open(t->path, O_RDONLY | O_CLOEXEC);
  int sock = dial_data(t->token);
  char *buf = malloc(BUF);
  long long left = t->size;
  while (file >= 0 && sock >= 0 && buf && left > 0) {
    ssize_t r = read(file, buf, left < BUF ? (size_t)left : BUF);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || write_all(sock, buf, r) < 0) break;
    left -= r;
  }
  /* A short stream tells the host the file broke off. */
  if (file >= 0) close(file);
  if (sock >= 0) close(sock);
  free(buf);
  free(t);
  return NULL;
}

struct reply_slot {
  unsigned long id;
  int sock;
};
static struct reply_slot replies[MAX_REPLIES];
static int reply_count;

static void *recv_file(void *arg) {
  struct transfer *t = arg;
  int sock = dial_data(t->token);
  if (sock < 0) {
    say("%lu error %d", t->id, errno);
    free(t);
    return NULL;
  }
  int file = open(t->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  int failed = file < 0 ? errno : 0;
  char *buf = malloc(BUF);
  if (!buf) failed = ENOMEM;
  for (;;) {
    ssize_t r = read(sock, buf, buf ? BUF : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    /* After a failed write (a full disk) the rest is drained, so the answer still gets through. */
    if (!failed && write_all(file, buf, r) < 0) failed = errno;
  }
  free(buf);
  if (!failed && t->mode >= 0 && fchmod(file, t->mode) < 0) failed = errno;
  if (file >= 0 && close(file) < 0 && !failed) failed = errno;
  pthread_mutex_lock(&lock);
  int kept = reply_count < MAX_REPLIES;
  if (kept) replies[reply_count++] = (struct reply_slot){t->id, sock};
  pthread_mutex_unlock(&lock);
  if (!kept) close(sock);
  if (failed)
    say("%lu error %d", t->id, failed);
  else
    say("%lu done", t->id);
  free(t);
  return NULL;
}

static void reply(unsigned long id, const char *hex) {
  int sock = -1;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < reply_count; i++)
    if (replies[i].id == id) {
      sock = replies[i].sock;
      replies[i] = replies[--reply_count];
      break;
    }
  pthread_mutex_unlock(&lock);
  if (sock < 0) return;
  size_t cap = strlen(hex) / 2 + 1;
  char *text = malloc(cap);
  int n = text ? unhex(hex, text, cap) : -1;
  if (n >= 0) write_all(sock, text, n);
  free(text);
  close(sock);
}

/* ---- ports (preview URLs) ---- */

static int nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* A connection to the sandbox's loopback (127.0.0.1, then ::1), without Nagle's delay. */
static int connect_loopback(int port) {
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons(port)};
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&v4, sizeof v4) == 0) return nodelay(fd);
  int e = errno;
  close(fd);
  /* Servers bound to `localhost` may listen on ::1 only. */
  if (e == ECONNREFUSED) {
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    v6.sin6_addr = in6addr_loopback;
    fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&v6, sizeof v6) == 0) return nodelay(fd);
    if (fd >= 0) close(fd);
  }
  errno = e;
  return -1;
}

/* A loopback port, or the Unix socket `path` when it is set. */
struct port_req {
  unsigned long id;
  char token[130];
  int port;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static void *open_port(void *arg) {
  struct port_req *p = arg;
  int conn = p->path[0] ? connect_unix(p->path) : connect_loopback(p->port);
  if (conn < 0) {
    say("%lu error %d", p->id, errno);
    free(p);
    return NULL;
  }
  say("%lu ok", p->id);
  int data = dial_data(p->token);
  if (data < 0)
    close(conn);
  else
    bridge(conn, data);
  free(p);
  return NULL;
}

/* ---- handoffs (PostgreSQL takes the host connection itself) ---- */

struct hand_req {
  unsigned long id;
  char token[130];
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  int port;
};

/* Sends `fd` with one byte on a new connection to the Unix socket `path`. */
static int hand_over(const char *path, int fd) {
  int s = connect_unix(path);
  if (s < 0) return -1;
  char byte = 'W';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr m = {
      .msg_iov = &iov,
      .msg_iovlen = 1,
      .msg_control = control.buf,
      .msg_controllen = sizeof control.buf,
  };
  struct cmsghdr *h = CMSG_FIRSTHDR(&m);
  h->cmsg_level = SOL_SOCKET;
  h->cmsg_type = SCM_RIGHTS;
  h->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(h), &fd, sizeof fd);
  int ok = sendmsg(s, &m, 0) == 1;
  int e = errno;
  close(s);
  errno = e;
  return ok ? 0 : -1;
}

static void *hand_port(void *arg) {
  struct hand_req *p = arg;
  int data = dial_data(p->token);
  if (data < 0) {
    say("%lu error %d", p->id, errno);
  } else if (hand_over(p->path, data) == 0) {
    close(data);
    say("%lu ok", p->id);
  } else {
    /* Nothing takes connections there (a server started without handoff.c). */
    int tcp = connect_loopback(p->port);
    if (tcp < 0) {
      say("%lu error %d", p->id, errno);
      close(data);
    } else {
      say("%lu ok", p->id);
      bridge(tcp, data);
    }
  }
  free(p);
  return NULL;
}

/* ---- egress listeners ---- */

static char egress_token[130];

static void *accept_loop(void *arg) {
  int listener = (int)(long)arg;
  for (;;) {
    int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      usleep(10000);
      continue;
    }
    nodelay(client);
    char token[130];
    pthread_mutex_lock(&lock);
    memcpy(token, egress_token, sizeof token);
    pthread_mutex_unlock(&lock);
    int data = dial_data(token);
    if (data < 0)
      close(client);
    else
      bridge(client, data);
  }
  return NULL;
}

static int listen_loopback(int port) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 512) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static int egress_listening;

static void egress(unsigned long id, const char *token, int http, int socks) {
  pthread_mutex_lock(&lock);
  snprintf(egress_token, sizeof egress_token, "%s", token);
  int started = egress_listening;
  egress_listening = 1;
  pthread_mutex_unlock(&lock);
  if (started) return say("%lu ok", id);
  int ports[2] = {http, socks};
  for (int i = 0; i < 2; i++) {
    int fd = listen_loopback(ports[i]);
    if (fd < 0) return say("%lu error %d", id, errno);
    spawn_thread(accept_loop, (void *)(long)fd);
  }
  say("%lu ok", id);
}

/* ---- the request loop ---- */

static void request(char *line) {
  char *save = NULL;
  char *id_s = strtok_r(line, " ", &save), *verb = strtok_r(NULL, " ", &save);
  char *f[3];
  for (int i = 0; i < 3; i++) f[i] = strtok_r(NULL, " ", &save);
  if (!id_s || !verb) return;
  unsigned long id = strtoul(id_s, NULL, 10);
  int token_ok = f[0] && strlen(f[0]) < 130;
  if ((!strcmp(verb, "send") || !strcmp(verb, "recv")) && token_ok && f[1] && f[2]) {
    struct transfer *t = calloc(1, sizeof *t);
    if (!t) return say("%lu error %d", id, ENOMEM);
    t->id = id;
    strcpy(t->token, f[0]);
    if (unhex(f[1], t->path, sizeof t->path) < 0) {
      free(t);
      return say("%lu error %d", id, EINVAL);
    }
    if (!strcmp(verb, "send")) {
      t->size = atoll(f[2]);
      spawn_thread(send_file, t);
    } else {
      t->mode = strcmp(f[2], "-") ? (int)strtol(f[2], NULL, 10) : -1;
      spawn_thread(recv_file, t);
    }
  } else if (!strcmp(verb, "reply") && f[0]) {
    reply(id, f[0]);
  } else if (!strcmp(verb, "port") && token_ok && f[1]) {
    struct port_req *p = calloc(1, sizeof *p);
    if (!p) return say("%lu error %d", id, ENOMEM);
    *p = (struct port_req){.id = id, .port = atoi(f[1])};
    strcpy(p->token, f[0]);
    spawn_thread(open_port, p);
  } else if (!strcmp(verb, "unix") && token_ok && f[1]) {
    struct port_req *p = calloc(1, sizeof *p);
    if (!p) return say("%lu error %d", id, ENOMEM);
    *p = (struct port_req){.id = id};
    strcpy(p->token, f[0]);
    if (unhex(f[1], p->path, sizeof p->path) < 0 || !p->path[0]) {
      free(p);
      return say("%lu error %d", id, EINVAL);
    }
    spawn_thread(open_port, p);
  } else if (!strcmp(verb, "hand") && token_ok && f[1] && f[2]) {
    struct hand_req *p = calloc(1, sizeof *p);
    if (!p) return say("%lu error %d", id, ENOMEM);
    *p = (struct hand_req){.id = id, .port = atoi(f[2])};
    strcpy(p->token, f[0]);
    if (unhex(f[1], p->path, sizeof p->path) < 0) {
      free(p);
      return say("%lu error %d", id, EINVAL);
    }
    spawn_thread(hand_port, p);
  } else if (!strcmp(verb, "egress") && token_ok && f[1] && f[2]) {
    egress(id, f[0], atoi(f[1]), atoi(f[2]));
  } else if (!strcmp(verb, "drop")) {
    drop_all();
    say("%lu dropped", id);
  } else {
    say("%lu error %d", id, EINVAL);
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  data_socket = getenv("WARREN_DATA_CHANNEL");
  if (!data_socket) data_socket = "/run/warren/data.sock";
  static char line[1 << 16];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(0, line + len, sizeof line - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    len += r;
    char *start = line, *nl;
    while ((nl = memchr(start, '\n', line + len - start))) {
      *nl = 0;
      request(start);
      start = nl + 1;
    }
    len -= start - line;
    memmove(line, start, len);
    if (len == sizeof line - 1) len = 0; /* a line too long for any request */
  }
}
