/*
 * bench/replay: a TLS handshake load generator that replays recorded client flights.
 *
 * A real TLS client does public-key work on every handshake too, so one client core tops
 * out at about 2,000-2,600 full handshakes/s here and cannot load a server core. This
 * program completes ONE real handshake with OpenSSL against the target (memory BIOs over
 * a socket, session tickets and resumption off, so the ClientHello asks for a full
 * handshake) and keeps the client's flights as raw TLS records: flight 1 = ClientHello;
 * TLS 1.2 also flight 2 = ClientKeyExchange + ChangeCipherSpec + Finished. It counts the
 * records and bytes of the server's first flight. Then, on N concurrent non-blocking
 * connections (one thread, edge-triggered epoll), it replays them:
 *
 *   TLS 1.3: connect, send the ClientHello, read until the server's first flight is in
 *            (its ServerHello, then as many encrypted records as the recorded handshake
 *            received: EncryptedExtensions, Certificate, CertificateVerify, Finished),
 *            close with a reset. The ClientHello's fixed key share makes the server do
 *            its whole part: its key share, the shared secret, the signature.
 *   TLS 1.2: connect, send the ClientHello, read until ServerHelloDone, send flight 2,
 *            read until the server reacts (an alert, bad_record_mac from OpenSSL servers,
 *            or a close), close with a reset. The Finished is stale, but the server has
 *            decrypted the premaster (RSA key exchange) or derived it (ECDHE) first.
 *
 * A handshake counts as done when the server's flight (TLS 1.3) or its reaction to
 * flight 2 (TLS 1.2) has arrived; latency runs from connect() to then. Connections that
 * fail (refused, reset, protocol error, no progress within the timeout) are counted and
 * replaced. At the end of the duration no new connection starts and those in flight may
 * finish (at most min(timeout, 2 s)); what is still open then is "abandoned" (reset, not
 * counted). The client does no public-key operation: one core loads several servers'.
 *
 * Usage: tlsgate_replay [options] HOST:PORT        (tlsgate_replay -h lists the options)
 * Output: a summary, or one line of JSON (-j) or key=value pairs (-k) for scripts.
 * Exit status: 0 when at least one handshake completed (or -r recorded one), 1 when the
 * recording failed or nothing completed, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/fd.h"

#define PROG "tlsgate_replay"

#define REC_HDR 5              /* TLS record header, bytes */
#define REC_MAX (16384 + 2048) /* largest record body accepted, bytes (TLSCiphertext) */
#define CT_CCS 20
#define CT_ALERT 21
#define CT_HANDSHAKE 22
#define CT_APPDATA 23
#define HS_SERVER_HELLO 2
#define HS_SERVER_HELLO_DONE 14
#define ALERT_BAD_RECORD_MAC 20
#define SH_PREFIX 38 /* ServerHello bytes needed: type, length, version, random */
#define MAX_EVENTS 256
#define BACKOFF_NS 10000000LL     /* pause before reconnecting after refused/other, ns */
#define SCAN_NS 5000000LL         /* timeout scan period, ns */
#define DRAIN_MAX_NS 2000000000LL /* longest wait for connections in flight at the end, ns */

/* SHA-256("HelloRetryRequest"): the ServerHello.random of a HelloRetryRequest (RFC 8446) */
static const uint8_t hrr_random[32] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

/* ---- options ---- */

typedef struct {
    const char *target;  /* HOST:PORT or [V6]:PORT */
    int tls13;           /* 1: TLS 1.3 only; 0: TLS 1.2 only */
    const char *ciphers; /* TLS 1.2 cipher list (NULL: OpenSSL's default) */
    const char *suites;  /* TLS 1.3 cipher suites (NULL: OpenSSL's default) */
    const char *groups;  /* groups, first = key share (NULL: OpenSSL's default) */
    const char *sigalgs; /* signature algorithms (NULL: OpenSSL's default) */
    const char *sni;     /* server name; NULL: HOST unless it is an address; "": none */
    int conns;           /* concurrent connections */
    double seconds;      /* replay duration, s */
    unsigned long count; /* stop after this many handshakes (0: duration only) */
    int timeout_ms;      /* per connection (and for the recorded handshake), ms */
    int json, kv, verbose, record_only;
} opts_t;

/* ---- the recording ---- */

typedef struct {
    int tls13;
    uint8_t *f1, *f2;      /* client flights 1 and 2 (TLS 1.2), raw TLS records */
    size_t f1_len, f2_len; /* bytes */
    unsigned srv_records;  /* records in the server's first flight */
    unsigned srv_enc;      /* of which application_data (TLS 1.3: encrypted handshake) */
    size_t srv_bytes;      /* bytes of the server's first flight, record headers included */
    char version[16], cipher[64], group[32], key[40], sig[48];
    char srv_layout[256]; /* the server flight's records: "type(body bytes) ..." */
} rec_t;

/* ---- the replay ---- */

/* Incremental parser of the server's records on one connection. */
typedef struct {
    uint8_t hdr[REC_HDR];
    unsigned hdr_have;      /* bytes of hdr[] filled; REC_HDR: inside a record body */
    unsigned type;          /* content type of the current record */
    size_t body_len;        /* its body length, bytes */
    size_t body_left;       /* bytes of the body still to come */
    unsigned records;       /* records started */
    unsigned enc;           /* application_data records completed */
    size_t bytes;           /* bytes of completed records, headers included */
    uint8_t msg[SH_PREFIX]; /* plaintext handshake message: header + body prefix */
    unsigned msg_have;      /* bytes of msg[] filled (< 4: inside the header) */
    size_t msg_left;        /* body bytes of the current handshake message still to come */
    unsigned msgs;          /* plaintext handshake messages started */
    int shd;                /* TLS 1.2: ServerHelloDone seen */
    uint8_t alert[2];
    unsigned alert_have;
    const char *why; /* protocol error description */
} parse_t;

enum { S_IDLE, S_CONNECTING, S_ACTIVE };
enum { EV_NONE, EV_FLIGHT, EV_ALERT, EV_PROTO };
enum { E_REFUSED, E_RESET, E_TIMEOUT, E_PROTO, E_OTHER, E_KINDS };

