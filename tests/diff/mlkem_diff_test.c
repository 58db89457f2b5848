/*
 * mb8 ML-KEM-768 (mb8/mlkem.h) against known answers of @noble/post-quantum
 * (mlkem768_vectors.txt, made once by mlkem768_vectors.mjs: an independent implementation),
 * its Keccak against OpenSSL's SHA-3 / SHAKE, and its kernels against each other.
 *
 * Known answers go 8 different vectors to a call, rotated through the lanes. Random inputs:
 * keygen / encaps / decaps round trips, the public entry points against the portable kernel
 * called directly (so diff_mlkem, on an AVX-512 machine, compares the vector encapsulation
 * with the portable one), FIPS 203 §7.2 / §7.3 input checks. A failure prints the seed
 * (MLKEM_DIFF_SEED=<seed> repeats the run) and the lane. MLKEM_DIFF_QUICK=1 shortens every
 * loop (for valgrind: ct_mlkem marks d, z, m and dk's secret part undefined).
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "mb8/cpu.h"
#include "mb8/mlkem.h"
#include "mlkem/keccak.h"
#include "mlkem/mlkem_internal.h"

#include "diff_util.h"
#include "memcheck.h"

#define EKB MB8_MLKEM768_EK_BYTES
#define DKB MB8_MLKEM768_DK_BYTES
#define CTB MB8_MLKEM768_CT_BYTES

static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[MB8__MLKEM_WS_BYTES];

static void fail_lane(const char *what, unsigned lane)
{
    fail_msg("%s: lane %u (MLKEM_DIFF_SEED=%llu)", what, lane, (unsigned long long)g_seed);
}

static void sha3_256_ossl(uint8_t out[32], const uint8_t *in, size_t len)
{
    unsigned int olen = 32;
    assert_int_equal(EVP_Digest(in, len, out, &olen, EVP_sha3_256(), NULL), 1);
}

/* ---- Keccak against OpenSSL ---- */

static void xof_ossl(const EVP_MD *md, uint8_t *out, size_t outlen, const uint8_t *in, size_t len)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    assert_non_null(c);
    assert_int_equal(EVP_DigestInit_ex(c, md, NULL), 1);
    assert_int_equal(EVP_DigestUpdate(c, in, len), 1);
    if (EVP_MD_get_flags(md) & EVP_MD_FLAG_XOF)
        assert_int_equal(EVP_DigestFinalXOF(c, out, outlen), 1);
    else
        assert_int_equal(EVP_DigestFinal_ex(c, out, NULL), 1);
    EVP_MD_CTX_free(c);
}

static void test_keccak_vs_openssl(void **state)
{
    (void)state;
    uint8_t in[700], a[600], b[600];
    const unsigned rounds = g_quick ? 20 : 400;

    for (unsigned it = 0; it < rounds; it++) {
        size_t len = it < 300 ? it : rng_next() % sizeof in; /* every length across the rates */
        size_t olen = 1 + rng_next() % sizeof a;
        rng_bytes(in, len);
        mb8__sha3_256(a, in, len / 3, in + len / 3, len - len / 3);
        xof_ossl(EVP_sha3_256(), b, 32, in, len);
        assert_memory_equal(a, b, 32);
        mb8__sha3_512(a, in, len, NULL, 0);
        xof_ossl(EVP_sha3_512(), b, 64, in, len);
        assert_memory_equal(a, b, 64);
        mb8__shake256(a, olen, in, len, NULL, 0);
        xof_ossl(EVP_shake256(), b, olen, in, len);
        assert_memory_equal(a, b, olen);
        /* SHAKE128 squeezed in uneven pieces, as SampleNTT does */
        mb8__keccak_t k;
        mb8__keccak_init(&k, MB8__SHAKE128_RATE);
        mb8__keccak_absorb(&k, in, len / 2);
        mb8__keccak_absorb(&k, in + len / 2, len - len / 2);
        mb8__keccak_finalize(&k, MB8__SHAKE_DS);
        size_t done = 0;
        while (done < olen) {
            size_t n = 1 + rng_next() % 200;
            if (n > olen - done)
                n = olen - done;
            mb8__keccak_squeeze(&k, a + done, n);
            done += n;
        }
        xof_ossl(EVP_shake128(), b, olen, in, len);
        assert_memory_equal(a, b, olen);
    }
}

