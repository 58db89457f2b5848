/*
 * The socket layer, below every protocol (HTTP/1.1, HTTP/2, raw stream): one accepted
 * socket, plain or TLS, on an edge-triggered epoll registration; the TLS handshake; reads
 * and writes that report EAGAIN / WANT_READ / WANT_WRITE as "again"; async TLS parking
 * (SSL_ERROR_WANT_ASYNC: no SSL call until the job's wake; WANT_ASYNC_JOB: a retry list)
 * with its wakes and retries (sock/async.c); the connection's timer; and the ways a
 * connection ends: close_notify, lingering close, a drain while a job is paused.
 *
 * A protocol is a table of callbacks (gw_sock_proto_t) chosen by the owner when the
 * handshake ends (by ALPN); the owner (http/conn.c) allocates the socket inside its own
 * connection object and frees it when the layer says so. Nothing here knows HTTP, the
 * configuration or the worker: the loop is given, limits come as numbers.
 *
 * An operation is always attempted; a protocol waits only after the layer said
 * GW_SOCK_AGAIN. While an async job is paused (gw_sock_busy) no SSL function may be
 * called on the socket: the layer drives the protocol again when the job's wake comes.
 */
#ifndef GW_SOCK_SOCK_H
#define GW_SOCK_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/ssl.h>

#include "net/loop.h"
#include "net/post.h"

/** Results of gw_sock_read() and gw_sock_write(). */
enum { GW_SOCK_OK = 1, GW_SOCK_AGAIN = 0, GW_SOCK_EOF = -1, GW_SOCK_ERROR = -2 };

/* an output buffer: a response head and a small body (grown as needed) */
#define GW_SOCK_OUT_CAP (16384 + 1024)
/* a file body: 4 full 16 KiB records per read (nginx reads 32 KiB: output_buffers 2 32k)
 * and room for the head before the first */
#define GW_SOCK_FILE_CAP (4 * 16384 + 1024)

#define GW_SOCK_MAX_ASYNC_FDS 4

struct gw_sock;

/** The protocol spoken on a socket once its handshake is done. */
typedef struct gw_sock_proto {
    const char *name;
    /** The socket may be ready (an event, a job's wake, gw_sock_resume): attempt the next
     * operations until one says GW_SOCK_AGAIN. May close the socket (then return). */
    void (*drive)(struct gw_sock *s);
    /** The socket's timer fired (never while a job is draining). May close the socket. */
    void (*timeout)(struct gw_sock *s);
    /** The socket is being freed: give back the protocol's own state. May be NULL. */
    void (*release)(struct gw_sock *s);
} gw_sock_proto_t;

/** What the layer asks of the object that accepted the socket. */
typedef struct gw_sock_owner {
    /** The TLS handshake completed: set s->proto (ALPN chooses) and its timers. The layer
     * drives s->proto right after. */
    void (*handshake_done)(struct gw_sock *s);
    /** Everything of s is released (SSL freed, fd closed): unlink and free its memory. */
    void (*freed)(struct gw_sock *s);
    /** While s->preface is set: read what precedes the TLS handshake or the protocol (a
     * PROXY protocol header) from s->fd. Returns 1 when done (the layer clears s->preface;
     * on plain TCP the owner sets s->proto now), 0 to wait for the next event, -1 to close
     * (logged by the owner). May be NULL when the owner never sets s->preface. */
    int (*preface)(struct gw_sock *s);
    /** s's timer fired while s->preface was set (log it; the layer closes s after). */
    void (*preface_timeout)(struct gw_sock *s);
} gw_sock_owner_t;

struct gw_sock_job;

/** A wait fd of a paused async job, registered in epoll (ssl_async_notify fd): of a socket
 * (s) or of a job outside a socket (j, gw_sock_job_new). */
typedef struct gw_async_fd {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    struct gw_sock *s;
    struct gw_sock_job *j;
} gw_async_fd_t;

typedef struct gw_sock {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    SSL *ssl; /* NULL: plain TCP */
    gw_loop_t *loop;
    const gw_sock_owner_t *owner;
    const gw_sock_proto_t *proto; /* NULL while handshaking */
    gw_timer_t timer;
    char peer_text[64];
    int64_t send_timeout_ms; /* re-armed after each successful write of gw_sock_flush */

    /* input and output buffers (NULL while idle: gw_sock_idle) */
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_off, out_cap;
    BIO *wbuf; /* BIO_f_buffer under SSL while a large body is sent */

    int preface; /* the owner reads a preface first (gw_sock_owner_t) */
    int handshaking;
    int lingering;   /* draining input until EOF before close */
    int read_eof;    /* the peer closed (FIN, close_notify, reset) */
    int pending_eof; /* the peer's FIN was reported (EPOLLRDHUP/HUP/ERR): a short
                                * read then does not drain the socket (nginx's pending_eof) */
    int rd_ready;    /* bytes may wait in the socket: set by an input event,
                                * cleared when a read found none (nginx's rev->ready) */

    /* async TLS: while a job is paused no other SSL call is made and the SSL is never
     * freed; a socket closed meanwhile is drained (freed once the job finishes). */
    int64_t accept_us; /* loop-pass time of the accept (handshake histogram) */
    int64_t pause_us;  /* when the current job paused (pause histogram) */
    int async_paused;
    int async_op;      /* the SSL call that paused (resumed as is when draining) */
    int async_retry;   /* WANT_ASYNC_JOB: waiting for a free job */
    int async_fd_mode; /* wake through wait fds, not the callback */
    int draining;
    void *retry_next; /* the next waiter for a free job (sock/async.c's FIFO) */
    gw_posted_t wake; /* posted when the job may resume (net/post.h) */
    gw_async_fd_t afd[GW_SOCK_MAX_ASYNC_FDS];
    int n_afd;
} gw_sock_t;

