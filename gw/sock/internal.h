/* Shared by sock/sock.c and sock/async.c only. */
#ifndef GW_SOCK_INTERNAL_H
#define GW_SOCK_INTERNAL_H

#include "sock/sock.h"

enum { IO_OK = 1, IO_AGAIN = 0, IO_EOF = -1, IO_ERROR = -2, IO_ASYNC = -3, IO_ASYNC_JOB = -4 };

/* the SSL call a paused async job belongs to */
enum { OP_HANDSHAKE = 1, OP_READ, OP_WRITE, OP_SHUTDOWN };

#define DRAIN_WARN_MS 10000 /* a paused job that has not finished by then is logged */

/* Drive s: the handshake, a lingering close, else its protocol. May free s. */
void gw_sock_drive_(gw_sock_t *s);
/* Release everything of s and hand it to its owner. */
void gw_sock_free_(gw_sock_t *s);
/* An SSL call answered rr: park s when it is IO_ASYNC / IO_ASYNC_JOB (returns 1). */
int gw_sock_park_(gw_sock_t *s, int rr, int op);
/* Give back s's input and output buffers (sock/buf.c). */
void gw_sock_release_buffers_(gw_sock_t *s);
/* s's SSL runs in async jobs: its wakes by wait fds (fd_mode) or by the callback. */
void gw_sock_async_open_(gw_sock_t *s, int fd_mode);
/* Take s out of every async queue (it is being freed). */
void gw_sock_async_forget_(gw_sock_t *s);

#endif
