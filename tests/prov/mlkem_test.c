/*
 * prov_mlkem: the hybrid TLS groups X25519MLKEM768 and SecP256r1MLKEM768 of the tlsgate
 * provider (prov/kem.c) at the EVP level, the way libssl 3.0 drives a provider's KEM group:
 * the client's keygen and encoded public key, the server's paramgen + set encoded public
 * key + encapsulate, the client's decapsulate; the layouts of draft-ietf-tls-ecdhe-mlkem
 * (share and ciphertext lengths, which half of the secret a tampered part changes), the
 * FIPS 203 §7.2 check and bad lengths and points refused, the TLS-GROUP capability, and
 * encapsulations in 8 ASYNC jobs computed as one mlkem768 batch (TLSGATE_ADAPTIVE=off).
 * Interop with independent implementations (Chromium) is tests/prov/hybrid_interop.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/async.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "prov_env.h"
#include "tlsgate/prov.h"

static struct prov_env g_env; /* lib: tlsgate + default */

struct grp {
    const char *name;
    unsigned id;
    int p256;
    size_t share, ct; /* client share, server share */
};
static const struct grp g_groups[2] = {
    {"X25519MLKEM768", 0x11EC, 0, 1184 + 32, 1088 + 32},
    {"SecP256r1MLKEM768", 0x11EB, 1, 65 + 1184, 65 + 1088},
};

static int setup(void **state)
{
    (void)state;
    return prov_env_load(&g_env, 0) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    prov_env_free(&g_env);
    return 0;
}

static EVP_PKEY *gen(const struct grp *g, int keypair)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(g_env.lib, g->name, NULL);
    EVP_PKEY *k = NULL;
    assert_non_null(c);
    if (keypair)
        assert_int_equal(EVP_PKEY_keygen_init(c), 1);
    else
        assert_int_equal(EVP_PKEY_paramgen_init(c), 1);
    assert_int_equal(EVP_PKEY_CTX_set_group_name(c, g->name), 1);
    if (keypair)
        assert_int_equal(EVP_PKEY_keygen(c, &k), 1);
    else
        assert_int_equal(EVP_PKEY_paramgen(c, &k), 1);
    EVP_PKEY_CTX_free(c);
    return k;
}

/* server side: the peer key from a share; NULL when refused */
static EVP_PKEY *server_key(const struct grp *g, const unsigned char *share, size_t len)
{
    EVP_PKEY *k = gen(g, 0);
    ERR_set_mark();
    int ok = EVP_PKEY_set1_encoded_public_key(k, share, len) == 1;
    ERR_pop_to_mark();
    if (!ok) {
        EVP_PKEY_free(k);
        return NULL;
    }
    return k;
}

static int encaps(EVP_PKEY *k, unsigned char *ct, size_t *ctlen, unsigned char ss[64])
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(g_env.lib, k, NULL);
    size_t sslen = 0, need = 0;
    int ok = c != NULL && EVP_PKEY_encapsulate_init(c, NULL) == 1 &&
             EVP_PKEY_encapsulate(c, NULL, &need, NULL, &sslen) == 1 && need <= *ctlen &&
             sslen == 64 && EVP_PKEY_encapsulate(c, ct, ctlen, ss, &sslen) == 1 && sslen == 64;
    EVP_PKEY_CTX_free(c);
    return ok;
}

static int decaps(EVP_PKEY *k, const unsigned char *ct, size_t ctlen, unsigned char ss[64])
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(g_env.lib, k, NULL);
    size_t sslen = 0;
    ERR_set_mark();
    int ok = c != NULL && EVP_PKEY_decapsulate_init(c, NULL) == 1 &&
             EVP_PKEY_decapsulate(c, NULL, &sslen, ct, ctlen) == 1 && sslen == 64 &&
             EVP_PKEY_decapsulate(c, ss, &sslen, ct, ctlen) == 1 && sslen == 64;
    ERR_pop_to_mark();
    EVP_PKEY_CTX_free(c);
    return ok;
}