/**
 * Set up s (zeroed by the caller, peer_text filled) for the accepted non-blocking fd,
 * which it owns from here on: a TLS server SSL from ctx (NULL: plain TCP, s->proto must
 * then be set by the caller), async parking when ctx has SSL_MODE_ASYNC (wakes by wait
 * fds when async_fd_mode, else by gw_sock_async_callback), and the epoll registration
 * (EPOLLIN|EPOLLOUT|EPOLLRDHUP, edge-triggered). app is stored as the SSL's app data.
 * Returns 0, or -1 (logged) after which the caller calls gw_sock_close(s).
 */
int gw_sock_open(gw_sock_t *s, gw_loop_t *loop, int fd, SSL_CTX *ctx, int async_fd_mode,
                 const gw_sock_owner_t *owner, void *app);

/**
 * Read up to len bytes into buf; *got receives the count. Returns GW_SOCK_OK,
 * GW_SOCK_AGAIN (nothing now: also when an async job paused the read, see gw_sock_busy),
 * GW_SOCK_EOF (peer closed or reset: read_eof set) or GW_SOCK_ERROR (logged).
 */
int gw_sock_read(gw_sock_t *s, char *buf, size_t len, size_t *got);

/** Write up to len bytes of buf; *put receives the count. Results as gw_sock_read. */
int gw_sock_write(gw_sock_t *s, const char *buf, size_t len, size_t *put);

/**
 * Write s->out[out_off..out_len); the buffer is emptied (offsets reset) when all of it is
 * written, and the timer re-armed to send_timeout_ms after each successful write (nginx's
 * send_timeout: between two writes). Returns 1 when all is written, 0 when the socket or a
 * paused job blocks, -1 on an error (the peer is gone).
 */
int gw_sock_flush(gw_sock_t *s);

/**
 * Send up to 1 MiB of file fd from *off by the kernel (kTLS SSL_sendfile, or sendfile(2)
 * on plain TCP), advancing *off and decreasing *left. Results as gw_sock_read; a file that
 * ends early is GW_SOCK_ERROR (logged).
 */
int gw_sock_sendfile(gw_sock_t *s, int fd, uint64_t *off, uint64_t *left);

/** Can file bodies go out by the kernel here (plain TCP, or kTLS took the send keys)? */
int gw_sock_kernel_send(const gw_sock_t *s);

/** Put a BIO_f_buffer between SSL and the socket for a large body, so the records of one
 * write leave in one send (nothing on plain TCP or while paused). */
void gw_sock_wbuf_push(gw_sock_t *s);

/** Flush and remove the buffer of gw_sock_wbuf_push: GW_SOCK_OK once it is removed (or
 * there is none), GW_SOCK_AGAIN, GW_SOCK_ERROR. */
int gw_sock_wbuf_flush(gw_sock_t *s);

/**
 * Send TLS close_notify once (RFC 8446 §6.1; a half-close: reading goes on). Returns 1
 * when sent (plain TCP: shutdown(SHUT_WR)), 0 when blocked or paused (call again once
 * driven), -1 on an error.
 */
int gw_sock_close_notify(gw_sock_t *s);

/**
 * End the connection after its last answer: close_notify (one non-blocking attempt),
 * then close, or when unread input may remain (unread != 0, or OpenSSL holds some) a
 * lingering close: shutdown(SHUT_WR) and drain until EOF or 5 s, so the kernel does not
 * reset the connection under the answer in flight. May free s.
 */
void gw_sock_end(gw_sock_t *s, int unread);

/**
 * Close now. A client's close_notify is answered first (RFC 5246 §7.2.1, RFC 8446 §6.1);
 * while an async job is paused the socket is drained (freed when the job ends, never
 * before: the SSL of a paused job is never freed). Otherwise s is freed (owner->freed).
 */
void gw_sock_close(gw_sock_t *s);

/** Arm (or move) s's timer ms milliseconds from the loop's clock; disarm it. */
void gw_sock_timer(gw_sock_t *s, int64_t ms);
void gw_sock_timer_del(gw_sock_t *s);

/** Is an async job paused or waiting for a free job (no SSL call may be made)? */
static inline int gw_sock_busy(const gw_sock_t *s)
{
    return s->async_paused || s->async_retry;
}