typedef struct {
    int fd;                  /* -1: no socket */
    int state;               /* S_* */
    int phase;               /* 1: waiting for the server's first flight; 2: for its reaction */
    int64_t t0;              /* connect() time, ns (CLOCK_MONOTONIC) */
    int64_t wake;            /* S_IDLE: when to connect again, ns */
    const uint8_t *out;      /* flight being sent */
    size_t out_len, out_off; /* bytes */
    parse_t p;
} conn_t;

typedef struct {
    uint64_t done;                 /* handshakes completed */
    uint64_t started;              /* connections started */
    uint64_t err[E_KINDS];         /* failed connections by kind */
    uint64_t abandoned;            /* still in flight when the run ended */
    uint64_t alerts, bad_mac;      /* TLS 1.2: reactions to flight 2 that were alerts */
    uint64_t closes;               /* TLS 1.2: reactions that were a close or reset */
    size_t flight_min, flight_max; /* bytes of the server's first flight (TLS 1.3) */
    int last_alert;                /* alert description that failed a connection, -1: none */
    int last_errno;                /* errno of the last "other" error, 0: none */
    const char *last_proto;        /* last protocol error */
} stats_t;

typedef struct {
    const opts_t *o;
    const rec_t *rec;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int epfd;
    conn_t *conns;
    int inflight;   /* connections with a socket */
    int accepting;  /* new connections may start */
    int64_t now;    /* clock of the current event batch, ns */
    int64_t t_last; /* time of the last completed handshake, ns */
    stats_t st;
    uint32_t *lat; /* latencies, µs */
    size_t nlat, caplat;
    uint8_t buf[16384];
} run_t;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = g_stop + 1; /* a second signal ends the drain at once */
}

/** CLOCK_MONOTONIC in ns. */
static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((format(printf, 1, 2))) static void err_msg(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG ": error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The first queued OpenSSL error as text ("no OpenSSL error" if none); clears the queue. */
static const char *ssl_err_text(void)
{
    static char buf[256];
    unsigned long e = ERR_get_error();
    if (e == 0)
        return "no OpenSSL error";
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

/* ======================================================================================
 * Recording: one real handshake through memory BIOs, the socket I/O done here.
 * ====================================================================================== */

/* Wait until fd is ready for ev or deadline (ns) passes: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ns();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = ev};
        int r = poll(&pfd, 1, (int)((left + 999999) / 1000000));
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* A non-blocking TCP connection to sa before deadline (ns): the fd, or -1 with errno. */
static int connect_to(const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) != 0) {
        if (errno != EINPROGRESS)
            goto fail;
        int r = wait_fd(fd, POLLOUT, deadline), err = 0;
        socklen_t el = sizeof(err);
        if (r == 0)
            errno = ETIMEDOUT;
        if (r <= 0)
            goto fail;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
            goto fail;
        if (err != 0) {
            errno = err;
            goto fail;
        }
    }
    return fd;
fail:
    return gw_fd_fail(fd);
}

/* Send n bytes before deadline (ns): 0, or -1 with errno. */
static int send_all(int fd, const uint8_t *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        int r = wait_fd(fd, POLLOUT, deadline);
        if (r == 0)
            errno = ETIMEDOUT;
        if (r <= 0)
            return -1;
    }
    return 0;
}

typedef struct {
    int fd;
    int64_t deadline; /* ns */
    size_t have;      /* bytes in buf */
    uint8_t buf[2 * (REC_HDR + REC_MAX)];
} rbuf_t;

/*
 * Make buf start with one whole TLS record. Returns its length in bytes (header
 * included), 0 if the server closed the connection first, -1 on error or timeout (errno).
 */