/* Compress_d by multiplication equals round(2^d x / q) mod 2^d for every x and d used. */
static void test_compress_exhaustive(void **state)
{
    (void)state;
    const unsigned ds[] = {1, 4, 10, 11};
    for (unsigned k = 0; k < 4; k++)
        for (uint32_t x = 0; x < MB8__MLKEM_Q; x++) {
            uint32_t want =
                (((x << ds[k]) * 2 + MB8__MLKEM_Q) / (2 * MB8__MLKEM_Q)) & ((1u << ds[k]) - 1);
            if (mb8__mlkem_compress(x, ds[k]) != want)
                fail_msg("Compress_%u(%u) = %u, want %u", ds[k], x, mb8__mlkem_compress(x, ds[k]),
                         want);
        }
}

/* ---- known answers ---- */

struct vec {
    uint8_t d[32], z[32], m[32], h_ek[32], h_dk[32], h_ct[32], ss[32], ss_rej[32];
    int full;
    uint8_t ek[EKB], dk[DKB], ct[CTB];
};

static struct vec *g_vecs;
static size_t g_nvecs;

/* Splits line in place at spaces and the newline into at most n fields; how many. */
static size_t split_fields(char *line, char **f, size_t n)
{
    size_t k = 0;
    for (char *t = strtok(line, " \n"); t != NULL && k < n; t = strtok(NULL, " \n"))
        f[k++] = t;
    return k;
}

/* The known answers, a test failure if the file is not as mlkem768_vectors.mjs writes it. */
static int load_vectors(void **state)
{
    (void)state;
    FILE *f = fopen(MLKEM_VECTORS, "r");
    static char line[16384];
    char *tok[9];
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", MLKEM_VECTORS);
        return -1;
    }
    g_vecs = calloc(200, sizeof *g_vecs);
    assert_non_null(g_vecs);
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#')
            continue;
        size_t nf = split_fields(line, tok, 9);
        if (strcmp(tok[0], "full") == 0) {
            assert_true(g_nvecs > 0 && nf == 4);
            struct vec *v = &g_vecs[g_nvecs - 1];
            unhex(v->ek, EKB, tok[1]);
            unhex(v->dk, DKB, tok[2]);
            unhex(v->ct, CTB, tok[3]);
            v->full = 1;
            continue;
        }
        if (g_nvecs == 200)
            break;
        struct vec *v = &g_vecs[g_nvecs];
        uint8_t *fields[8] = {v->d, v->z, v->m, v->h_ek, v->h_dk, v->h_ct, v->ss, v->ss_rej};
        assert_int_equal(nf, 8);
        for (int i = 0; i < 8; i++)
            unhex(fields[i], 32, tok[i]);
        g_nvecs++;
    }
    fclose(f);
    return g_nvecs >= 8 ? 0 : -1;
}

static int free_vectors(void **state)
{
    (void)state;
    free(g_vecs);
    return 0;
}

/* One batch of the three calls: the lanes' buffers and the pointer arrays the API takes
 * (keygen: pek, pdk, d, z; encaps: pct, pss, cek, m; decaps: pss, cct, cdk). */
struct kem_batch {
    uint8_t ek[8][EKB], dk[8][DKB], ct[8][CTB], seeds[8][96], ss[8][32];
    const uint8_t *d[8], *z[8], *m[8], *cek[8], *cct[8], *cdk[8];
    uint8_t *pek[8], *pdk[8], *pct[8], *pss[8];
};

