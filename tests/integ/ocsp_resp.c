/*
 * ocsp_resp ISSUER_CRT ISSUER_KEY LEAF_CRT OUT_DER THIS_UPDATE_S NEXT_UPDATE_S
 * Test helper for test_stapling.py: a successful DER OCSP response for LEAF (status good),
 * signed by ISSUER, with thisUpdate = now + THIS_UPDATE_S and nextUpdate = now +
 * NEXT_UPDATE_S (seconds, may be negative) - the times `openssl ocsp` cannot produce
 * (an expired response, one from the future). Exit 0, or 1 with a message.
 */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>

static void *load(const char *path, int key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    void *r = key ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL)
                  : (void *)PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: ocsp_resp ISSUER_CRT ISSUER_KEY LEAF_CRT OUT THIS_S NEXT_S\n");
        return 2;
    }
    X509 *issuer = load(argv[1], 0), *leaf = load(argv[3], 0);
    EVP_PKEY *key = load(argv[2], 1);
    OCSP_BASICRESP *bs = OCSP_BASICRESP_new();
    OCSP_CERTID *id = issuer && leaf ? OCSP_cert_to_id(NULL, leaf, issuer) : NULL;
    ASN1_TIME *thisupd = X509_gmtime_adj(NULL, atol(argv[5]));
    ASN1_TIME *nextupd = X509_gmtime_adj(NULL, atol(argv[6]));
    OCSP_RESPONSE *resp = NULL;
    int ok = issuer && leaf && key && bs && id && thisupd && nextupd &&
             OCSP_basic_add1_status(bs, id, V_OCSP_CERTSTATUS_GOOD, 0, NULL, thisupd, nextupd) &&
             OCSP_basic_sign(bs, issuer, key, EVP_sha256(), NULL, 0) &&
             (resp = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, bs)) != NULL;
    FILE *out = ok ? fopen(argv[4], "wb") : NULL;
    unsigned char *der = NULL;
    int len = ok ? i2d_OCSP_RESPONSE(resp, &der) : -1;
    ok = out && len > 0 && fwrite(der, 1, (size_t)len, out) == (size_t)len;
    if (out && fclose(out) != 0)
        ok = 0;
    if (!ok) {
        fprintf(stderr, "ocsp_resp: failed\n");
        ERR_print_errors_fp(stderr);
    }
    OPENSSL_free(der);
    OCSP_RESPONSE_free(resp);
    ASN1_TIME_free(thisupd);
    ASN1_TIME_free(nextupd);
    OCSP_CERTID_free(id);
    OCSP_BASICRESP_free(bs);
    EVP_PKEY_free(key);
    X509_free(issuer);
    X509_free(leaf);
    return ok ? 0 : 1;
}