static long next_record(rbuf_t *r)
{
    for (;;) {
        if (r->have >= REC_HDR) {
            size_t len = REC_HDR + ((size_t)r->buf[3] << 8 | r->buf[4]);
            if (len > REC_HDR + REC_MAX) {
                errno = EPROTO;
                return -1;
            }
            if (r->have >= len)
                return (long)len;
        }
        ssize_t n = recv(r->fd, r->buf + r->have, sizeof(r->buf) - r->have, 0);
        if (n > 0) {
            r->have += (size_t)n;
            continue;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        int w = wait_fd(r->fd, POLLIN, r->deadline);
        if (w == 0)
            errno = ETIMEDOUT;
        if (w <= 0)
            return -1;
    }
}

/* Append "type(len) " for each record of a flight to out (cap bytes); returns 0, or -1 if
 * the bytes are not whole records. */
static int records_layout(const uint8_t *p, size_t n, char *out, size_t cap, int *has_hs)
{
    size_t used = strlen(out);
    *has_hs = 0;
    while (n > 0) {
        if (n < REC_HDR)
            return -1;
        size_t len = (size_t)p[3] << 8 | p[4];
        if (n < REC_HDR + len)
            return -1;
        if (p[0] == CT_HANDSHAKE)
            *has_hs = 1;
        if (used < cap) {
            int w = snprintf(out + used, cap - used, "%s%u(%zu)", used ? " " : "", p[0], len);
            used += w > 0 ? (size_t)w : 0;
        }
        p += REC_HDR + len;
        n -= REC_HDR + len;
    }
    return 0;
}

/* Names of the negotiated parameters, for the report and the driver's checks. */
static void describe(SSL *ssl, rec_t *rec)
{
    snprintf(rec->version, sizeof(rec->version), "%s", SSL_get_version(ssl));
    snprintf(rec->cipher, sizeof(rec->cipher), "%s", SSL_get_cipher_name(ssl));

    int gnid = SSL_get_negotiated_group(ssl);
    const char *g = gnid > 0 && !(gnid & TLSEXT_nid_unknown) ? OBJ_nid2sn(gnid) : NULL;
    EVP_PKEY *tmp = NULL;
    if (g == NULL && SSL_get_peer_tmp_key(ssl, &tmp) && tmp != NULL)
        g = EVP_PKEY_get0_type_name(tmp);
    snprintf(rec->group, sizeof(rec->group), "%s", g ? g : "none");
    EVP_PKEY_free(tmp);

    X509 *cert = SSL_get0_peer_certificate(ssl);
    EVP_PKEY *pk = cert ? X509_get0_pubkey(cert) : NULL;
    char gname[32] = ""; /* a group name ("prime256v1"): "EC-" + it fits rec->key */
    size_t gl = 0;
    if (pk == NULL)
        snprintf(rec->key, sizeof(rec->key), "none");
    else if (EVP_PKEY_get_base_id(pk) == EVP_PKEY_RSA)
        snprintf(rec->key, sizeof(rec->key), "RSA-%d", EVP_PKEY_get_bits(pk));
    else if (EVP_PKEY_get_base_id(pk) == EVP_PKEY_EC &&
             EVP_PKEY_get_group_name(pk, gname, sizeof(gname), &gl))
        snprintf(rec->key, sizeof(rec->key), "EC-%s", gname);
    else
        snprintf(rec->key, sizeof(rec->key), "%s", EVP_PKEY_get0_type_name(pk));

    int tnid = 0, hnid = 0;
    if (SSL_get_peer_signature_type_nid(ssl, &tnid) && tnid != NID_undef) {
        const char *t = tnid == EVP_PKEY_RSA       ? "RSA-PKCS1"
                        : tnid == EVP_PKEY_RSA_PSS ? "RSA-PSS"
                        : tnid == EVP_PKEY_EC      ? "ECDSA"
                                                   : OBJ_nid2sn(tnid);
        const char *h =
            SSL_get_peer_signature_nid(ssl, &hnid) && hnid != NID_undef ? OBJ_nid2sn(hnid) : "none";
        snprintf(rec->sig, sizeof(rec->sig), "%s+%s", t, h);
    } else {
        snprintf(rec->sig, sizeof(rec->sig), "none");
    }
}

/* The -C, -S, -g and -s lists (NULL: OpenSSL's default); 1, or 0 when OpenSSL rejects one.
 * Functions, not macros (set1_groups_list and set1_sigalgs_list are SSL_CTX_ctrl macros),
 * so that record() applies them from one table. */
static int set_cipher_list(SSL_CTX *ctx, const char *s)
{
    return SSL_CTX_set_cipher_list(ctx, s);
}

static int set_ciphersuites(SSL_CTX *ctx, const char *s)
{
    return SSL_CTX_set_ciphersuites(ctx, s);
}

static int set_groups_list(SSL_CTX *ctx, const char *s)
{
    return (int)SSL_CTX_set1_groups_list(ctx, s);
}

static int set_sigalgs_list(SSL_CTX *ctx, const char *s)
{
    return (int)SSL_CTX_set1_sigalgs_list(ctx, s);
}

/*
 * One real handshake with the target; fills rec. Returns 0, or -1 after printing why.
 * The whole handshake must finish within o->timeout_ms.
 */
static int record(const opts_t *o, const struct sockaddr *sa, socklen_t salen, rec_t *rec)
{
    int ret = -1, fd = -1;
    SSL_CTX *ctx = NULL;
    SSL *ssl = NULL;
    rbuf_t *rb = NULL;
    int64_t deadline = mono_ns() + (int64_t)o->timeout_ms * 1000000;
    int ver = o->tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;

    memset(rec, 0, sizeof(*rec));
    rec->tls13 = o->tls13;
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL || !SSL_CTX_set_min_proto_version(ctx, ver) ||
        !SSL_CTX_set_max_proto_version(ctx, ver)) {
        err_msg("cannot create the TLS client context: %s", ssl_err_text());
        goto out;
    }
    /* a full handshake every time: no tickets, no session cache, nothing to resume */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    const struct {
        const char *list, *what;
        int (*set)(SSL_CTX *, const char *);
    } lists[] = {
        {o->ciphers, "cipher list", set_cipher_list},
        {o->suites, "TLS 1.3 cipher suites", set_ciphersuites},
        {o->groups, "groups", set_groups_list},
        {o->sigalgs, "signature algorithms", set_sigalgs_list},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        if (lists[i].list && !lists[i].set(ctx, lists[i].list)) {
            err_msg("%s '%s' rejected: %s", lists[i].what, lists[i].list, ssl_err_text());
            goto out;
        }
    ssl = SSL_new(ctx);
    BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
    if (ssl == NULL || rbio == NULL || wbio == NULL) {
        BIO_free(rbio);
        BIO_free(wbio);
        err_msg("out of memory");
        goto out;
    }
    SSL_set_bio(ssl, rbio, wbio);
    SSL_set_connect_state(ssl);
    if (o->sni && *o->sni && !SSL_set_tlsext_host_name(ssl, o->sni)) {
        err_msg("server name '%s' rejected: %s", o->sni, ssl_err_text());
        goto out;
    }

    fd = connect_to(sa, salen, deadline);
    if (fd < 0) {
        err_msg("cannot connect to %s: %s", o->target, strerror(errno));
        goto out;
    }
    rb = malloc(sizeof(*rb));
    if (rb == NULL) {
        err_msg("out of memory");
        goto out;
    }
    rb->fd = fd;
    rb->deadline = deadline;
    rb->have = 0;

    int flights = 0, srv_done = 0;
    for (;;) {
        ERR_clear_error();
        int r = SSL_do_handshake(ssl);
        size_t pend = BIO_ctrl_pending(wbio);
        if (pend > 0) {
            uint8_t *out = malloc(pend);
            if (out == NULL || BIO_read(wbio, out, (int)pend) != (int)pend) {
                free(out);
                err_msg("cannot read the client flight from its memory BIO");
                goto out;
            }
            if (send_all(fd, out, pend, deadline) != 0) {
                free(out);
                err_msg("sending to %s during the recorded handshake: %s", o->target,
                        strerror(errno));
                goto out;
            }
            flights++;
            if (flights == 1) {
                rec->f1 = out;
                rec->f1_len = pend;
            } else if (flights == 2) {
                /* the client answers once the server's first flight is complete */
                char lay[128] = "";
                int hs = 0;
                srv_done = 1;
                if (records_layout(out, pend, lay, sizeof(lay), &hs) != 0) {
                    free(out);
                    err_msg("client flight 2 is not whole TLS records");
                    goto out;
                }
                if (o->tls13 && hs) {
                    /* a second ClientHello: the server sent a HelloRetryRequest */
                    free(out);
                    err_msg("%s answered with a HelloRetryRequest (the ClientHello's key "
                            "share is not a group it accepts): put one of its groups first "
                            "with -g",
                            o->target);
                    goto out;
                }
                if (o->tls13) {
                    free(out);
                } else {
                    rec->f2 = out;
                    rec->f2_len = pend;
                }
            } else {
                free(out); /* close_notify, or anything after the handshake */
            }
        }
        if (r == 1)
            break;
        int e = SSL_get_error(ssl, r);
        if (e != SSL_ERROR_WANT_READ) {
            err_msg("the recorded handshake with %s failed: %s", o->target, ssl_err_text());
            goto out;
        }
        long rl = next_record(rb);
        if (rl <= 0) {
            if (rl == 0)
                err_msg("%s closed the connection during the recorded handshake%s", o->target,
                        flights == 1 && !srv_done ? " (it rejected the ClientHello?)" : "");
            else
                err_msg("receiving from %s during the recorded handshake: %s", o->target,
                        errno == ETIMEDOUT ? "timed out" : strerror(errno));
            goto out;
        }
        if (!srv_done) {
            size_t used = strlen(rec->srv_layout);
            rec->srv_records++;
            rec->srv_bytes += (size_t)rl;
            if (rb->buf[0] == CT_APPDATA)
                rec->srv_enc++;
            if (used < sizeof(rec->srv_layout))
                snprintf(rec->srv_layout + used, sizeof(rec->srv_layout) - used, "%s%u(%ld)",
                         used ? " " : "", rb->buf[0], rl - REC_HDR);
        }
        if (BIO_write(rbio, rb->buf, (int)rl) != (int)rl) {
            err_msg("cannot feed a server record to the memory BIO");
            goto out;
        }
        rb->have -= (size_t)rl;
        memmove(rb->buf, rb->buf + rl, rb->have);
    }
    if (rec->f1 == NULL || !srv_done || (!o->tls13 && rec->f2 == NULL)) {
        err_msg("the recorded handshake with %s completed without the expected flights", o->target);
        goto out;
    }
    if (o->tls13 && rec->srv_enc == 0) {
        err_msg("%s sent no encrypted records in its TLS 1.3 flight", o->target);
        goto out;
    }
    describe(ssl, rec);
    /* be polite: close_notify, then a normal close */
    if (SSL_shutdown(ssl) >= 0) {
        size_t pend = BIO_ctrl_pending(wbio);
        uint8_t tmp[256];
        if (pend > 0 && pend <= sizeof(tmp) && BIO_read(wbio, tmp, (int)pend) == (int)pend)
            (void)send_all(fd, tmp, pend, deadline);
    }
    ret = 0;
out:
    if (fd >= 0)
        close(fd);
    free(rb);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (ret != 0) {
        free(rec->f1);
        free(rec->f2);
        rec->f1 = rec->f2 = NULL;
    }
    return ret;
}

/* ======================================================================================
 * Replay
 * ====================================================================================== */

static int proto(parse_t *p, const char *why)
{
    p->why = why;
    return EV_PROTO;
}

/* Plaintext handshake bytes of the server's first flight: walk the message headers,
 * check the ServerHello (not a HelloRetryRequest), note ServerHelloDone. */
static int hs_feed(const rec_t *rec, parse_t *p, const uint8_t *b, size_t n)
{
    if (p->shd && n > 0)
        return proto(p, "bytes after ServerHelloDone");
    while (n > 0) {
        if (p->msg_have < 4) {
            size_t k = 4 - p->msg_have < n ? 4 - p->msg_have : n;
            memcpy(p->msg + p->msg_have, b, k);
            p->msg_have += (unsigned)k;
            b += k;
            n -= k;
            if (p->msg_have < 4)
                return EV_NONE;
            p->msgs++;
            p->msg_left = (size_t)p->msg[1] << 16 | (size_t)p->msg[2] << 8 | p->msg[3];
            if (p->msgs == 1 && p->msg[0] != HS_SERVER_HELLO)
                return proto(p, "the server's first handshake message is not a ServerHello");
            if (p->msg[0] == HS_SERVER_HELLO_DONE) {
                p->shd = 1;
                if (p->msg_left != 0 || n != 0)
                    return proto(p, "bytes after ServerHelloDone");
                return EV_NONE;
            }
        } else {
            size_t k = p->msg_left < n ? p->msg_left : n;
            if (p->msg_have < SH_PREFIX) {
                size_t c = SH_PREFIX - p->msg_have < k ? SH_PREFIX - p->msg_have : k;
                memcpy(p->msg + p->msg_have, b, c);
                p->msg_have += (unsigned)c;
                if (p->msgs == 1 && p->msg_have == SH_PREFIX && rec->tls13 &&
                    memcmp(p->msg + 6, hrr_random, sizeof(hrr_random)) == 0)
                    return proto(p, "HelloRetryRequest (the recorded key share was refused)");
            }
            p->msg_left -= k;
            b += k;
            n -= k;
        }
        if (p->msg_have >= 4 && p->msg_left == 0)
            p->msg_have = 0; /* next message */
    }
    return EV_NONE;
}

/*
 * Feed n received bytes of connection c to its record parser. Returns EV_FLIGHT (TLS 1.3:
 * the server's first flight is complete; TLS 1.2: ServerHelloDone arrived), EV_ALERT (an
 * alert record, its description in p->alert[1]), EV_PROTO (p->why) or EV_NONE. Bytes after
 * an event are ignored.
 */
static int parse(const rec_t *rec, conn_t *c, const uint8_t *b, size_t n)
{
    parse_t *p = &c->p;
    for (;;) {
        if (p->hdr_have < REC_HDR) {
            if (n == 0)
                return EV_NONE;
            size_t k = REC_HDR - p->hdr_have < n ? REC_HDR - p->hdr_have : n;
            memcpy(p->hdr + p->hdr_have, b, k);
            p->hdr_have += (unsigned)k;
            b += k;
            n -= k;
            if (p->hdr_have < REC_HDR)
                return EV_NONE;
            p->type = p->hdr[0];
            p->body_len = p->body_left = (size_t)p->hdr[3] << 8 | p->hdr[4];
            if (p->hdr[1] != 3 || p->body_len > REC_MAX)
                return proto(p, "malformed TLS record header");
            int ok;
            if (p->type == CT_ALERT)
                ok = 1;
            else if (c->phase == 2)
                ok = 0; /* TLS 1.2: the server must not accept a stale Finished */
            else if (p->records == 0)
                ok = p->type == CT_HANDSHAKE;
            else if (rec->tls13)
                ok = p->type == CT_APPDATA || p->type == CT_CCS ||
                     (p->type == CT_HANDSHAKE && p->enc == 0);
            else
                ok = p->type == CT_HANDSHAKE;
            if (!ok)
                return proto(p, c->phase == 2 ? "the server accepted a stale Finished"
                                              : "unexpected record type in the server's flight");
            p->records++;
            p->alert_have = 0;
        }
        size_t take = p->body_left < n ? p->body_left : n;
        if (p->type == CT_HANDSHAKE && c->phase == 1) {
            if (hs_feed(rec, p, b, take) == EV_PROTO)
                return EV_PROTO;
        } else if (p->type == CT_ALERT) {
            for (size_t i = 0; i < take && p->alert_have < 2; i++)
                p->alert[p->alert_have++] = b[i];
        }
        b += take;
        n -= take;
        p->body_left -= take;
        if (p->body_left > 0)
            return EV_NONE;
        /* a whole record */
        p->hdr_have = 0;
        p->bytes += REC_HDR + p->body_len;
        if (p->type == CT_ALERT)
            return p->alert_have == 2 ? EV_ALERT : proto(p, "short alert record");
        if (p->type == CT_APPDATA && ++p->enc == rec->srv_enc)
            return EV_FLIGHT;
        if (p->shd)
            return EV_FLIGHT;
    }
}

static void lat_push(run_t *run, int64_t ns)
{
    if (run->nlat == run->caplat) {
        size_t cap = run->caplat ? run->caplat * 2 : 65536;
        uint32_t *l = realloc(run->lat, cap * sizeof(*l));
        if (l == NULL)
            return; /* keep counting, stop sampling */
        run->lat = l;
        run->caplat = cap;
    }
    int64_t us = ns / 1000;
    run->lat[run->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Close c's socket (a reset: SO_LINGER 0 was set) and leave the slot idle. */
static void conn_close(run_t *run, conn_t *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
        run->inflight--;
    }
    c->state = S_IDLE;
    c->wake = INT64_MAX;
}

static void conn_start(run_t *run, conn_t *c);

/* Close c and connect again after delay_ns (0: now) if new connections may start. */
static void conn_again(run_t *run, conn_t *c, int64_t delay_ns)
{
    conn_close(run, c);
    if (!run->accepting)
        return;
    if (delay_ns == 0)
        conn_start(run, c);
    else
        c->wake = run->now + delay_ns;
}

static void conn_fail(run_t *run, conn_t *c, int kind, int err)
{
    run->st.err[kind]++;
    if (kind == E_OTHER)
        run->st.last_errno = err;
    conn_again(run, c, kind == E_REFUSED || kind == E_OTHER ? BACKOFF_NS : 0);
}

static int errno_kind(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return E_REFUSED;
    case ECONNRESET:
    case EPIPE:
    case ECONNABORTED:
        return E_RESET;
    case ETIMEDOUT:
        return E_TIMEOUT;
    default:
        return E_OTHER;
    }
}

static void conn_done(run_t *run, conn_t *c)
{
    run->st.done++;
    run->t_last = run->now;
    lat_push(run, run->now - c->t0);
    conn_again(run, c, 0);
}

static void conn_start(run_t *run, conn_t *c)
{
    const opts_t *o = run->o;
    c->state = S_IDLE;
    c->wake = INT64_MAX;
    if (!run->accepting || (o->count && run->st.done + (uint64_t)run->inflight >= o->count))
        return;
    int fd = socket(run->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        run->st.err[E_OTHER]++;
        run->st.last_errno = errno;
        c->wake = run->now + BACKOFF_NS;
        return;
    }
    c->fd = fd;
    run->inflight++;
    run->st.started++;
    static const struct linger rst = {.l_onoff = 1, .l_linger = 0};
    int one = 1;
    /* close() resets: no FIN handshake, no TIME_WAIT left on this side */
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&c->p, 0, sizeof(c->p));
    c->phase = 1;
    c->out = run->rec->f1;
    c->out_len = run->rec->f1_len;
    c->out_off = 0;
    c->t0 = mono_ns();
    if (connect(fd, (const struct sockaddr *)&run->addr, run->addrlen) != 0 &&
        errno != EINPROGRESS) {
        int e = errno;
        run->st.err[errno_kind(e)]++;
        if (errno_kind(e) == E_OTHER)
            run->st.last_errno = e;
        conn_close(run, c);
        c->wake = run->now + BACKOFF_NS;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.u32 = (uint32_t)(c - run->conns)};
    if (epoll_ctl(run->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        run->st.err[E_OTHER]++;
        run->st.last_errno = errno;
        conn_close(run, c);
        c->wake = run->now + BACKOFF_NS;
        return;
    }
    c->state = S_CONNECTING;
}

/* Send what is left of c's flight. Returns 0 (sent, or waiting for EPOLLOUT), -1 if the
 * connection failed (already closed). */
static int conn_flush(run_t *run, conn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w > 0) {
            c->out_off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        conn_fail(run, c, errno_kind(w < 0 ? errno : EPIPE), errno);
        return -1;
    }
    return 0;
}