/* Random seeds d | z | m (rng_bytes) in every lane; the lanes in `used` (bit i: lane i) get
 * d, ek and dk, the others NULL ones (UNUSED in every call); outputs into the buffers. */
static void kem_batch_init(struct kem_batch *b, unsigned used)
{
    rng_bytes(&b->seeds[0][0], sizeof b->seeds);
    for (unsigned i = 0; i < 8; i++) {
        int u = (used >> i) & 1;
        b->d[i] = u ? b->seeds[i] : NULL;
        b->z[i] = b->seeds[i] + 32;
        b->m[i] = b->seeds[i] + 64;
        b->pek[i] = b->ek[i];
        b->pdk[i] = b->dk[i];
        b->pct[i] = b->ct[i];
        b->pss[i] = b->ss[i];
        b->cek[i] = u ? b->ek[i] : NULL;
        b->cdk[i] = u ? b->dk[i] : NULL;
        b->cct[i] = b->ct[i];
    }
}

static void test_known_answers(void **state)
{
    (void)state;
    static struct kem_batch kb;
    static uint8_t ct2[8][CTB];
    uint8_t h[32];
    size_t nv = g_quick ? 16 : g_nvecs;

    /* vectors v, v+1, ... v+7 in lanes rotated by r */
    for (size_t v0 = 0; v0 + 8 <= nv; v0 += 8) {
        for (unsigned r = 0; r < (g_quick ? 1u : 2u); r++) {
            kem_batch_init(&kb, 0xFF);
            for (unsigned i = 0; i < 8; i++) {
                const struct vec *v = &g_vecs[v0 + (i + r) % 8];
                kb.d[i] = v->d;
                kb.z[i] = v->z;
                kb.m[i] = v->m;
            }
            assert_int_equal(mb8_mlkem768_keygen(kb.pek, kb.pdk, kb.d, kb.z), 0);
            assert_int_equal(mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch), 0);
            for (unsigned i = 0; i < 8; i++) {
                size_t n = v0 + (i + r) % 8;
                const struct vec *v = &g_vecs[n];
                sha3_256_ossl(h, kb.ek[i], EKB);
                expect_bytes("KAT ek", i, h, v->h_ek, 32);
                sha3_256_ossl(h, kb.dk[i], DKB);
                expect_bytes("KAT dk", i, h, v->h_dk, 32);
                sha3_256_ossl(h, kb.ct[i], CTB);
                expect_bytes("KAT ct", i, h, v->h_ct, 32);
                expect_bytes("KAT encaps ss", i, kb.ss[i], v->ss, 32);
                if (v->full && (memcmp(kb.ek[i], v->ek, EKB) || memcmp(kb.dk[i], v->dk, DKB) ||
                                memcmp(kb.ct[i], v->ct, CTB)))
                    fail_lane("KAT full vector", i);
                memcpy(ct2[i], kb.ct[i], CTB);
                ct2[i][(37 * n) % CTB] ^= 1;
            }
            /* each vector alone in a call too (1 used lane: another vector path) */
            if (r == 0)
                for (unsigned i = 0; i < 8; i++) {
                    static uint8_t ct1[CTB];
                    uint8_t ss1[32];
                    const uint8_t *ek1[8] = {0}, *m1[8] = {0};
                    uint8_t *pct1[8] = {0}, *pss1[8] = {0};
                    ek1[(i + 3) % 8] = kb.ek[i];
                    m1[(i + 3) % 8] = kb.m[i];
                    pct1[(i + 3) % 8] = ct1;
                    pss1[(i + 3) % 8] = ss1;
                    mb8_status_t s1 = mb8_mlkem768_encaps(pct1, pss1, ek1, m1, g_scratch);
                    assert_int_equal(mb8_status_lane(s1, (i + 3) % 8), MB8_STATUS_OK);
                    /* cppcheck-suppress uninitvar ; ss1 is an output of the encapsulation above */
                    if (memcmp(ct1, kb.ct[i], CTB) != 0 || memcmp(ss1, kb.ss[i], 32) != 0)
                        fail_lane("KAT one lane a call", (i + 3) % 8);
                }
            memset(kb.ss, 0, sizeof kb.ss);
            assert_int_equal(mb8_mlkem768_decaps(kb.pss, kb.cct, kb.cdk), 0);
            for (unsigned i = 0; i < 8; i++)
                if (memcmp(kb.ss[i], g_vecs[v0 + (i + r) % 8].ss, 32) != 0)
                    fail_lane("KAT decaps ss", i);
            for (unsigned i = 0; i < 8; i++)
                kb.cct[i] = ct2[i];
            assert_int_equal(mb8_mlkem768_decaps(kb.pss, kb.cct, kb.cdk), 0);
            for (unsigned i = 0; i < 8; i++)
                if (memcmp(kb.ss[i], g_vecs[v0 + (i + r) % 8].ss_rej, 32) != 0)
                    fail_lane("KAT implicit rejection", i);
        }
    }
}

