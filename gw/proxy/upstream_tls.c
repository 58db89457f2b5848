#include "proxy/upstream_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "core/log.h"
#include "sock/sock.h"
#include "tls/upstream_ctx.h"

/* One session per (context, upstream, server), per worker: the last one a server gave. */
#define SESSION_SLOTS 128

static struct {
    SSL_CTX *ctx;
    const gw_upstream_t *up;
    int peer;
    SSL_SESSION *sess;
} slots[SESSION_SLOTS];
static unsigned next_victim;

static int slot_of(SSL_CTX *ctx, const gw_upstream_t *up, int peer, int create)
{
    for (int i = 0; i < SESSION_SLOTS; i++)
        if (slots[i].ctx == ctx && slots[i].up == up && slots[i].peer == peer)
            return i;
    if (!create)
        return -1;
    for (int i = 0; i < SESSION_SLOTS; i++)
        if (!slots[i].ctx) {
            slots[i].ctx = ctx;
            slots[i].up = up;
            slots[i].peer = peer;
            return i;
        }
    int v = (int)(next_victim++ % SESSION_SLOTS);
    SSL_SESSION_free(slots[v].sess);
    slots[v].sess = NULL;
    slots[v].ctx = ctx;
    slots[v].up = up;
    slots[v].peer = peer;
    return v;
}

/* OpenSSL's new-session callback (client side): keep the newest session of the server.
 * With TLS 1.3 it comes after the handshake, in a NewSessionTicket read with the answer. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    gw_upconn_t *uc = SSL_get_app_data(ssl);
    if (!uc || !uc->up)
        return 0;
    int i = slot_of(SSL_get_SSL_CTX(ssl), uc->up, uc->peer, 1);
    SSL_SESSION_free(slots[i].sess);
    slots[i].sess = sess; /* OpenSSL's reference is ours now */
    return 1;
}

void gw_upconn_tls_init(void)
{
    gw_tls_upstream_set_session_cb(new_session);
}

/* host without its port (and an IPv6 literal without brackets) into out */
static void host_name(const char *host, char *out, size_t cap)
{
    size_t n = strlen(host);
    if (host[0] == '[') {
        const char *e = strchr(host, ']');
        n = e ? (size_t)(e - host - 1) : n - 1;
        host++;
    } else {
        const char *colon = strchr(host, ':');
        if (colon && colon == strrchr(host, ':')) /* one ':' : HOST:PORT, not bare IPv6 */
            n = (size_t)(colon - host);
    }
    if (n >= cap)
        n = cap - 1;
    memcpy(out, host, n);
    out[n] = '\0';
}

static int is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

int gw_upconn_tls_start(gw_upconn_t *uc, const gw_deploy_loc_t *d, const char *host)
{
    SSL_CTX *ctx = d->proxy_ssl_ctx;
    gw_upconn_tls_init(); /* idempotent: the session callback of this worker */
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    if (!ssl || !SSL_set_fd(ssl, uc->fd)) {
        gw_log_ssl_errors(GW_LOG_ALERT, "SSL_new (upstream)");
        SSL_free(ssl);
        return -1;
    }
    SSL_set_app_data(ssl, uc);
    SSL_set_connect_state(ssl);
    char name[256];
    host_name(d->proxy_ssl_name ? d->proxy_ssl_name : host, name, sizeof(name));
    int ip = is_ip(name);
    if (d->proxy_ssl_server_name == 1 && !ip && name[0])
        SSL_set_tlsext_host_name(ssl, name);
    if (d->proxy_ssl_verify == 1 && name[0]) {
        /* RFC 6125 name check of the certificate (nginx's ngx_ssl_check_host) */
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        if (ip)
            X509_VERIFY_PARAM_set1_ip_asc(vp, name);
        else
            SSL_set1_host(ssl, name);
    }
    if (d->proxy_ssl_session_reuse != 0) {
        int i = slot_of(ctx, uc->up, uc->peer, 0);
        if (i >= 0 && slots[i].sess)
            SSL_set_session(ssl, slots[i].sess);
    }
    if (d->proxy_ssl_async) {
        /* ssl_async on: the handshake runs in async jobs that an accelerator (our
         * provider: key share, key exchange, a client certificate's signature) pauses;
         * parked and woken by the socket layer as a client connection's are */
        SSL_set_mode(ssl, SSL_MODE_ASYNC);
        uc->job = gw_sock_job_new(ssl, uc->owner, d->proxy_ssl_async == 2);
        if (!uc->job) {
            gw_log(GW_LOG_ALERT, 0, "out of memory for an upstream TLS handshake");
            SSL_free(ssl);
            return -1;
        }
    }
    ERR_clear_error();
    uc->ssl = ssl;
    uc->tls_done = 0;
    return 0;
}