/* Handle one parser event on c. Returns 1 if c was closed. */
static int conn_event(run_t *run, conn_t *c, int ev)
{
    const rec_t *rec = run->rec;
    if (ev == EV_NONE)
        return 0;
    if (ev == EV_PROTO) {
        run->st.last_proto = c->p.why;
        conn_fail(run, c, E_PROTO, 0);
        return 1;
    }
    if (ev == EV_ALERT) {
        if (c->phase == 2) {
            run->st.alerts++;
            if (c->p.alert[1] == ALERT_BAD_RECORD_MAC)
                run->st.bad_mac++;
            conn_done(run, c);
        } else {
            run->st.last_alert = c->p.alert[1];
            run->st.last_proto = "the server sent an alert instead of its flight";
            conn_fail(run, c, E_PROTO, 0);
        }
        return 1;
    }
    /* EV_FLIGHT */
    if (rec->tls13) {
        size_t b = c->p.bytes;
        if (b < run->st.flight_min)
            run->st.flight_min = b;
        if (b > run->st.flight_max)
            run->st.flight_max = b;
        if (b < rec->srv_bytes / 2) {
            run->st.last_proto = "server flight less than half the recorded size";
            conn_fail(run, c, E_PROTO, 0);
            return 1;
        }
        conn_done(run, c);
        return 1;
    }
    /* TLS 1.2: ServerHelloDone; send flight 2 and wait for the server's reaction */
    memset(&c->p, 0, sizeof(c->p));
    c->phase = 2;
    c->out = rec->f2;
    c->out_len = rec->f2_len;
    c->out_off = 0;
    return conn_flush(run, c) < 0;
}

