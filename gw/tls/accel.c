/* see gw/tls/accel.h */
#define OPENSSL_SUPPRESS_DEPRECATED /* ssl_engine: the ENGINE API is deprecated in 3.0 */

#include "tls/accel.h"

#include "core/log.h"
#include "core/obs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "tlsgate/prov.h"

#define MAX_PROVIDERS 16

static struct loaded_provider {
    char *name;
    OSSL_PROVIDER *prov; /* a reference of our own, for params and the poll hook */
    int has_poll;
    int has_idle;    /* offers "idle": precomputation when the loop is about to block */
    int has_metrics; /* offers the octet string "metrics" (tlsgate_metrics_t) */
    char *signature; /* path + params as loaded, to notice changes on reload */
} loaded[MAX_PROVIDERS];
static size_t n_loaded;
static char *loaded_engines[MAX_PROVIDERS];
static size_t n_engines;


/* The text b built; aborts when memory ran out building it (as the OpenSSL
 * configuration it becomes could not be loaded anyway). */
static char *built(gw_obuf_t *b)
{
    if (b->failed)
        abort();
    return b->data;
}

static char *quoted(const char *v)
{
    size_t n = strlen(v);
    char *q = malloc(2 * n + 3);
    if (!q)
        abort();
    size_t o = 0;
    q[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"' || v[i] == '\\')
            q[o++] = '\\';
        q[o++] = v[i];
    }
    q[o++] = '"';
    q[o] = '\0';
    return q;
}

static char *signature_of(const gw_provider_conf_t *pv)
{
    gw_obuf_t b = {0};
    gw_obuf_printf(&b, "%s\n", pv->path ? pv->path : "");
    for (size_t i = 0; i < pv->n_params; i++)
        gw_obuf_printf(&b, "%s=%s\n", pv->params[i].name, pv->params[i].value);
    return built(&b);
}

/* Does a loaded provider have its int flag at offset flag (has_poll, has_idle, ...) set? */
static int any_loaded(size_t flag)
{
    for (size_t i = 0; i < n_loaded; i++)
        if (*(const int *)((const char *)&loaded[i] + flag))
            return 1;
    return 0;
}