/** Drop the first n bytes of s's input (n <= s->in_len); the rest moves to the start. */
static inline void gw_sock_in_consume(gw_sock_t *s, size_t n)
{
    if (n < s->in_len)
        memmove(s->in, s->in + n, s->in_len - n);
    s->in_len -= n;
}

/** May input wait (an input event since the last EAGAIN, or bytes OpenSSL holds)? */
int gw_sock_readable(gw_sock_t *s);

/** Drive s's protocol now unless a job is paused (its wake will). Must not be called
 * while the loop dispatches a batch of events (it may free s). */
void gw_sock_resume(gw_sock_t *s);

/** Drive s's handshake again after a ClientHello callback answered RETRY (nothing when
 * s is no longer handshaking or is paused). May free s. */
void gw_sock_hello_resume(gw_sock_t *s);

/* ---- buffers (recycled per worker: an idle keep-alive connection holds none) ---- */

/** Make room for more bytes in s->out (GW_SOCK_OUT_CAP first, grown as needed; abort()
 * on out of memory, as at start-up: a worker cannot go on without it). */
void gw_sock_out_reserve(gw_sock_t *s, size_t more);
/** Append n bytes to s->out. */
void gw_sock_out_append(gw_sock_t *s, const char *p, size_t n);
/** Move s->out's bytes into a GW_SOCK_FILE_CAP buffer when it is smaller (a file body). */
void gw_sock_out_file_buffer(gw_sock_t *s);
/** Grow s->in to want bytes (at most max); abort() on out of memory. */
void gw_sock_in_grow(gw_sock_t *s, size_t want, size_t max);
/** Give back both buffers and OpenSSL's record buffers (the connection is idle). */
void gw_sock_idle(gw_sock_t *s);

/* ---- async TLS (sock/async.c) ---- */

/** Create the wake eventfd and register it in loop; 0 or -1 with errno. */
int gw_sock_async_init(gw_loop_t *loop);
/** The async callback (SSL_CTX_set_async_callback; arg: the gw_posted_t `wake` of the
 * socket or of the gw_sock_job_t, set by gw_sock_open / gw_sock_job_new): may run on an
 * accelerator's thread, so it only queues the wake and wakes the loop (eventfd). */
int gw_sock_async_callback(SSL *ssl, void *arg);
/** Post the sockets whose jobs completed (the callback's queue) to the posted-work queue:
 * gw_post_run() resumes them. Called after every loop pass, never inside the batch. */
void gw_sock_async_process(void);
/** After gw_post_run(): retry the sockets that waited for a free job, one per job that
 * completed since the last call (all when the 5 ms backstop timer expired). */
void gw_sock_async_retry(void);
/** Number of sockets with a paused job (for the provider's poll hook). */
int gw_sock_async_paused(void);
/** 1 when completed jobs wait to be resumed (the loop must not block). */
int gw_sock_async_woken(void);

/* ---- async jobs outside a socket (sock/async.c) ---- */

/**
 * The async state of an SSL that its owner drives itself, not a gw_sock_t: the client
 * handshake of an upstream connection (proxy/upstream_tls.c) in a context with
 * SSL_MODE_ASYNC. Parked and woken as a socket's job is: the same wake queue and eventfd,
 * wait fds, WANT_ASYNC_JOB retry list, pause histogram, status counters and paused count
 * (so the worker polls the provider for it and never blocks long while it is paused).
 */
typedef struct gw_sock_job gw_sock_job_t;

/**
 * A job state for ssl (not owned: see gw_sock_job_release), its wakes by the job's wait
 * fds when fd_mode, else by gw_sock_async_callback (installed on ssl with the job as its
 * argument). owner is run (its run function, after the loop's batch of events) when a
 * paused call may be repeated; it must stay valid until gw_sock_job_release. Returns
 * NULL when out of memory.
 */
gw_sock_job_t *gw_sock_job_new(SSL *ssl, gw_posted_t *owner, int fd_mode);

/**
 * The SSL call of j's SSL returned SSL_get_error() == err: for SSL_ERROR_WANT_ASYNC (the
 * job paused) and SSL_ERROR_WANT_ASYNC_JOB (no free job: retried as one ends, with a
 * 5 ms backstop) j is parked and 1 is returned: make no SSL call on it until owner runs
 * with gw_sock_job_busy() == 0. Any other err: 0, nothing done.
 */
int gw_sock_job_park(gw_sock_job_t *j, int err);

/** Is j's job paused or waiting for a free job (no SSL call may be made)? */
int gw_sock_job_busy(const gw_sock_job_t *j);

/**
 * The owner is done with j, its SSL and fd (a socket in loop's epoll set). Returns 1
 * when no job is paused: j is freed, the caller frees the SSL and closes fd as usual.
 * Returns 0 when a job is paused: the SSL of a paused job is never freed, so the layer
 * keeps the SSL and fd (fd taken out of epoll), repeats the paused call at each wake
 * until the job ends (its bytes go to fd, which no other connection can have), then
 * frees the SSL, closes fd and frees j; the caller must touch none of them again.
 */
int gw_sock_job_release(gw_sock_job_t *j, int fd);

#endif