/* Read what c received (edge-triggered: until a short read, or EOF if the peer hung up). */
static void conn_read(run_t *run, conn_t *c, uint32_t events)
{
    for (;;) {
        ssize_t n = recv(c->fd, run->buf, sizeof(run->buf), 0);
        if (n > 0) {
            if (conn_event(run, c, parse(run->rec, c, run->buf, (size_t)n)))
                return;
            if ((size_t)n < sizeof(run->buf) && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        int e = n == 0 ? ECONNRESET : errno;
        if (c->phase == 2 && c->out_off == c->out_len && (n == 0 || e == ECONNRESET)) {
            /* TLS 1.2: the server closed after reading flight 2 */
            run->st.closes++;
            conn_done(run, c);
        } else {
            conn_fail(run, c, errno_kind(e), e);
        }
        return;
    }
}

static void conn_io(run_t *run, conn_t *c, uint32_t events)
{
    if (c->state == S_CONNECTING) {
        if (events & EPOLLERR) {
            int err = 0;
            socklen_t el = sizeof(err);
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
            conn_fail(run, c, errno_kind(err ? err : ECONNREFUSED), err);
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLHUP)))
            return;
        c->state = S_ACTIVE;
        if (conn_flush(run, c) < 0)
            return;
    } else if (c->state != S_ACTIVE) {
        return;
    } else if ((events & EPOLLOUT) && c->out_off < c->out_len) {
        if (conn_flush(run, c) < 0)
            return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        conn_read(run, c, events);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0..1) of sorted v[0..n), µs. */
static uint32_t pct(const uint32_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(q * (double)n + 0.999999);
    return v[i == 0 ? 0 : (i > n ? n - 1 : i - 1)];
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- output ---- */

typedef struct {
    FILE *f;
    int json, n;
} out_t;

__attribute__((format(printf, 4, 5))) static void field(out_t *o, const char *key, int str,
                                                        const char *fmt, ...)
{
    char v[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    if (o->json) {
        fprintf(o->f, "%s\"%s\":", o->n ? "," : "{", key);
        if (str) {
            fputc('"', o->f);
            for (const char *s = v; *s; s++) {
                if (*s == '"' || *s == '\\')
                    fputc('\\', o->f);
                fputc((unsigned char)*s < 0x20 ? ' ' : *s, o->f);
            }
            fputc('"', o->f);
        } else {
            fputs(v, o->f);
        }
    } else {
        /* key=value; spaces in values become '_' so that the line splits on spaces */
        fprintf(o->f, "%s%s=", o->n ? " " : "", key);
        for (const char *s = v; *s; s++)
            fputc(*s == ' ' ? '_' : *s, o->f);
    }
    o->n++;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [options] HOST:PORT\n"
               "Record one real TLS handshake with HOST:PORT, then replay the client's flights\n"
               "(ClientHello; TLS 1.2: also ClientKeyExchange+CCS+Finished) on many connections.\n"
               "  -V 1.2|1.3    TLS version (default 1.3)\n"
               "  -C LIST       TLS 1.2 cipher list (e.g. ECDHE-RSA-AES256-GCM-SHA384)\n"
               "  -S LIST       TLS 1.3 cipher suites (e.g. TLS_AES_256_GCM_SHA384)\n"
               "  -g LIST       groups, the first one is the key share (e.g. X25519)\n"
               "  -s LIST       signature algorithms (e.g. rsa_pss_rsae_sha256)\n"
               "  -n NAME       server name (SNI); default HOST unless it is an address; '' none\n"
               "  -c N          concurrent connections (default 256)\n"
               "  -d SECONDS    replay duration (default 10)\n"
               "  -N COUNT      stop after COUNT handshakes (or at the end of -d)\n"
               "  -t MS         per-connection timeout, also for the recording (default 5000)\n"
               "  -r            record only: print what was recorded and exit\n"
               "  -j            one line of JSON on stdout\n"
               "  -k            one line of key=value pairs on stdout\n"
               "  -v            also print the recorded flights' records\n"
               "  -h            this help\n");
}

/* The value s of option -opt: a number in min..max (a whole one when whole) in *out and 0;
 * else "-opt: what, not 's'" on stderr and -1. NaN is out of every range. */
static int opt_num(int opt, const char *s, double min, double max, int whole, const char *what,
                   double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max) ||
        (whole && v != (double)(unsigned long)v)) {
        err_msg("-%c: %s, not '%s'", opt, what, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Split HOST:PORT / [V6]:PORT into host and port (caps in bytes). 0 or -1. */
static int split_target(const char *t, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *h = t, *hend, *p;
    if (*t == '[') {
        h = t + 1;
        hend = strchr(h, ']');
        if (hend == NULL || hend[1] != ':')
            return -1;
        p = hend + 2;
    } else {
        hend = strrchr(t, ':');
        if (hend == NULL || strchr(t, ':') != hend)
            return -1;
        p = hend + 1;
    }
    if (hend == h || *p == '\0' || (size_t)(hend - h) >= hcap || strlen(p) >= pcap)
        return -1;
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = '\0';
    strcpy(port, p);
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {.tls13 = 1, .conns = 256, .seconds = 10, .timeout_ms = 5000};
    int sni_set = 0, opt;
    double v;

    while ((opt = getopt(argc, argv, "V:C:S:g:s:n:c:d:N:t:rjkvh")) != -1) {
        switch (opt) {
        case 'V':
            if (!strcmp(optarg, "1.3") || !strcasecmp(optarg, "TLSv1.3"))
                o.tls13 = 1;
            else if (!strcmp(optarg, "1.2") || !strcasecmp(optarg, "TLSv1.2"))
                o.tls13 = 0;
            else {
                err_msg("-V: 1.2 or 1.3, not '%s'", optarg);
                return 2;
            }
            break;
        case 'C':
            o.ciphers = optarg;
            break;
        case 'S':
            o.suites = optarg;
            break;
        case 'g':
            o.groups = optarg;
            break;
        case 's':
            o.sigalgs = optarg;
            break;
        case 'n':
            o.sni = optarg;
            sni_set = 1;
            break;
        case 'c':
            if (opt_num(opt, optarg, 1, 100000, 1, "connections, 1..100000", &v) != 0)
                return 2;
            o.conns = (int)v;
            break;
        case 'd':
            if (opt_num(opt, optarg, 0.01, 86400, 0, "seconds, 0.01..86400", &v) != 0)
                return 2;
            o.seconds = v;
            break;
        case 'N':
            if (opt_num(opt, optarg, 1, 1e12, 1, "a count >= 1", &v) != 0)
                return 2;
            o.count = (unsigned long)v;
            break;
        case 't':
            if (opt_num(opt, optarg, 1, 3600000, 1, "milliseconds, 1..3600000", &v) != 0)
                return 2;
            o.timeout_ms = (int)v;
            break;
        case 'r':
            o.record_only = 1;
            break;
        case 'j':
            o.json = 1;
            break;
        case 'k':
            o.kv = 1;
            break;
        case 'v':
            o.verbose = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    o.target = argv[optind];
    char host[256], port[32];
    if (split_target(o.target, host, sizeof(host), port, sizeof(port)) != 0) {
        err_msg("target must be HOST:PORT or [ADDRESS]:PORT, not '%s'", o.target);
        return 2;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gr = getaddrinfo(host, port, &hints, &ai);
    if (gr != 0) {
        err_msg("cannot resolve %s: %s", o.target, gai_strerror(gr));
        return 1;
    }
    if (!sni_set) {
        struct in6_addr a6;
        if (inet_pton(AF_INET, host, &a6) != 1 && inet_pton(AF_INET6, host, &a6) != 1)
            o.sni = host;
    }

    run_t *run = calloc(1, sizeof(*run));
    if (run == NULL) {
        err_msg("out of memory");
        return 1;
    }
    memcpy(&run->addr, ai->ai_addr, ai->ai_addrlen);
    run->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    signal(SIGPIPE, SIG_IGN);

    rec_t rec;
    if (record(&o, (const struct sockaddr *)&run->addr, run->addrlen, &rec) != 0)
        return 1;
    if (!o.json && !o.kv) {
        printf("recorded: %s %s, group %s, server key %s, signature %s\n", rec.version, rec.cipher,
               rec.group, rec.key, rec.sig);
        printf("  client flight 1: %zu bytes%s", rec.f1_len, rec.tls13 ? "" : "; flight 2: ");
        if (!rec.tls13)
            printf("%zu bytes", rec.f2_len);
        printf("; server flight: %u records (%u encrypted), %zu bytes\n", rec.srv_records,
               rec.srv_enc, rec.srv_bytes);
        if (o.verbose) {
            char l1[128] = "", l2[128] = "";
            int hs;
            records_layout(rec.f1, rec.f1_len, l1, sizeof(l1), &hs);
            if (rec.f2)
                records_layout(rec.f2, rec.f2_len, l2, sizeof(l2), &hs);
            printf("  records as type(body bytes): client flight 1: %s%s%s; server flight: %s\n",
                   l1, rec.f2 ? "; client flight 2: " : "", l2, rec.srv_layout);
        }
        fflush(stdout);
    }
    if (o.record_only && !o.json && !o.kv)
        return 0;

    /* ---- replay ---- */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)o.conns + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < (rlim_t)o.conns + 16) {
            err_msg("-c %d needs more open files than the limit (%llu)", o.conns,
                    (unsigned long long)rl.rlim_cur);
            return 1;
        }
    }
    run->o = &o;
    run->rec = &rec;
    run->st.flight_min = SIZE_MAX;
    run->st.last_alert = -1;
    run->conns = calloc((size_t)o.conns, sizeof(conn_t));
    run->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (run->conns == NULL || run->epfd < 0) {
        err_msg("cannot set up the event loop: %s", strerror(errno));
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    double cpu0 = o.record_only ? 0 : cpu_seconds();
    int64_t t_start = mono_ns(), t_end = t_start + (int64_t)(o.seconds * 1e9);
    int64_t drain_end = 0, t_stop = t_start, next_scan = t_start + SCAN_NS;
    int64_t drain_ns = (int64_t)o.timeout_ms * 1000000;
    if (drain_ns > DRAIN_MAX_NS)
        drain_ns = DRAIN_MAX_NS;
    run->now = t_start;
    run->accepting = !o.record_only;
    for (int i = 0; i < o.conns; i++) {
        run->conns[i].fd = -1;
        conn_start(run, &run->conns[i]);
    }
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        run->now = mono_ns();
        if (run->accepting &&
            (run->now >= t_end || g_stop || (o.count && run->st.done >= o.count))) {
            run->accepting = 0; /* the end: let the connections in flight finish */
            drain_end = run->now + drain_ns;
            t_stop = run->now;
        }
        if (!run->accepting && (run->inflight == 0 || run->now >= drain_end || g_stop > 1))
            break;
        int64_t wait_ns = next_scan - run->now;
        if (run->accepting && t_end - run->now < wait_ns)
            wait_ns = t_end - run->now;
        int n =
            epoll_wait(run->epfd, evs, MAX_EVENTS, wait_ns > 0 ? (int)(wait_ns / 1000000) + 1 : 0);
        if (n < 0 && errno != EINTR) {
            err_msg("epoll_wait: %s", strerror(errno));
            break;
        }
        run->now = mono_ns();
        for (int i = 0; i < n; i++) {
            conn_t *c = &run->conns[evs[i].data.u32];
            if (c->fd >= 0)
                conn_io(run, c, evs[i].events);
        }
        if (run->now >= next_scan) {
            int64_t tmo = (int64_t)o.timeout_ms * 1000000;
            for (int i = 0; i < o.conns; i++) {
                conn_t *c = &run->conns[i];
                if (c->fd >= 0 && run->now - c->t0 > tmo)
                    conn_fail(run, c, E_TIMEOUT, 0);
                else if (c->fd < 0 && run->accepting && run->now >= c->wake)
                    conn_start(run, c);
            }
            next_scan = run->now + SCAN_NS;
        }
    }
    for (int i = 0; i < o.conns; i++) {
        if (run->conns[i].fd >= 0) {
            run->st.abandoned++;
            conn_close(run, &run->conns[i]);
        }
    }
    /* the measured time: until the end of the run, or the last handshake of the drain */
    if (run->st.done > 0 && run->t_last > t_stop)
        t_stop = run->t_last;
    double secs = (double)(t_stop - t_start) / 1e9;
    double cpu = o.record_only ? 0 : cpu_seconds() - cpu0;
    double wall = (double)(mono_ns() - t_start) / 1e9;

    /* ---- report ---- */
    qsort(run->lat, run->nlat, sizeof(*run->lat), cmp_u32);
    uint32_t p50 = pct(run->lat, run->nlat, 0.50), p90 = pct(run->lat, run->nlat, 0.90),
             p99 = pct(run->lat, run->nlat, 0.99), pmax = run->nlat ? run->lat[run->nlat - 1] : 0;
    const stats_t *st = &run->st;
    uint64_t errors = 0;
    for (int k = 0; k < E_KINDS; k++)
        errors += st->err[k];
    double rate = secs > 0 ? (double)st->done / secs : 0;
    double cpu_pct = wall > 0 ? 100.0 * cpu / wall : 0;
    size_t fmin = st->flight_min == SIZE_MAX ? 0 : st->flight_min;

    if (o.json || o.kv) {
        out_t out = {.f = stdout, .json = o.json};
        field(&out, "target", 1, "%s", o.target);
        field(&out, "version", 1, "%s", rec.version);
        field(&out, "cipher", 1, "%s", rec.cipher);
        field(&out, "group", 1, "%s", rec.group);
        field(&out, "server_key", 1, "%s", rec.key);
        field(&out, "signature", 1, "%s", rec.sig);
        field(&out, "client_flight1_bytes", 0, "%zu", rec.f1_len);
        field(&out, "client_flight2_bytes", 0, "%zu", rec.f2_len);
        field(&out, "server_flight_records", 0, "%u", rec.srv_records);
        field(&out, "server_flight_encrypted", 0, "%u", rec.srv_enc);
        field(&out, "server_flight_bytes", 0, "%zu", rec.srv_bytes);
        field(&out, "conns", 0, "%d", o.conns);
        field(&out, "seconds", 0, "%.3f", secs);
        field(&out, "handshakes", 0, "%llu", (unsigned long long)st->done);
        field(&out, "hs_per_s", 0, "%.1f", rate);
        field(&out, "started", 0, "%llu", (unsigned long long)st->started);
        field(&out, "errors", 0, "%llu", (unsigned long long)errors);
        field(&out, "err_refused", 0, "%llu", (unsigned long long)st->err[E_REFUSED]);
        field(&out, "err_reset", 0, "%llu", (unsigned long long)st->err[E_RESET]);
        field(&out, "err_timeout", 0, "%llu", (unsigned long long)st->err[E_TIMEOUT]);
        field(&out, "err_protocol", 0, "%llu", (unsigned long long)st->err[E_PROTO]);
        field(&out, "err_other", 0, "%llu", (unsigned long long)st->err[E_OTHER]);
        field(&out, "abandoned", 0, "%llu", (unsigned long long)st->abandoned);
        field(&out, "tls12_alerts", 0, "%llu", (unsigned long long)st->alerts);
        field(&out, "tls12_bad_record_mac", 0, "%llu", (unsigned long long)st->bad_mac);
        field(&out, "tls12_closes", 0, "%llu", (unsigned long long)st->closes);
        field(&out, "flight_bytes_min", 0, "%zu", fmin);
        field(&out, "flight_bytes_max", 0, "%zu", st->flight_max);
        field(&out, "p50_us", 0, "%u", p50);
        field(&out, "p90_us", 0, "%u", p90);
        field(&out, "p99_us", 0, "%u", p99);
        field(&out, "max_us", 0, "%u", pmax);
        field(&out, "client_cpu_s", 0, "%.3f", cpu);
        field(&out, "client_cpu_pct", 0, "%.1f", cpu_pct);
        field(&out, "last_error", 1, "%s",
              st->last_proto   ? st->last_proto
              : st->last_errno ? strerror(st->last_errno)
                               : "");
        fputs(o.json ? "}\n" : "\n", stdout);
    } else if (!o.record_only) {
        printf("replayed %.2f s on %d connections: %llu handshakes, %.1f handshakes/s\n", secs,
               o.conns, (unsigned long long)st->done, rate);
        printf("  errors: %llu (refused %llu, reset %llu, timeout %llu, protocol %llu, "
               "other %llu); abandoned at the end: %llu\n",
               (unsigned long long)errors, (unsigned long long)st->err[E_REFUSED],
               (unsigned long long)st->err[E_RESET], (unsigned long long)st->err[E_TIMEOUT],
               (unsigned long long)st->err[E_PROTO], (unsigned long long)st->err[E_OTHER],
               (unsigned long long)st->abandoned);
        if (rec.tls13)
            printf("  server flights: %zu..%zu bytes\n", fmin, st->flight_max);
        else
            printf("  server reactions to flight 2: %llu alerts (%llu bad_record_mac), "
                   "%llu closes\n",
                   (unsigned long long)st->alerts, (unsigned long long)st->bad_mac,
                   (unsigned long long)st->closes);
        printf("  latency (connect to done), us: p50 %u  p90 %u  p99 %u  max %u\n", p50, p90, p99,
               pmax);
        printf("  client CPU: %.2f s, %.1f%% of one core\n", cpu, cpu_pct);
    }
    if (st->err[E_PROTO] > 0)
        fprintf(stderr, PROG ": %llu protocol errors, last: %s%s%s\n",
                (unsigned long long)st->err[E_PROTO], st->last_proto ? st->last_proto : "?",
                st->last_alert >= 0 ? ", alert " : "",
                st->last_alert >= 0 ? SSL_alert_desc_string_long(st->last_alert) : "");
    if (st->err[E_OTHER] > 0)
        fprintf(stderr, PROG ": %llu other errors, last: %s%s\n",
                (unsigned long long)st->err[E_OTHER], strerror(st->last_errno),
                st->last_errno == EADDRNOTAVAIL
                    ? " (no free local port: widen net.ipv4.ip_local_port_range)"
                    : "");
    if (!o.record_only && st->done == 0)
        err_msg("no handshake completed in %.1f s (%llu connections failed)", wall,
                (unsigned long long)errors);
    int rc = o.record_only || st->done > 0 ? 0 : 1;
    close(run->epfd);
    free(run->conns);
    free(run->lat);
    free(run);
    free(rec.f1);
    free(rec.f2);
    return rc;
}
