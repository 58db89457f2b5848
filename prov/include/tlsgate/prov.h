/*
 * The tlsgate OpenSSL provider as a built-in provider (prov/README.md).
 *
 * A program linked with the `tgprov` library registers it before loading it:
 *     OSSL_PROVIDER_add_builtin(libctx, "tlsgate", tlsgate_provider_init);
 *     OSSL_PROVIDER_load(libctx, "tlsgate");
 * The module build (build/tlsgate.so) exports the same function as OSSL_provider_init.
 */
#ifndef TLSGATE_PROV_PUBLIC_H
#define TLSGATE_PROV_PUBLIC_H

#include <openssl/core.h>

/**
 * The provider's OSSL_provider_init_fn (OpenSSL provider(7)). Reads the configuration
 * (flush_us, poll_mode, enable; environment overrides), loads the default provider into
 * a private library context and looks up the implementations it delegates to. Returns 1
 * with *out and *provctx set, or 0 with an error raised through the core (bad
 * configuration value, default provider unavailable, no memory).
 */
int tlsgate_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                          const OSSL_DISPATCH **out, void **provctx);

#endif
