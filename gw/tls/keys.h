/*
 * Private key files: read without leaving copies in ordinary memory, decrypted with
 * `ssl_password_file` passphrases, permission check.
 */
#ifndef GW_TLS_KEYS_H
#define GW_TLS_KEYS_H

#include <stddef.h>

#include <openssl/ssl.h>

/**
 * Load the PEM private key at path into ctx, for the certificate loaded last (as
 * SSL_CTX_use_PrivateKey_file, which also checks that key and certificate match).
 *
 * The file is read with read(2) into OpenSSL's secure heap (no stdio buffer keeps a copy;
 * with `ssl_secure_heap` off it is an ordinary allocation) and wiped before it is freed.
 * An encrypted key is decrypted with the passphrases of password_file, one a line (CR LF
 * or LF; empty lines skipped; at most 1023 bytes each), tried in order as nginx's
 * ssl_password_file; the passphrases are wiped after use. Without password_file an
 * encrypted key fails (OpenSSL never prompts on a terminal). A key file that its group or
 * others may read adds a warning (gw_warn_add, core/privs.h) naming where (e.g.
 * "FILE:LINE").
 *
 * Returns 1, or 0 with why (cap bytes, NUL-terminated) saying what failed, OpenSSL's
 * reasons included.
 */
int gw_tls_use_key_file(SSL_CTX *ctx, const char *path, const char *password_file,
                        const char *where, char *why, size_t cap);

#endif