/* ---- random inputs ---- */

/* Public API (the CPU's kernel) against the portable kernel called directly, round trips,
 * partial lane sets. */
static void test_random_vs_portable(void **state)
{
    (void)state;
    static struct kem_batch kb;
    static uint8_t ct_ref[8][CTB];
    uint8_t ss_ref[8][32], ss_dec[8][32];
    const unsigned rounds = g_quick ? 1 : 12;

    for (unsigned it = 0; it < rounds; it++) {
        /* all lanes, one lane, two lanes (the vector kernel's one-lane path), random */
        unsigned used = it == 0   ? 0xFF
                        : it == 1 ? 0x20
                        : it == 2 ? 0x81
                                  : (unsigned)(rng_next() & 0xFF);
        kem_batch_init(&kb, used);
        mb8_status_t st = mb8_mlkem768_keygen(kb.pek, kb.pdk, kb.d, kb.z);
        for (unsigned i = 0; i < 8; i++)
            expect_status("keygen status", st, i,
                          (((used >> i) & 1) ? MB8_STATUS_OK : MB8_STATUS_UNUSED));
        st = mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch);
        for (unsigned i = 0; i < 8; i++)
            expect_status("encaps status", st, i,
                          (((used >> i) & 1) ? MB8_STATUS_OK : MB8_STATUS_UNUSED));
        uint8_t *pdec[8];
        for (unsigned i = 0; i < 8; i++)
            pdec[i] = ss_dec[i];
        st = mb8_mlkem768_decaps(pdec, kb.cct, kb.cdk);
        for (unsigned i = 0; i < 8; i++) {
            if (!((used >> i) & 1)) {
                expect_status("decaps unused", st, i, MB8_STATUS_UNUSED);
                continue;
            }
            mb8__mlkem768_encaps_ref(ct_ref[i], ss_ref[i], kb.ek[i], kb.m[i]);
            if (memcmp(ct_ref[i], kb.ct[i], CTB) != 0 || memcmp(ss_ref[i], kb.ss[i], 32) != 0)
                fail_lane("encaps vs portable kernel", i);
            expect_status("decaps round trip", st, i, MB8_STATUS_OK);
            expect_bytes("decaps round trip", i, ss_dec[i], kb.ss[i], 32);
        }
    }
}

/* FIPS 203 §7.2: a coefficient >= q in ek fails only its lane; q - 1 is fine. §7.3: a dk
 * whose H(ek) does not match fails only its lane. Bad arguments. */
