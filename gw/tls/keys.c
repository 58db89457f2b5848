/* Private key files; see keys.h. */
#include "tls/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "core/log.h"
#include "core/privs.h"

#define KEY_FILE_MAX (1 << 20) /* bytes: a PEM key is a few KiB */
#define PASSWORD_FILE_MAX (1 << 16)
#define PASSWORD_MAX 1023

/* Read a whole file into the secure heap (size + 1 bytes, NUL-terminated). Returns the
 * buffer (free with OPENSSL_secure_clear_free(buf, *len + 1)) or NULL with why set. */
static char *read_secret_file(const char *path, size_t max, size_t *len, struct stat *st, char *why,
                              size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size > (off_t)max) {
        snprintf(why, cap, "%s", !S_ISREG(st->st_mode) ? "not a regular file" : "file too large");
        close(fd);
        return NULL;
    }
    size_t n = (size_t)st->st_size;
    char *buf = OPENSSL_secure_malloc(n + 1);
    if (!buf) {
        snprintf(why, cap, "out of secure memory (ssl_secure_heap)");
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, cap, "%s", r < 0 ? strerror(errno) : "file shrank while read");
            close(fd);
            OPENSSL_secure_clear_free(buf, n + 1);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return buf;
}

struct pw_arg {
    const char *pw; /* NULL: no passphrase (fail instead of prompting) */
    int asked;
};

static int pw_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    struct pw_arg *a = u;
    a->asked = 1;
    if (!a->pw)
        return -1;
    size_t n = strlen(a->pw);
    if (n > (size_t)size)
        return -1;
    memcpy(buf, a->pw, n);
    return (int)n;
}

int gw_tls_use_key_file(SSL_CTX *ctx, const char *path, const char *password_file,
                        const char *where, char *why, size_t cap)
{
    size_t klen = 0, plen = 0;
    struct stat st;
    ERR_clear_error();
    char *key = read_secret_file(path, KEY_FILE_MAX, &klen, &st, why, cap);
    if (!key)
        return 0;
    if (st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH))
        gw_warn_add("%s: ssl_certificate_key: \"%s\" is accessible to %s (mode %04o): "
                    "chmod 600 it",
                    where, path, (st.st_mode & (S_IROTH | S_IWOTH)) ? "everyone" : "its group",
                    (unsigned)(st.st_mode & 07777));
    char *pws = NULL;
    if (password_file) {
        struct stat pst;
        char pwhy[256];
        pws = read_secret_file(password_file, PASSWORD_FILE_MAX, &plen, &pst, pwhy, sizeof(pwhy));
        if (!pws) {
            snprintf(why, cap, "cannot read ssl_password_file \"%s\": %s", password_file, pwhy);
            OPENSSL_secure_clear_free(key, klen + 1);
            return 0;
        }
        /* lines become NUL-terminated strings in place */
        for (size_t i = 0; i < plen; i++)
            if (pws[i] == '\n' || pws[i] == '\r')
                pws[i] = '\0';
    }
    EVP_PKEY *pkey = NULL;
    int tried = 0, too_long = 0, asked = 0;
    size_t off = 0;
    for (;;) {
        struct pw_arg a = {NULL, 0};
        if (pws) {
            while (off < plen && pws[off] == '\0')
                off++;
            if (off >= plen)
                break;
            a.pw = pws + off;
            off += strlen(a.pw) + 1;
            if (strlen(a.pw) > PASSWORD_MAX) {
                too_long = 1;
                continue;
            }
        }
        ERR_clear_error();
        BIO *bio = BIO_new_mem_buf(key, (int)klen);
        if (!bio)
            break;
        pkey = PEM_read_bio_PrivateKey_ex(bio, NULL, pw_cb, &a, NULL, NULL);
        BIO_free(bio);
        tried++;
        asked = a.asked;
        if (pkey || !pws || !a.asked)
            break; /* done, or failed for another reason than the passphrase */
    }
    if (pws)
        OPENSSL_secure_clear_free(pws, plen + 1);
    OPENSSL_secure_clear_free(key, klen + 1);
    if (!pkey) {
        char r[512];
        gw_ssl_reason(r, sizeof(r));
        if (pws && tried == 0)
            snprintf(why, cap, "no passphrase in \"%s\"%s", password_file,
                     too_long ? " (lines longer than 1023 bytes are skipped)" : "");
        else if (pws && asked)
            snprintf(why, cap, "%s (tried %d passphrase(s) from \"%s\")", r, tried, password_file);
        else
            snprintf(why, cap, "%s", r);
        return 0;
    }
    int ok = SSL_CTX_use_PrivateKey(ctx, pkey);
    EVP_PKEY_free(pkey);
    if (ok != 1) {
        gw_ssl_reason(why, cap);
        return 0;
    }
    return 1;
}
