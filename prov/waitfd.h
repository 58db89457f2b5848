/*
 * The eventfd an accelerator registers in an application's ASYNC_WAIT_CTX to wake a paused
 * job (the "wait fd" of OpenSSL's async API, what HAProxy and `openssl speed` poll).
 * Shared by the tlsgate provider (prov/batch.c) and the test-only fake accelerator
 * (tests/fakeaccel), which follow the same wake-up protocol.
 *
 * One eventfd per wait ctx, created on first use and registered under a key unique to
 * this code; reference counted: the wait ctx holds one reference (dropped by its cleanup
 * when the application frees the wait ctx), and every queued request one, so a writer
 * never writes to a closed (and maybe reused) fd number.
 */
#ifndef TG_WAITFD_H
#define TG_WAITFD_H

#include <stdatomic.h>

#include <openssl/async.h>

struct tg_waitfd {
    int fd;
    atomic_int refs;
};

/**
 * The eventfd of wctx (non-blocking, close-on-exec), created and registered with
 * ASYNC_WAIT_CTX_set_wait_fd on first use, with one reference for the caller (release it
 * with tg_waitfd_release). Returns NULL when eventfd(), malloc or the registration fails
 * (nothing is left registered then).
 */
struct tg_waitfd *tg_waitfd_acquire(ASYNC_WAIT_CTX *wctx);

/** 1 when wctx already holds the eventfd of tg_waitfd_acquire, else 0. */
int tg_waitfd_present(ASYNC_WAIT_CTX *wctx);

/** Drops one reference; the last one closes the fd and frees w. NULL is ignored. */
void tg_waitfd_release(struct tg_waitfd *w);

/** Makes the fd readable (adds 1 to the eventfd counter); retries on EINTR. */
void tg_waitfd_signal(struct tg_waitfd *w);

/** Reads the counter back to zero (the job does this after a resume); never blocks. Returns
 * 1 when it read a nonzero counter, 0 when the fd was empty (EAGAIN). */
int tg_waitfd_drain(struct tg_waitfd *w);

/**
 * 1 when `name` is one of the colon-separated names of an OSSL_ALGORITHM
 * ("RSA:rsaEncryption:1.2.840.113549.1.1.1"), else 0. Case-sensitive, as the default
 * provider spells its names.
 */
int tg_names_contain(const char *names, const char *name);

#endif