static void test_input_checks(void **state)
{
    (void)state;
    static struct kem_batch kb;

    kem_batch_init(&kb, 0xFF);
    assert_int_equal(mb8_mlkem768_keygen(kb.pek, kb.pdk, kb.d, kb.z), 0);
    /* lane i gets a coefficient at position pos set to a value */
    const struct {
        unsigned pos;
        unsigned val;
        int bad;
    } cases[8] = {
        {0, 3329, 1}, {1, 4095, 1},   {767, 3328, 0}, {766, 3330, 1},
        {100, 0, 0},  {401, 3329, 1}, {2, 3328, 0},   {765, 65535 & 4095, 1},
    };
    for (unsigned i = 0; i < 8; i++) {
        unsigned p = cases[i].pos, v = cases[i].val;
        uint8_t *b = kb.ek[i] + 3 * (p / 2);
        if (p % 2 == 0) {
            b[0] = (uint8_t)v;
            b[1] = (uint8_t)((b[1] & 0xF0) | (v >> 8));
        } else {
            b[1] = (uint8_t)((b[1] & 0x0F) | ((v & 0x0F) << 4));
            b[2] = (uint8_t)(v >> 4);
        }
    }
    memset(kb.ct, 0xAA, sizeof kb.ct);
    mb8_status_t st = mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch);
    for (unsigned i = 0; i < 8; i++) {
        unsigned want = cases[i].bad ? MB8_STATUS_BAD_INPUT : MB8_STATUS_OK;
        expect_status("§7.2 modulus check", st, i, want);
        if (cases[i].bad && kb.ct[i][0] != 0xAA)
            fail_lane("rejected ek: ct written", i);
    }
    /* §7.3: corrupt H(ek) in lanes 2 and 5 */
    kb.dk[2][2336] ^= 0x80;
    kb.dk[5][2367] ^= 0x01;
    st = mb8_mlkem768_decaps(kb.pss, kb.cct, kb.cdk);
    for (unsigned i = 0; i < 8; i++)
        expect_status("§7.3 hash check", st, i,
                      ((i == 2 || i == 5) ? MB8_STATUS_BAD_KEY : MB8_STATUS_OK));
    /* scratch NULL or misaligned: every used lane BAD_INPUT */
    st = mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, NULL);
    st |= mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch + 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(mb8_status_lane(st, i), MB8_STATUS_BAD_INPUT);
    /* missing outputs */
    kb.pct[3] = NULL;
    kb.pss[4] = NULL;
    st = mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch);
    assert_int_equal(mb8_status_lane(st, 3), MB8_STATUS_BAD_INPUT);
    assert_int_equal(mb8_status_lane(st, 4), MB8_STATUS_BAD_INPUT);
    assert_int_equal(mb8_status_lane(st, 6), MB8_STATUS_OK);
}

/* Constant time (valgrind, MB8_FORCE_PORTABLE=1): the secrets are undefined; any branch or
 * memory index on them is a memcheck error. Without valgrind this checks results only. */
