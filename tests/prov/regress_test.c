/*
 * Regressions found by review (2026-11-30), each a small program run as its own CTest test
 * (and under valgrind where available: the first is memory corruption only valgrind sees).
 *
 *   regress setpeer  A peer key the default provider rejected (P-384 for a P-256 key) was
 *                    remembered by the tlsgate context; EVP keeps no reference to it, so
 *                    once the application freed it, EVP_PKEY_derive read and wiped the
 *                    freed key. Now the derive must use the last accepted peer.
 *   regress fork     A job paused (its request queued) before fork() and resumed in the
 *                    child waited forever: the child's queues start empty. Now it is
 *                    computed alone when resumed.
 *
 * Usage: prov_regress setpeer|fork   (the module dir in TLSGATE_PROV_DIR, compiled in)
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#define TG "?provider=tlsgate"

static OSSL_LIB_CTX *L;
static OSSL_PROVIDER *PT, *PD;

static int init(void)
{
    L = OSSL_LIB_CTX_new();
    return L != NULL && OSSL_PROVIDER_set_default_search_path(L, TLSGATE_PROV_DIR) &&
           (PT = OSSL_PROVIDER_load(L, "tlsgate")) != NULL &&
           (PD = OSSL_PROVIDER_load(L, "default")) != NULL;
}

static EVP_PKEY *gen_ec(const char *curve)
{
    return EVP_PKEY_Q_keygen(L, TG, "EC", curve);
}

static int derive(EVP_PKEY *k, EVP_PKEY *peer, const char *propq, unsigned char *sec, size_t *len)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(L, k, propq);
    int ok = c != NULL && EVP_PKEY_derive_init(c) == 1 && EVP_PKEY_derive_set_peer(c, peer) == 1 &&
             EVP_PKEY_derive(c, sec, len) == 1;

    EVP_PKEY_CTX_free(c);
    return ok;
}

static int test_setpeer(void)
{
    EVP_PKEY *k = gen_ec("P-256"), *good = gen_ec("P-256"), *bad = gen_ec("P-384");
    EVP_PKEY_CTX *c = k ? EVP_PKEY_CTX_new_from_pkey(L, k, TG) : NULL;
    unsigned char sec[64], ref[64];
    size_t sl = sizeof(sec), rl = sizeof(ref);
    int ok;

    if (!good || !bad || !c || EVP_PKEY_derive_init(c) != 1 ||
        EVP_PKEY_derive_set_peer(c, good) != 1) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    if (EVP_PKEY_derive_set_peer(c, bad) == 1) {
        fprintf(stderr, "a P-384 peer was accepted for a P-256 key\n");
        return 1;
    }
    ERR_clear_error();
    EVP_PKEY_free(bad); /* the application frees the key it could not use */
    ok = EVP_PKEY_derive(c, sec, &sl) == 1 && derive(k, good, "provider=default", ref, &rl) &&
         sl == rl && memcmp(sec, ref, sl) == 0;
    printf("setpeer: derive after a rejected, freed peer: %s\n",
           ok ? "the accepted peer's secret" : "WRONG");
    EVP_PKEY_CTX_free(c);
    EVP_PKEY_free(k);
    EVP_PKEY_free(good);
    return ok ? 0 : 1;
}

static EVP_PKEY *g_key;
static unsigned char g_sig[128];
static size_t g_siglen;

static int sign_job(void *arg)
{
    static const unsigned char msg[] = "regress fork";
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    int ok;

    (void)arg;
    g_siglen = sizeof(g_sig);
    ok = m != NULL && EVP_DigestSignInit_ex(m, NULL, "SHA256", L, TG, g_key, NULL) == 1 &&
         EVP_DigestSign(m, g_sig, &g_siglen, msg, sizeof(msg) - 1) == 1;
    EVP_MD_CTX_free(m);
    return ok;
}

static int verify_sig(void)
{
    static const unsigned char msg[] = "regress fork";
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    int ok = m != NULL &&
             EVP_DigestVerifyInit_ex(m, NULL, "SHA256", L, "provider=default", g_key, NULL) == 1 &&
             EVP_DigestVerify(m, g_sig, g_siglen, msg, sizeof(msg) - 1) == 1;

    EVP_MD_CTX_free(m);
    return ok;
}

static int test_fork(void)
{
    ASYNC_WAIT_CTX *w = ASYNC_WAIT_CTX_new();
    ASYNC_JOB *job = NULL;
    int ret = 0, r, st, ok;
    pid_t pid;

    g_key = gen_ec("P-256");
    if (w == NULL || g_key == NULL)
        return 1;
    r = ASYNC_start_job(&job, w, &ret, sign_job, NULL, 0);
    if (r != ASYNC_PAUSE) {
        fprintf(stderr, "the job did not pause (start_job=%d): is poll_mode app set?\n", r);
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        alarm(10); /* the bug: the resumed job waited forever */
        r = ASYNC_start_job(&job, w, &ret, sign_job, NULL, 0);
        _exit(r == ASYNC_FINISH && ret == 1 && verify_sig() ? 0 : 3);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    printf("fork: child %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0
                                   ? "finished the inherited job, signature verifies"
                                   : "FAILED or hung");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    /* the parent's own copy of the job is intact: poll, resume */
    {
        unsigned done = 0;
        OSSL_PARAM p[2] = {OSSL_PARAM_construct_uint("poll", &done), OSSL_PARAM_construct_end()};

        OSSL_PROVIDER_get_params(PT, p); /* the queue grew: left to a later poll */
        OSSL_PROVIDER_get_params(PT, p);
    }
    r = ASYNC_start_job(&job, w, &ret, sign_job, NULL, 0);
    ok = r == ASYNC_FINISH && ret == 1 && verify_sig();
    printf("fork: parent resumed its own job: start_job=%d ret=%d, signature %s\n", r, ret,
           ok ? "verifies" : "does NOT verify");
    ERR_print_errors_fp(stdout);
    ASYNC_WAIT_CTX_free(w);
    EVP_PKEY_free(g_key);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !init()) {
        fprintf(stderr, "usage: %s setpeer|fork (and a loadable tlsgate.so)\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "setpeer") == 0)
        return test_setpeer();
    if (strcmp(argv[1], "fork") == 0)
        return test_fork();
    return 2;
}
