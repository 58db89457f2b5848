/*
 * What a provider takes from OpenSSL's core at init (the `in` table of OSSL_provider_init):
 * the handle, the configuration reader, the thread-stop hook and the error upcalls; raising
 * an error through them, reading settings (the provider's configuration section, then the
 * environment) and parsing a number setting. Provider scaffolding, the same for any
 * provider: shared by the tlsgate provider (prov/prov.c) and the test-only fake
 * accelerator (tests/fakeaccel), as waitfd.h is.
 */
#ifndef TG_UPCALLS_H
#define TG_UPCALLS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/core_dispatch.h>

struct tg_core {
    const OSSL_CORE_HANDLE *handle;
    OSSL_FUNC_core_get_params_fn *get_params;
    OSSL_FUNC_core_thread_start_fn *thread_start;
    OSSL_FUNC_core_new_error_fn *new_error;
    OSSL_FUNC_core_set_error_debug_fn *set_error_debug;
    OSSL_FUNC_core_vset_error_fn *vset_error;
};

/** Fills core with handle and the functions of the core's table `in` (NULL: ones it lacks). */
void tg_core_init(struct tg_core *core, const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in);

/**
 * Raises an error with the provider's reason code and a printf-style message on the
 * application's error queue, at file:line in func. Does nothing when core is NULL or the
 * core offers no error functions.
 */
void tg_core_vraise(const struct tg_core *core, const char *file, int line, const char *func,
                    uint32_t reason, const char *fmt, va_list ap);

/** A setting: its key in the configuration section, the environment variable that
 * overrides it, and the value found (NULL: neither has it). The strings are the core's or
 * the environment's: valid until the configuration is freed or the variable changes. */
struct tg_setting {
    const char *name, *env;
    const char *value;
};

/**
 * Reads the n (at most 16) settings s: the configuration section's value through the core
 * (when it offers get_params), then the environment's, which wins. Returns 1, or 0 when
 * n is too large or the core refuses the request.
 */
int tg_core_settings(const struct tg_core *core, struct tg_setting *s, size_t n);

/**
 * Parses s, a decimal number 0..max without sign, spaces or trailing characters, into
 * *out. Returns 1, or 0 (out untouched) when s is NULL, empty or not such a number.
 */
int tg_parse_ulong(const char *s, unsigned long max, unsigned long *out);

#endif