static int find_loaded(const char *name)
{
    for (size_t i = 0; i < n_loaded; i++)
        if (strcmp(loaded[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Our own provider's parameters: only those it reads (a misspelt one would be ignored). */
static int check_tlsgate_params(const gw_conf_t *conf, const gw_provider_conf_t *pv,
                                gw_errlist_t *errs)
{
#define TG_NAME(name, env) #name,
    static const char *const known[] = {TLSGATE_PROVIDER_PARAMS(TG_NAME)};
#undef TG_NAME
    int bad = 0;
    for (size_t i = 0; i < pv->n_params; i++) {
        size_t k = 0;
        while (k < sizeof(known) / sizeof(known[0]) && strcmp(known[k], pv->params[i].name) != 0)
            k++;
        if (k == sizeof(known) / sizeof(known[0])) {
            char list[256] = "";
            for (size_t j = 0, o = 0; j < k && o < sizeof(list); j++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", j ? ", " : "", known[j]);
            gw_errlist_add(errs,
                           "%s:%d: ssl_provider: tlsgate: unknown parameter \"%s\" (it takes %s)",
                           conf->conf_file, pv->line, pv->params[i].name, list);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* Load one provider through a generated configuration. */
static int load_provider(const gw_conf_t *conf, const gw_provider_conf_t *pv, gw_errlist_t *errs)
{
    if (strcmp(pv->name, "tlsgate") == 0) {
        if (check_tlsgate_params(conf, pv, errs) != 0)
            return -1;
        if (pv->path) /* the built-in provider of that name is loaded, not a module */
            gw_log(GW_LOG_WARN, 0,
                   "%s:%d: ssl_provider: tlsgate: \"path %s\" is ignored: the tlsgate "
                   "provider is built in",
                   conf->conf_file, pv->line, pv->path);
    }
    gw_obuf_t b = {0};
    gw_obuf_printf(&b, "tlsgate_conf = tlsgate_init\n[tlsgate_init]\nproviders = "
                       "tlsgate_providers\n");
    gw_obuf_printf(&b, "[tlsgate_providers]\ndefault = tlsgate_p_default\n%s = tlsgate_p_this\n",
                   pv->name);
    gw_obuf_printf(&b, "[tlsgate_p_default]\nactivate = 1\n[tlsgate_p_this]\n");
    if (pv->path) {
        char mod[4096];
        snprintf(mod, sizeof(mod), "%s/%s.so", pv->path, pv->name);
        char *q = quoted(mod);
        gw_obuf_printf(&b, "module = %s\n", q);
        free(q);
    }
    for (size_t i = 0; i < pv->n_params; i++) {
        char *q = quoted(pv->params[i].value);
        gw_obuf_printf(&b, "%s = %s\n", pv->params[i].name, q);
        free(q);
    }
    gw_obuf_printf(&b, "activate = 1\n");
    char *text = built(&b);
    size_t len = b.len;

    ERR_clear_error();
    CONF *cnf = NCONF_new_ex(NULL, NULL);
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    long eline = 0;
    int ok = cnf && bio && NCONF_load_bio(cnf, bio, &eline) > 0 &&
             CONF_modules_load(cnf, "tlsgate_conf", 0) > 0;
    char why[1024] = "";
    if (ok && !OSSL_PROVIDER_available(NULL, pv->name)) {
        /* OpenSSL 3.0's provider module reports some failures only on its error queue */
        ok = 0;
        gw_ssl_reason(why, sizeof(why));
        if (strcmp(why, "unknown OpenSSL error") == 0) {
            /* OpenSSL 3.0 drops a provider's own init error: say what we can */
            char mod[4096];
            snprintf(mod, sizeof(mod), "%s/%s.so", pv->path ? pv->path : "", pv->name);
            int builtin = strcmp(pv->name, "tlsgate") == 0;
            if (builtin || (pv->path && access(mod, R_OK) == 0)) {
                size_t o = (size_t)snprintf(why, sizeof(why),
                                            "%s%s, but the provider's "
                                            "initialisation failed (check its parameters:",
                                            builtin ? "built in" : mod, builtin ? "" : " exists");
                for (size_t i = 0; i < pv->n_params && o < sizeof(why); i++)
                    o += (size_t)snprintf(why + o, sizeof(why) - o, " %s=%s", pv->params[i].name,
                                          pv->params[i].value);
                if (o < sizeof(why))
                    snprintf(why + o, sizeof(why) - o, "%s)", pv->n_params ? "" : " none");
            } else {
                snprintf(why, sizeof(why),
                         "not found, or its initialisation failed (looked "
                         "for %s.so in %s)",
                         pv->name, pv->path ? pv->path : "OpenSSL's module directory");
            }
        }
    }
    if (!ok && !why[0])
        gw_ssl_reason(why, sizeof(why));
    BIO_free(bio);
    NCONF_free(cnf);
    free(text);
    if (!ok) {
        gw_errlist_add(errs, "%s:%d: ssl_provider: %s: cannot load%s%s: %s", conf->conf_file,
                       pv->line, pv->name, pv->path ? " from " : "", pv->path ? pv->path : "", why);
        ERR_clear_error();
        return -1;
    }
    if (n_loaded < MAX_PROVIDERS) {
        OSSL_PROVIDER *p = OSSL_PROVIDER_load(NULL, pv->name); /* our reference */
        int has_poll = 0, has_metrics = 0, has_idle = 0;
        const OSSL_PARAM *g = p ? OSSL_PROVIDER_gettable_params(p) : NULL;
        for (; g && g->key; g++) {
            if (strcmp(g->key, "poll") == 0)
                has_poll = 1;
            if (strcmp(g->key, "idle") == 0)
                has_idle = 1;
            /* our layout only: an octet string of sizeof(tlsgate_metrics_t) (a size of 0
             * in the gettable list means "not stated"; the read checks it again) */
            if (strcmp(g->key, "metrics") == 0 && g->data_type == OSSL_PARAM_OCTET_STRING &&
                (g->data_size == 0 || g->data_size == sizeof(tlsgate_metrics_t)))
                has_metrics = 1;
        }
        loaded[n_loaded].name = strdup(pv->name);
        loaded[n_loaded].prov = p;
        loaded[n_loaded].has_poll = has_poll;
        loaded[n_loaded].has_idle = has_idle;
        loaded[n_loaded].has_metrics = has_metrics;
        loaded[n_loaded].signature = signature_of(pv);
        n_loaded++;
    }
    ERR_clear_error();
    return 0;
}

int gw_accel_load(const gw_conf_t *conf, gw_errlist_t *errs)
{
    size_t before = errs->n;
    static int builtin_added;
    /* Our own provider is linked in: `ssl_provider tlsgate;` needs no module on disk (a
     * built-in of that name also takes precedence over a `path`). */
    if (!builtin_added) {
        if (OSSL_PROVIDER_add_builtin(NULL, "tlsgate", tlsgate_provider_init))
            builtin_added = 1;
        ERR_clear_error();
    }
    for (size_t i = 0; i < conf->n_providers; i++) {
        const gw_provider_conf_t *pv = &conf->providers[i];
        int k = find_loaded(pv->name);
        if (k >= 0) {
            char *sig = signature_of(pv);
            if (strcmp(sig, loaded[k].signature) != 0)
                gw_log(GW_LOG_WARN, 0,
                       "%s:%d: ssl_provider: %s: is loaded with other "
                       "parameters; they apply after a restart, not a reload",
                       conf->conf_file, pv->line, pv->name);
            free(sig);
            continue;
        }
        load_provider(conf, pv, errs);
    }
    for (size_t i = 0; i < conf->ssl_engines.n; i++) {
        const char *id = conf->ssl_engines.v[i];
        int seen = 0;
        for (size_t k = 0; k < n_engines; k++)
            if (strcmp(loaded_engines[k], id) == 0)
                seen = 1;
        if (seen)
            continue;
        ERR_clear_error();
        ENGINE_load_builtin_engines();
        ENGINE *e = ENGINE_by_id(id);
        if (!e || !ENGINE_init(e)) {
            char why[1024];
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: ssl_engine: %s: cannot load: %s", conf->conf_file,
                           conf->ssl_engine_lines[i], id, why);
            ENGINE_free(e);
            continue;
        }
        if (!ENGINE_set_default(e, ENGINE_METHOD_ALL)) {
            char why[1024];
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: ssl_engine: %s: cannot make it the default: %s",
                           conf->conf_file, conf->ssl_engine_lines[i], id, why);
            ENGINE_finish(e);
            ENGINE_free(e);
            continue;
        }
        ENGINE_free(e); /* the functional reference from ENGINE_init keeps it loaded */
        if (n_engines < MAX_PROVIDERS)
            loaded_engines[n_engines++] = strdup(id);
    }
    if (conf->ssl_propquery) {
        ERR_clear_error();
        if (!EVP_set_default_properties(NULL, conf->ssl_propquery)) {
            char why[1024];
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s: ssl_propquery: invalid query \"%s\": %s", conf->conf_file,
                           conf->ssl_propquery, why);
        }
    }
    return errs->n > before ? -1 : 0;
}

int gw_accel_has_idle(void)
{
    return any_loaded(offsetof(struct loaded_provider, has_idle));
}

unsigned gw_accel_idle(void)
{
    unsigned left = 0;

    for (size_t i = 0; i < n_loaded; i++) {
        if (!loaded[i].has_idle)
            continue;
        unsigned v = 0;
        OSSL_PARAM params[] = {OSSL_PARAM_construct_uint("idle", &v), OSSL_PARAM_END};
        if (OSSL_PROVIDER_get_params(loaded[i].prov, params) && OSSL_PARAM_modified(&params[0]))
            left += v;
    }
    return left;
}

int gw_accel_has_poll(void)
{
    return any_loaded(offsetof(struct loaded_provider, has_poll));
}

int gw_accel_poll(int *queued, unsigned backlog)
{
    int total = 0;
    *queued = 0;
    for (size_t i = 0; i < n_loaded; i++) {
        if (!loaded[i].has_poll)
            continue;
        int done = 0, waiting = 0;
        /* "queued" is optional (our provider has it): requests left for a later pass;
         * "poll_backlog" is an input (our provider reads it, others ignore it): the work
         * this loop pass still has, so that a partial batch waits only while the loop is
         * busy with other connections (prov/README.md) */
        OSSL_PARAM params[] = {OSSL_PARAM_construct_int("poll", &done),
                               OSSL_PARAM_construct_int("queued", &waiting),
                               OSSL_PARAM_construct_uint("poll_backlog", &backlog), OSSL_PARAM_END};
        if (OSSL_PROVIDER_get_params(loaded[i].prov, params)) {
            if (done > 0)
                total += done;
            if (OSSL_PARAM_modified(&params[1]) && waiting > 0)
                *queued += waiting;
        }
    }
    return total;
}


int gw_accel_has_metrics(void)
{
    return any_loaded(offsetof(struct loaded_provider, has_metrics));
}

int gw_accel_metrics(tlsgate_metrics_t *out)
{
    if (!out)
        return 0;
    for (size_t i = 0; i < n_loaded; i++) {
        if (!loaded[i].has_metrics)
            continue;
        OSSL_PARAM params[] = {OSSL_PARAM_construct_octet_string("metrics", out, sizeof(*out)),
                               OSSL_PARAM_END};
        int ok = OSSL_PROVIDER_get_params(loaded[i].prov, params) &&
                 OSSL_PARAM_modified(&params[0]) && params[0].return_size == sizeof(*out) &&
                 out->version == TLSGATE_METRICS_VERSION && out->n_alg == TLSGATE_ALG_COUNT;
        ERR_clear_error();
        if (ok)
            return 1;
        /* another layout (or a refusal): never read this provider again */
        loaded[i].has_metrics = 0;
        gw_log(GW_LOG_INFO, 0,
               "ssl_provider %s: its \"metrics\" parameter is not the "
               "layout this tlsgate reads (version %u, %zu bytes): ignored",
               loaded[i].name, (unsigned)TLSGATE_METRICS_VERSION, sizeof(*out));
    }
    return 0;
}
