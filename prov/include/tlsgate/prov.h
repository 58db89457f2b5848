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

#include <stdint.h>

#include <openssl/core.h>

/**
 * The provider's OSSL_provider_init_fn (OpenSSL provider(7)). Reads the configuration
 * (TLSGATE_PROVIDER_PARAMS; environment overrides), loads the default provider into
 * a private library context and looks up the implementations it delegates to. Returns 1
 * with *out and *provctx set, or 0 with an error raised through the core (bad
 * configuration value, default provider unavailable, no memory).
 */
int tlsgate_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                          const OSSL_DISPATCH **out, void **provctx);

/*
 * The parameters of the provider's configuration section (`NAME = VALUE` in an openssl.cnf
 * provider section, `ssl_provider tlsgate { NAME VALUE; }` in the gateway), each with the
 * environment variable that overrides it (TLSGATE_ + the upper-case name): X(name, ENV).
 * The provider reads exactly these (prov.c); the gateway refuses any other name for it, so a
 * misspelt parameter is an error at `tlsgate -t`, not a silent default. prov/README.md
 * describes their values.
 */
#define TLSGATE_PROVIDER_PARAMS(X)                                                                 \
    X(flush_us, FLUSH_US)                                                                          \
    X(poll_mode, POLL_MODE)                                                                        \
    X(enable, ENABLE)                                                                              \
    X(adaptive, ADAPTIVE)                                                                          \
    X(pool_size, POOL_SIZE)

/*
 * Metrics, read as the provider parameter "metrics" (OSSL_PARAM_OCTET_STRING): pass a
 * buffer of sizeof(tlsgate_metrics_t) bytes; the provider fills it with a snapshot of its
 * process-wide counters (every thread, every instance) and sets return_size. A buffer of
 * another size is refused (OSSL_PROVIDER_get_params returns 0), so a reader built against
 * another layout never misreads one; `version` changes whenever the layout does.
 *
 * Histograms are log2-bucketed: bucket 0 counts the value 0, bucket i (1 <= i < 31)
 * counts values in [2^(i-1), 2^i), bucket 31 counts values >= 2^30. Units are in the
 * field names (microseconds). Counters only grow (until the process exits).
 */
#define TLSGATE_METRICS_VERSION 4
#define TLSGATE_HIST_BUCKETS 32

/** The bucket of a value (see above): 0 for 0, else min(bit length of v, 31). */
static inline unsigned tlsgate_hist_bucket(uint64_t v)
{
    unsigned b = v == 0 ? 0u : 64u - (unsigned)__builtin_clzll(v);
    return b < TLSGATE_HIST_BUCKETS - 1 ? b : TLSGATE_HIST_BUCKETS - 1;
}

/** The inclusive upper bound of bucket i (i < 31): 0, 1, 3, 7, ... 2^i - 1. */
static inline uint64_t tlsgate_hist_upper(unsigned i)
{
    return i == 0 ? 0 : ((uint64_t)1 << i) - 1;
}

typedef struct tlsgate_hist {
    uint64_t count;                        /* values recorded */
    uint64_t sum;                          /* their sum, in the histogram's unit */
    uint64_t bucket[TLSGATE_HIST_BUCKETS]; /* per bucket, not cumulative */
} tlsgate_hist_t;

/** The algorithms (queues) of the provider, index into tlsgate_metrics_t.alg. */
enum tlsgate_alg {
    TLSGATE_ALG_RSA2048,
    TLSGATE_ALG_RSA3072,
    TLSGATE_ALG_RSA4096,
    TLSGATE_ALG_ECDSA_P256,
    TLSGATE_ALG_ECDH_P256,
    TLSGATE_ALG_KEYGEN_P256,
    TLSGATE_ALG_X25519,
    TLSGATE_ALG_KEYGEN_X25519,
    TLSGATE_ALG_ECDSA_P384,
    TLSGATE_ALG_ECDH_P384,
    TLSGATE_ALG_KEYGEN_P384,
    TLSGATE_ALG_MLKEM768, /* ML-KEM-768 encapsulation (the hybrid groups' server side; version 4) */
    TLSGATE_ALG_COUNT
};

typedef struct tlsgate_alg_metrics {
    char name[16];                /* "rsa2048", "ecdsa_p256", "ecdh_p256", "keygen_p256",
                                "x25519", "keygen_x25519", ... (NUL-terminated) */
    uint64_t requests;            /* private-key operations of this algorithm */
    uint64_t requests_async;      /* of which inside an async job (could be batched) */
    uint64_t single;              /* run at once as one default-provider operation (no job, or
                                the adaptive choice) */
    uint64_t fallbacks;           /* mb8 refused (a lane failed) and the default provider ran */
    uint64_t pool_hits;           /* served from an idle-time precomputed pool */
    uint64_t pool_misses;         /* a pool existed for the key but was empty */
    uint64_t batches;             /* mb8 kernel calls */
    uint64_t fill[8];             /* batches with 1..8 requests (fill[k-1]) */
    tlsgate_hist_t queue_wait_us; /* per request: queued -> its batch computed, µs */
    tlsgate_hist_t batch_us;      /* per batch: kernel time, µs */
    /* batches by what computed them (prov/README.md, "When an operation is batched") */
    uint64_t flush_full;   /* the request that filled the batch */
    uint64_t flush_poll;   /* the application's poll: its loop had no other work */
    uint64_t flush_age;    /* the oldest request waited the policy's cap */
    uint64_t flush_timer;  /* the timer thread: arrivals stopped */
    uint64_t flush_resume; /* a job resumed before its result computed its own queue */
    /* the adaptive choice (per thread; summed over threads) */
    uint64_t mode_single;   /* switches to single operations */
    uint64_t mode_batch;    /* switches back to batching */
    uint64_t probes;        /* requests queued as probes of the load */
    uint64_t probes_joined; /* probes whose batch had company (fill > 1) */
} tlsgate_alg_metrics_t;

typedef struct tlsgate_metrics {
    uint32_t version; /* TLSGATE_METRICS_VERSION */
    uint32_t n_alg;   /* TLSGATE_ALG_COUNT */
    tlsgate_alg_metrics_t alg[TLSGATE_ALG_COUNT];
    /* AES-GCM record ciphers (prov/cipher_gcm.c; version 3) */
    uint64_t gcm_records;      /* records (messages) sealed or opened */
    uint64_t gcm_bytes;        /* their payload bytes */
    uint64_t gcm_tag_failures; /* records whose tag did not match (opening) */
} tlsgate_metrics_t;

#endif
