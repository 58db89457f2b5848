/* see prov/upcalls.h */
#include "upcalls.h"

#include <errno.h>
#include <stdlib.h>

#include <openssl/params.h>

/* The function of `in` with this id, or NULL. */
static void (*core_fn(const OSSL_DISPATCH *in, int id))(void)
{
    for (; in != NULL && in->function_id != 0; in++)
        if (in->function_id == id)
            return in->function;
    return NULL;
}

void tg_core_init(struct tg_core *core, const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in)
{
    core->handle = handle;
    core->get_params = (OSSL_FUNC_core_get_params_fn *)core_fn(in, OSSL_FUNC_CORE_GET_PARAMS);
    core->thread_start = (OSSL_FUNC_core_thread_start_fn *)core_fn(in, OSSL_FUNC_CORE_THREAD_START);
    core->new_error = (OSSL_FUNC_core_new_error_fn *)core_fn(in, OSSL_FUNC_CORE_NEW_ERROR);
    core->set_error_debug =
        (OSSL_FUNC_core_set_error_debug_fn *)core_fn(in, OSSL_FUNC_CORE_SET_ERROR_DEBUG);
    core->vset_error = (OSSL_FUNC_core_vset_error_fn *)core_fn(in, OSSL_FUNC_CORE_VSET_ERROR);
}

void tg_core_vraise(const struct tg_core *core, const char *file, int line, const char *func,
                    uint32_t reason, const char *fmt, va_list ap)
{
    if (core == NULL || core->new_error == NULL || core->vset_error == NULL)
        return;
    core->new_error(core->handle);
    if (core->set_error_debug != NULL)
        core->set_error_debug(core->handle, file, line, func);
    core->vset_error(core->handle, reason, fmt, ap);
}

int tg_core_settings(const struct tg_core *core, struct tg_setting *s, size_t n)
{
    OSSL_PARAM q[17];
    const char *env;
    size_t i;

    if (n > 16)
        return 0;
    for (i = 0; i < n; i++) {
        s[i].value = NULL;
        q[i] = OSSL_PARAM_construct_utf8_ptr(s[i].name, (char **)&s[i].value, 0);
    }
    q[n] = OSSL_PARAM_construct_end();
    if (core->get_params != NULL && !core->get_params(core->handle, q))
        return 0;
    for (i = 0; i < n; i++)
        if (s[i].env != NULL && (env = getenv(s[i].env)) != NULL)
            s[i].value = env;
    return 1;
}

int tg_parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (s == NULL || *s == '\0' || s[0] == '-')
        return 0;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return 0;
    *out = v;
    return 1;
}
