#include "buildinfo.h"

#include "version.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "tlsgate/prov.h"

/* The provider's own answer (OSSL_PROV_PARAM_BUILDINFO: "mb8 AVX-512 IFMA capable CPU" or
 * "mb8 portable kernels"), from the built-in provider loaded into a private library
 * context so that the process's default context is left alone. */
static int ifma_available(char *info, size_t cap)
{
    snprintf(info, cap, "unknown");
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    if (!lib)
        return -1;
    int r = -1;
    OSSL_PROVIDER *p = NULL;
    if (OSSL_PROVIDER_add_builtin(lib, "tlsgate", tlsgate_provider_init) &&
        (p = OSSL_PROVIDER_load(lib, "tlsgate")) != NULL) {
        const char *bi = NULL;
        OSSL_PARAM params[] = {OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, (char **)&bi, 0),
                               OSSL_PARAM_END};
        if (OSSL_PROVIDER_get_params(p, params) && bi) {
            snprintf(info, cap, "%s", bi);
            r = strstr(bi, "IFMA capable") != NULL;
        }
        OSSL_PROVIDER_unload(p);
    }
    ERR_clear_error();
    OSSL_LIB_CTX_free(lib);
    return r;
}

static const char *yesno(const char *cmake_bool)
{
    return (strcmp(cmake_bool, "ON") == 0 || strcmp(cmake_bool, "1") == 0 ||
            strcmp(cmake_bool, "TRUE") == 0 || strcmp(cmake_bool, "YES") == 0)
               ? "on"
               : "off";
}

void gw_version_print(FILE *f, const gw_conf_t *conf, const char *conf_name)
{
    fprintf(f, "tlsgate version %s\n", TLSGATE_VERSION);
    fprintf(f, "built with %s (%s), build type %s, sanitizers (ASan+UBSan) %s, -Werror %s\n",
            OPENSSL_VERSION_TEXT, TLSGATE_BUILD_CC, TLSGATE_BUILD_TYPE,
            yesno(TLSGATE_BUILD_SANITIZE), yesno(TLSGATE_BUILD_WERROR));
    fprintf(f, "running with %s\n", OpenSSL_version(OPENSSL_VERSION));
    fprintf(f, "OpenSSL modules directory: %s\n", OPENSSL_info(OPENSSL_INFO_MODULES_DIR));
    char info[128];
    int ifma = ifma_available(info, sizeof(info));
    fprintf(f, "AVX-512 IFMA path: %s (%s)\n",
            ifma == 1   ? "available"
            : ifma == 0 ? "not available"
                        : "unknown",
            info);
    if (!conf) {
        if (conf_name)
            fprintf(f, "configuration: %s: not read\n", conf_name);
        else
            fprintf(f, "configuration: none (the embedded default loads no provider)\n");
        return;
    }
    fprintf(f, "configuration: %s\n", conf_name);
    fprintf(f, "  provider default (always loaded)\n");
    for (size_t i = 0; i < conf->n_providers; i++) {
        const gw_provider_conf_t *pv = &conf->providers[i];
        if (strcmp(pv->name, "tlsgate") == 0) {
            fprintf(f, "  provider tlsgate (built in)");
        } else {
            char mod[4200];
            snprintf(mod, sizeof(mod), "%s/%s.so",
                     pv->path ? pv->path : OPENSSL_info(OPENSSL_INFO_MODULES_DIR), pv->name);
            fprintf(f, "  provider %s (module %s%s)", pv->name, mod,
                    access(mod, R_OK) == 0 ? "" : ", not found");
        }
        for (size_t k = 0; k < pv->n_params; k++)
            fprintf(f, "%s%s=%s", k ? ", " : " params ", pv->params[k].name, pv->params[k].value);
        fputc('\n', f);
    }
    for (size_t i = 0; i < conf->ssl_engines.n; i++)
        fprintf(f, "  engine %s\n", conf->ssl_engines.v[i]);
    if (conf->ssl_propquery)
        fprintf(f, "  property query %s\n", conf->ssl_propquery);
}
