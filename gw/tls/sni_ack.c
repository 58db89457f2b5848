#include "tls/sni_ack.h"

#include <pthread.h>

static int ex_index = -1;
static pthread_once_t ex_once = PTHREAD_ONCE_INIT;

static void ex_init(void)
{
    ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* RFC 6066 §3 through OpenSSL: SSL_TLSEXT_ERR_OK acknowledges the name, NOACK does not
 * (a name that selected nothing: the default server answers, as nginx; no alert). */
static int servername_cb(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    if (ex_index >= 0 && SSL_get_ex_data(ssl, ex_index) != NULL)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}

void gw_tls_sni_ack_setup(SSL_CTX *ctx)
{
    pthread_once(&ex_once, ex_init);
    SSL_CTX_set_tlsext_servername_callback(ctx, servername_cb);
}

int gw_tls_sni_used(SSL *ssl)
{
    pthread_once(&ex_once, ex_init);
    if (ex_index < 0)
        return -1;
    static char mark;
    return SSL_set_ex_data(ssl, ex_index, &mark) == 1 ? 0 : -1;
}