static void test_round_trip_and_layout(void **state)
{
    (void)state;
    for (int gi = 0; gi < 2; gi++) {
        const struct grp *g = &g_groups[gi];
        for (int it = 0; it < 4; it++) {
            EVP_PKEY *ck = gen(g, 1);
            unsigned char *share = NULL, ct[1200], ct2[1200], ss[64], ss2[64];
            size_t slen = EVP_PKEY_get1_encoded_public_key(ck, &share), ctlen = sizeof ct;
            assert_int_equal(slen, g->share);
            if (g->p256)
                assert_int_equal(share[0], 0x04); /* uncompressed point first */
            EVP_PKEY *sk = server_key(g, share, slen);
            assert_non_null(sk);
            assert_true(encaps(sk, ct, &ctlen, ss));
            assert_int_equal(ctlen, g->ct);
            if (g->p256)
                assert_int_equal(ct[0], 0x04);
            assert_true(decaps(ck, ct, ctlen, ss2));
            assert_memory_equal(ss, ss2, 64);

            /* the ML-KEM part tampered: implicit rejection changes only the ML-KEM half of
             * the secret (second for P-256, first for X25519) */
            size_t mo = g->p256 ? 65 : 0, eo = g->p256 ? 0 : 1088;
            memcpy(ct2, ct, ctlen);
            ct2[mo + 100] ^= 0x10;
            assert_true(decaps(ck, ct2, ctlen, ss2));
            size_t mh = g->p256 ? 32 : 0, eh = g->p256 ? 0 : 32;
            assert_memory_not_equal(ss + mh, ss2 + mh, 32);
            assert_memory_equal(ss + eh, ss2 + eh, 32);
            /* the ECDH part tampered: for X25519 only its half changes; a P-256 point
             * that is no longer on the curve is refused */
            memcpy(ct2, ct, ctlen);
            ct2[eo + 5] ^= 0x01;
            if (g->p256) {
                assert_false(decaps(ck, ct2, ctlen, ss2));
            } else {
                assert_true(decaps(ck, ct2, ctlen, ss2));
                assert_memory_equal(ss + mh, ss2 + mh, 32);
                assert_memory_not_equal(ss + eh, ss2 + eh, 32);
            }
            /* lengths: one byte short or long */
            assert_false(decaps(ck, ct, ctlen - 1, ss2));
            memcpy(ct2, ct, ctlen);
            ct2[ctlen] = 0;
            assert_false(decaps(ck, ct2, ctlen + 1, ss2));
            EVP_PKEY_free(sk);
            EVP_PKEY_free(ck);
            OPENSSL_free(share);
        }
    }
}

/* The server refuses bad client shares (draft: abort with illegal_parameter). */
static void test_bad_client_shares(void **state)
{
    (void)state;
    for (int gi = 0; gi < 2; gi++) {
        const struct grp *g = &g_groups[gi];
        EVP_PKEY *ck = gen(g, 1), *sk;
        unsigned char *share = NULL, bad[1300];
        size_t slen = EVP_PKEY_get1_encoded_public_key(ck, &share);
        size_t mo = g->p256 ? 65 : 0;

        assert_null(server_key(g, share, slen - 1));
        memcpy(bad, share, slen);
        bad[slen] = 0;
        assert_null(server_key(g, bad, slen + 1));
        /* FIPS 203 §7.2: coefficient 0 of t set to q = 3329 (0xD01) */
        memcpy(bad, share, slen);
        bad[mo] = 0x01;
        bad[mo + 1] = (unsigned char)((bad[mo + 1] & 0xF0) | 0x0D);
        assert_null(server_key(g, bad, slen));
        /* q - 1 is fine */
        bad[mo] = 0x00;
        assert_non_null(sk = server_key(g, bad, slen));
        EVP_PKEY_free(sk);
        if (g->p256) {
            memcpy(bad, share, slen);
            bad[0] = 0x02; /* compressed form: not allowed */
            assert_null(server_key(g, bad, slen));
            memcpy(bad, share, slen);
            bad[40] ^= 1; /* off the curve */
            assert_null(server_key(g, bad, slen));
        }
        EVP_PKEY_free(ck);
        OPENSSL_free(share);
    }
}

/* Random bytes of random lengths as client shares (server side) and as server shares
 * (client side): refused or accepted, never a crash or a leak (valgrind run). Valid-length
 * random client shares pass only when every 12-bit coefficient is below q (rare) and, for
 * P-256, the point is on the curve (never, in practice). */
static void test_random_shares(void **state)
{
    (void)state;
    unsigned char buf[1400], ss[64], ct[1200];
    unsigned seed = 12345;
    for (int gi = 0; gi < 2; gi++) {
        const struct grp *g = &g_groups[gi];
        EVP_PKEY *ck = gen(g, 1);
        for (int it = 0; it < 200; it++) {
            size_t len = it % 4 == 0 ? g->share : (size_t)(rand_r(&seed) % sizeof buf);
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = (unsigned char)rand_r(&seed);
            EVP_PKEY *sk = server_key(g, buf, len);
            if (sk != NULL) {
                size_t ctlen = sizeof ct;
                assert_int_equal(len, g->share);
                assert_true(encaps(sk, ct, &ctlen, ss));
                EVP_PKEY_free(sk);
            }
            size_t clen = it % 4 == 1 ? g->ct : (size_t)(rand_r(&seed) % sizeof buf);
            if (decaps(ck, buf, clen, ss))
                assert_int_equal(clen, g->ct);
            else
                assert_true(clen != g->ct || g->p256); /* X25519: any 32 bytes are a key */
            ERR_clear_error();
        }
        EVP_PKEY_free(ck);
    }
}

struct cap_seen {
    int found[2];
};