static void test_constant_time_memcheck(void **state)
{
    (void)state;
    static struct kem_batch kb;
    uint8_t ss2[8][32];
    uint8_t *pss2[8];

    kem_batch_init(&kb, 0x03); /* two lanes: enough for the check, short under valgrind */
    for (unsigned i = 0; i < 8; i++)
        pss2[i] = ss2[i];
    /* Key generation: G(d || 3) gives rho, which is public (it ends ek): the rejection
     * sampling of A branches on it. So G runs here (OpenSSL) and the kernel gets rho
     * defined, sigma and z undefined. G itself is Keccak, checked below on m. */
    for (unsigned i = 0; i < 2; i++) {
        uint8_t in[33], rs[64];
        unsigned int n = 64;
        memcpy(in, kb.d[i], 32);
        in[32] = 3;
        assert_int_equal(EVP_Digest(in, 33, rs, &n, EVP_sha3_512(), NULL), 1);
        VALGRIND_MAKE_MEM_UNDEFINED(rs + 32, 32);
        VALGRIND_MAKE_MEM_UNDEFINED(kb.seeds[i] + 32, 32); /* z */
        mb8__mlkem768_keygen_rs_ref(kb.ek[i], kb.dk[i], rs, rs + 32, kb.z[i]);
    }
    /* ek is public (it is sent); dk's ek copy and hash too; dk_pke and z stay secret */
    VALGRIND_MAKE_MEM_DEFINED(kb.ek, sizeof kb.ek);
    for (unsigned i = 0; i < 8; i++)
        VALGRIND_MAKE_MEM_DEFINED(kb.dk[i] + 1152, 1184 + 32);
    /* the same keys as the public entry point's */
    {
        static uint8_t ek2[8][EKB], dk2[8][DKB];
        uint8_t *pek2[8], *pdk2[8];
        for (unsigned i = 0; i < 8; i++) {
            pek2[i] = ek2[i];
            pdk2[i] = dk2[i];
        }
        VALGRIND_MAKE_MEM_DEFINED(kb.seeds, sizeof kb.seeds);
        assert_int_equal(mb8_mlkem768_keygen(pek2, pdk2, kb.d, kb.z), 0x11111100u);
        VALGRIND_MAKE_MEM_DEFINED(kb.dk, sizeof kb.dk);
        assert_memory_equal(ek2[0], kb.ek[0], EKB);
        assert_memory_equal(dk2[1], kb.dk[1], DKB);
        for (unsigned i = 0; i < 2; i++)
            VALGRIND_MAKE_MEM_UNDEFINED(kb.dk[i], 1152);
        VALGRIND_MAKE_MEM_UNDEFINED(kb.dk[0] + 2368, 32);
        VALGRIND_MAKE_MEM_UNDEFINED(kb.dk[1] + 2368, 32);
    }
    VALGRIND_MAKE_MEM_UNDEFINED(kb.seeds, sizeof kb.seeds);
    mb8_status_t st = mb8_mlkem768_encaps(kb.pct, kb.pss, kb.cek, kb.m, g_scratch);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    VALGRIND_MAKE_MEM_DEFINED(kb.ct, sizeof kb.ct); /* sent */
    assert_int_equal(st, 0x11111100u);
    /* decapsulation of the right ciphertext and of a wrong one */
    st = mb8_mlkem768_decaps(pss2, kb.cct, kb.cdk);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    assert_int_equal(st, 0x11111100u);
    kb.ct[1][5] ^= 1;
    uint8_t ss3[8][32];
    uint8_t *pss3[8] = {ss3[0], ss3[1], ss3[2], ss3[3], ss3[4], ss3[5], ss3[6], ss3[7]};
    st = mb8_mlkem768_decaps(pss3, kb.cct, kb.cdk);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    VALGRIND_MAKE_MEM_DEFINED(kb.ss, sizeof kb.ss);
    VALGRIND_MAKE_MEM_DEFINED(ss2, sizeof ss2);
    VALGRIND_MAKE_MEM_DEFINED(ss3, sizeof ss3);
    assert_int_equal(st, 0x11111100u);
    assert_memory_equal(kb.ss[0], ss2[0], 32);
    assert_memory_equal(kb.ss[1], ss2[1], 32);
    assert_memory_equal(kb.ss[0], ss3[0], 32);
    assert_memory_not_equal(kb.ss[1], ss3[1], 32);
}

int main(void)
{
    diff_init("mlkem_diff_test", "MLKEM");
    rng_state = g_seed;
    fprintf(stderr, "mlkem_diff_test: kernel %s\n", mb8_cpu_has_ifma() ? "AVX-512" : "portable");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keccak_vs_openssl), cmocka_unit_test(test_compress_exhaustive),
        cmocka_unit_test(test_known_answers),     cmocka_unit_test(test_random_vs_portable),
        cmocka_unit_test(test_input_checks),      cmocka_unit_test(test_constant_time_memcheck),
    };
    return cmocka_run_group_tests(tests, load_vectors, free_vectors);
}