int gw_upconn_tls_handshake(gw_upconn_t *uc)
{
    if (!uc->ssl || uc->tls_done)
        return 1;
    if (uc->job && gw_sock_job_busy(uc->job))
        return 0; /* no SSL call while the job is paused: its wake runs the owner */
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(uc->ssl);
    if (r == 1) {
        uc->tls_done = 1;
        /* Only the handshake has private-key work: reads, writes and close_notify run
         * outside jobs (no job switch per record, no pause in the relay). */
        SSL_clear_mode(uc->ssl, SSL_MODE_ASYNC);
        return 1;
    }
    int e = SSL_get_error(uc->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    if (uc->job && gw_sock_job_park(uc->job, e))
        return 0;
    const gw_upstream_server_t *s = &uc->up->conf->servers[uc->peer];
    long vr = SSL_get_verify_result(uc->ssl);
    if (vr != X509_V_OK) {
        gw_log(GW_LOG_ERROR, 0, "upstream %s: SSL certificate verify error: (%ld:%s)", s->text, vr,
               X509_verify_cert_error_string(vr));
    } else if (e == SSL_ERROR_SYSCALL) {
        gw_log(GW_LOG_ERROR, errno, "upstream %s: connection ended in the TLS handshake", s->text);
    } else {
        char why[512];
        gw_ssl_reason(why, sizeof(why));
        gw_log(GW_LOG_ERROR, 0, "upstream %s: TLS handshake failed: %s", s->text, why);
    }
    ERR_clear_error();
    return -1;
}

/* send() (out, len bytes) or recv() (in, room for len; out NULL) through uc->ssl, with
 * their returns: the bytes moved; 0 at the end of a read; -1 with errno EAGAIN (TLS must
 * read or write first), EPIPE (a write failed), ECONNRESET or the socket's errno (a read
 * failed). OpenSSL's error queue is cleared before and after. */
static ssize_t tls_io(gw_upconn_t *uc, const void *out, void *in, size_t len)
{
    ERR_clear_error();
    size_t n = 0;
    int r = out ? SSL_write_ex(uc->ssl, out, len, &n) : SSL_read_ex(uc->ssl, in, len, &n);
    if (r == 1)
        return (ssize_t)n;
    int e = SSL_get_error(uc->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (out) {
        errno = EPIPE;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e == SSL_ERROR_SYSCALL && errno == 0)
        return 0; /* a FIN without close_notify: the end, as for plain TCP */
    if (e != SSL_ERROR_SYSCALL)
        errno = ECONNRESET;
    return -1;
}

ssize_t gw_upconn_send(gw_upconn_t *uc, const void *buf, size_t len)
{
    if (!uc->ssl)
        return send(uc->fd, buf, len, MSG_NOSIGNAL);
    return tls_io(uc, buf, NULL, len);
}

ssize_t gw_upconn_recv(gw_upconn_t *uc, void *buf, size_t len)
{
    if (!uc->ssl)
        return recv(uc->fd, buf, len, 0);
    return tls_io(uc, NULL, buf, len);
}

int gw_upconn_tls_close(gw_upconn_t *uc)
{
    if (!uc->ssl)
        return 0;
    if (uc->job) {
        gw_sock_job_t *j = uc->job;
        uc->job = NULL;
        if (!gw_sock_job_release(j, uc->fd)) {
            uc->ssl = NULL; /* drained by the socket layer with the socket */
            uc->fd = -1;
            uc->tls_done = 0;
            return 1;
        }
    }
    if (uc->tls_done && uc->fd >= 0) {
        ERR_clear_error();
        SSL_shutdown(uc->ssl); /* one non-blocking attempt: close_notify */
        ERR_clear_error();
    }
    SSL_free(uc->ssl);
    uc->ssl = NULL;
    uc->tls_done = 0;
    return 0;
}

void gw_upconn_shutdown_write(gw_upconn_t *uc)
{
    if (!uc->ssl) {
        shutdown(uc->fd, SHUT_WR);
        return;
    }
    ERR_clear_error();
    if (uc->tls_done)
        SSL_shutdown(uc->ssl); /* RFC 8446 §6.1: close_notify ends our direction */
    ERR_clear_error();
}