static int cap_cb(const OSSL_PARAM params[], void *arg)
{
    struct cap_seen *s = arg;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_NAME);
    const char *name = NULL;
    unsigned id = 0, kem = 0;
    int mintls = 0;

    if (p == NULL || !OSSL_PARAM_get_utf8_string_ptr(p, &name))
        return 0;
    for (int i = 0; i < 2; i++) {
        if (strcmp(name, g_groups[i].name) != 0)
            continue;
        assert_true(OSSL_PARAM_get_uint(
            OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_ID), &id));
        assert_true(OSSL_PARAM_get_uint(
            OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_IS_KEM), &kem));
        assert_true(OSSL_PARAM_get_int(
            OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_MIN_TLS), &mintls));
        assert_int_equal(id, g_groups[i].id);
        assert_int_equal(kem, 1);
        assert_int_equal(mintls, 0x0304);
        s->found[i]++;
    }
    return 1;
}

static void test_tls_group_capability(void **state)
{
    (void)state;
    struct cap_seen s = {{0, 0}};
    assert_int_equal(OSSL_PROVIDER_get_capabilities(g_env.tg, "TLS-GROUP", cap_cb, &s), 1);
    assert_int_equal(s.found[0], 1);
    assert_int_equal(s.found[1], 1);
}

/* ---- 8 encapsulations in 8 ASYNC jobs: one batch of the mlkem768 queue ---- */

struct job_arg {
    EVP_PKEY *sk;
    unsigned char ct[1200], ss[64];
    size_t ctlen;
    int ok;
};

static int job_fn(void *arg)
{
    struct job_arg *a = *(struct job_arg **)arg;
    a->ctlen = sizeof a->ct;
    a->ok = encaps(a->sk, a->ct, &a->ctlen, a->ss);
    return a->ok;
}

static int metrics_read(tlsgate_metrics_t *m)
{
    OSSL_PARAM p[2];
    p[0] = OSSL_PARAM_construct_octet_string("metrics", m, sizeof(*m));
    p[1] = OSSL_PARAM_construct_end();
    return OSSL_PROVIDER_get_params(g_env.tg, p) == 1;
}

static void test_batched_in_jobs(void **state)
{
    (void)state;
    const struct grp *g = &g_groups[0];
    EVP_PKEY *ck[8];
    struct job_arg args[8];
    ASYNC_JOB *jobs[8] = {0};
    ASYNC_WAIT_CTX *wctx[8];
    int done[8] = {0}, ndone = 0;
    tlsgate_metrics_t *m0 = malloc(sizeof(*m0)), *m1 = malloc(sizeof(*m1));

    assert_non_null(m0);
    assert_non_null(m1);
    assert_true(metrics_read(m0));
    for (int i = 0; i < 8; i++) {
        unsigned char *share = NULL;
        ck[i] = gen(g, 1);
        size_t n = EVP_PKEY_get1_encoded_public_key(ck[i], &share);
        args[i].sk = server_key(g, share, n);
        assert_non_null(args[i].sk);
        OPENSSL_free(share);
        wctx[i] = ASYNC_WAIT_CTX_new();
    }
    for (int pass = 0; ndone < 8 && pass < 20000; pass++) {
        for (int i = 0; i < 8; i++) {
            int ret = 0;
            struct job_arg *ap = &args[i];
            if (done[i])
                continue;
            switch (ASYNC_start_job(&jobs[i], wctx[i], &ret, job_fn, &ap, sizeof ap)) {
            case ASYNC_FINISH:
                done[i] = 1;
                ndone++;
                break;
            case ASYNC_PAUSE:
                break;
            default:
                fail_msg("ASYNC_start_job failed");
            }
        }
        if (ndone < 8)
            usleep(100);
    }
    assert_int_equal(ndone, 8);
    assert_true(metrics_read(m1));
    const tlsgate_alg_metrics_t *x = &m0->alg[TLSGATE_ALG_MLKEM768],
                                *y = &m1->alg[TLSGATE_ALG_MLKEM768];
    assert_string_equal(y->name, "mlkem768");
    assert_int_equal(y->requests_async - x->requests_async, 8);
    for (int k = 0; k < 8; k++)
        if (y->fill[k] != x->fill[k])
            fprintf(stderr, "mlkem768 batches of %d: %llu\n", k + 1,
                    (unsigned long long)(y->fill[k] - x->fill[k]));
    assert_int_equal(y->fill[7] - x->fill[7], 1); /* one full batch */
    for (int i = 0; i < 8; i++) {
        unsigned char ss[64];
        assert_true(args[i].ok);
        assert_true(decaps(ck[i], args[i].ct, args[i].ctlen, ss));
        assert_memory_equal(ss, args[i].ss, 64);
        EVP_PKEY_free(args[i].sk);
        EVP_PKEY_free(ck[i]);
        ASYNC_WAIT_CTX_free(wctx[i]);
    }
    free(m0);
    free(m1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_group_capability), cmocka_unit_test(test_round_trip_and_layout),
        cmocka_unit_test(test_bad_client_shares),    cmocka_unit_test(test_random_shares),
        cmocka_unit_test(test_batched_in_jobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
