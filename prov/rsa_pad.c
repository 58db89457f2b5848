/*
 * RSA encodings around the batched private-key operation: EMSA-PKCS1-v1_5 and EMSA-PSS
 * for signatures (RFC 8017 §9.2, §9.1.1), and the TLS premaster check for decryption
 * (RFC 5246 §7.4.7.1). Other decodings (PKCS#1 v1.5 type 2, OAEP) use OpenSSL's own
 * constant-time functions (asym_cipher.c).
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "prov.h"

static int is_md5_sha1(const char *mdname)
{
    return OPENSSL_strcasecmp(mdname, "MD5-SHA1") == 0;
}

int tg_pad_pkcs1_sign(TG_PROV *prov, uint8_t *em, size_t emlen, const char *mdname,
                      const uint8_t *tbs, size_t tbslen)
{
    unsigned char *der = NULL;
    const uint8_t *t = tbs;
    size_t tlen = tbslen;
    int ok = 0;

    if (mdname != NULL && *mdname != '\0' && !is_md5_sha1(mdname)) {
        /* T = DigestInfo ::= SEQUENCE { AlgorithmIdentifier (OID, NULL), OCTET STRING } */
        EVP_MD *md = EVP_MD_fetch(prov->libctx, mdname, NULL);
        X509_SIG *sig = NULL;
        X509_ALGOR *alg = NULL;
        ASN1_OCTET_STRING *dig = NULL;
        ASN1_OBJECT *oid;
        int derlen = -1;

        if (md != NULL && (size_t)EVP_MD_get_size(md) == tbslen &&
            (oid = OBJ_nid2obj(EVP_MD_get_type(md))) != NULL && OBJ_length(oid) > 0 &&
            (sig = X509_SIG_new()) != NULL) {
            X509_SIG_getm(sig, &alg, &dig);
            if (X509_ALGOR_set0(alg, oid, V_ASN1_NULL, NULL) &&
                ASN1_OCTET_STRING_set(dig, tbs, (int)tbslen))
                derlen = i2d_X509_SIG(sig, &der);
        }
        X509_SIG_free(sig);
        EVP_MD_free(md);
        if (derlen <= 0)
            return 0;
        t = der;
        tlen = (size_t)derlen;
    } else if (mdname != NULL && is_md5_sha1(mdname) && tbslen != 36) {
        return 0;
    }
    if (emlen >= tlen + 11) {
        em[0] = 0x00;
        em[1] = 0x01;
        memset(em + 2, 0xFF, emlen - tlen - 3);
        em[emlen - tlen - 1] = 0x00;
        memcpy(em + emlen - tlen, t, tlen);
        ok = 1;
    }
    OPENSSL_free(der);
    return ok;
}

/* MGF1 (RFC 8017 §B.2.1): mask ^= MGF1(seed, masklen). */
static int mgf1_xor(const EVP_MD *md, uint8_t *mask, size_t masklen, const uint8_t *seed,
                    size_t seedlen)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    uint8_t h[EVP_MAX_MD_SIZE], ctr[4];
    size_t done = 0, i, hlen = (size_t)EVP_MD_get_size(md);
    uint32_t counter = 0;
    int ok = c != NULL;

    while (ok && done < masklen) {
        ctr[0] = (uint8_t)(counter >> 24);
        ctr[1] = (uint8_t)(counter >> 16);
        ctr[2] = (uint8_t)(counter >> 8);
        ctr[3] = (uint8_t)counter;
        ok = EVP_DigestInit_ex(c, md, NULL) && EVP_DigestUpdate(c, seed, seedlen) &&
             EVP_DigestUpdate(c, ctr, 4) && EVP_DigestFinal_ex(c, h, NULL);
        for (i = 0; ok && i < hlen && done < masklen; i++)
            mask[done++] ^= h[i];
        counter++;
    }
    EVP_MD_CTX_free(c);
    return ok;
}

int tg_pad_pss(TG_PROV *prov, uint8_t *em, size_t emlen, unsigned modbits, const char *mdname,
               const char *mgf1name, int saltlen, const uint8_t *tbs, size_t tbslen)
{
    static const uint8_t zeros[8] = {0};
    EVP_MD *md = NULL, *mgf1 = NULL;
    EVP_MD_CTX *c = NULL;
    uint8_t *e = em, *db, *h;
    size_t hlen, elen, slen, dblen;
    unsigned embits = modbits - 1;
    int ok = 0;

    if (modbits < 16 || emlen != (modbits + 7) / 8 || mdname == NULL || *mdname == '\0')
        return 0;
    md = EVP_MD_fetch(prov->libctx, mdname, NULL);
    mgf1 =
        EVP_MD_fetch(prov->libctx, mgf1name != NULL && *mgf1name != '\0' ? mgf1name : mdname, NULL);
    if (md == NULL || mgf1 == NULL || (size_t)EVP_MD_get_size(md) != tbslen)
        goto done;
    hlen = tbslen;
    elen = (embits + 7) / 8;
    if (elen < emlen) { /* modbits - 1 is a multiple of 8: EM is one byte shorter */
        *e++ = 0;
    }
    if (saltlen == -1)
        slen = hlen;
    else if (saltlen == -2 || saltlen == -3)
        slen = elen >= hlen + 2 ? elen - hlen - 2 : 0;
    else if (saltlen >= 0)
        slen = (size_t)saltlen;
    else
        goto done;
    if (elen < hlen + slen + 2)
        goto done;
    dblen = elen - hlen - 1;
    db = e;
    h = e + dblen;
    /* DB = PS || 0x01 || salt, the salt drawn straight into place */
    memset(db, 0, dblen - slen - 1);
    db[dblen - slen - 1] = 0x01;
    if (slen > 0 && RAND_bytes_ex(prov->libctx, db + dblen - slen, slen, 0) <= 0)
        goto done;
    /* H = Hash(0x00 x 8 || mHash || salt) */
    c = EVP_MD_CTX_new();
    if (c == NULL || !EVP_DigestInit_ex(c, md, NULL) || !EVP_DigestUpdate(c, zeros, 8) ||
        !EVP_DigestUpdate(c, tbs, tbslen) || !EVP_DigestUpdate(c, db + dblen - slen, slen) ||
        !EVP_DigestFinal_ex(c, h, NULL))
        goto done;
    if (!mgf1_xor(mgf1, db, dblen, h, hlen))
        goto done;
    db[0] &= (uint8_t)(0xFFu >> (8 * elen - embits));
    e[elen - 1] = 0xBC;
    ok = 1;
done:
    EVP_MD_CTX_free(c);
    EVP_MD_free(md);
    EVP_MD_free(mgf1);
    return ok;
}

/* All-ones when a == b, else zero, without a branch. */
static unsigned ct_eq8(unsigned a, unsigned b)
{
    unsigned x = (a ^ b) & 0xFFu;

    return 0u - ((x - 1u) >> 31);
}

int tg_pad_tls_premaster(TG_PROV *prov, uint8_t out[48], const uint8_t *em, size_t emlen,
                         unsigned client_version, unsigned alt_version)
{
    uint8_t rnd[48];
    unsigned good, version_good, alt_good;
    size_t i, zero_at;

    if (emlen < 48 + 11)
        return 0;
    /* The random premaster is drawn first, whatever the ciphertext: no timing signal. */
    if (RAND_priv_bytes_ex(prov->libctx, rnd, sizeof(rnd), 0) <= 0)
        return 0;
    zero_at = emlen - 48 - 1;
    good = ct_eq8(em[0], 0x00) & ct_eq8(em[1], 0x02);
    for (i = 2; i < zero_at; i++)
        good &= ~ct_eq8(em[i], 0x00);
    good &= ct_eq8(em[zero_at], 0x00);
    version_good = ct_eq8(em[zero_at + 1], client_version >> 8) &
                   ct_eq8(em[zero_at + 2], client_version & 0xFFu);
    /* SSL_OP_TLS_ROLLBACK_BUG: libssl passes the negotiated version as the alternative */
    alt_good = ct_eq8(em[zero_at + 1], alt_version >> 8) &
               ct_eq8(em[zero_at + 2], alt_version & 0xFFu) & (0u - (unsigned)(alt_version != 0));
    good &= version_good | alt_good;
    for (i = 0; i < 48; i++)
        out[i] = (uint8_t)((em[zero_at + 1 + i] & good) | (rnd[i] & ~good));
    OPENSSL_cleanse(rnd, sizeof(rnd));
    return 1;
}
