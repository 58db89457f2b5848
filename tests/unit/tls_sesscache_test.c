/*
 * The shared session cache (gw/tls/sesscache.c): store/fetch, replacement, expiry, LRU
 * eviction when full, oversized sessions, bad IDs, removal, sharing across fork(), the
 * zone registry (reuse across reloads, size conflicts), and recovery from a process that
 * died holding the lock. The .c is included to reach the static lock().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit_test.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tls/sesscache.c"

static void mkid(uint8_t id[32], unsigned n)
{
    memset(id, 0, 32);
    memcpy(id, &n, sizeof(n));
    id[31] = 0xa5;
}

static void mkder(uint8_t *der, size_t len, unsigned n)
{
    for (size_t i = 0; i < len; i++)
        der[i] = (uint8_t)(n * 31 + i);
}

static int has(gw_sesscache_t *z, unsigned n, int64_t now)
{
    uint8_t id[32], out[GW_SESSCACHE_MAX_DER], want[100];
    mkid(id, n);
    int r = gw_sesscache_fetch(z, id, 32, now, out, sizeof(out));
    if (r <= 0)
        return 0;
    mkder(want, 100, n);
    assert_int_equal(r, 100);
    assert_memory_equal(out, want, 100);
    return 1;
}

static void put(gw_sesscache_t *z, unsigned n, int64_t expire, int64_t now)
{
    uint8_t id[32], der[100];
    mkid(id, n);
    mkder(der, sizeof(der), n);
    assert_int_equal(gw_sesscache_store(z, id, 32, der, sizeof(der), expire, now), 0);
}

/* a 64 KiB zone; the test fails when it cannot be made */
static gw_sesscache_t *zone_64k(void)
{
    gw_sesscache_t *z = gw_sesscache_create(64 << 10);
    assert_non_null(z);
    return z;
}

static gw_sesscache_stats_t stats_of(gw_sesscache_t *z)
{
    gw_sesscache_stats_t st;
    gw_sesscache_get_stats(z, &st);
    return st;
}

static void store_fetch_replace_remove(void **state)
{
    gw_sesscache_t *z = zone_64k();
    put(z, 1, 100, 10);
    put(z, 2, 100, 10);
    assert_true(has(z, 1, 20));
    assert_true(has(z, 2, 20));
    assert_false(has(z, 3, 20));
    /* the same ID again replaces: one entry, new content */
    uint8_t id[32], der[50], out[GW_SESSCACHE_MAX_DER];
    mkid(id, 1);
    memset(der, 7, sizeof(der));
    assert_int_equal(gw_sesscache_store(z, id, 32, der, sizeof(der), 100, 10), 0);
    assert_int_equal(gw_sesscache_fetch(z, id, 32, 20, out, sizeof(out)), 50);
    assert_memory_equal(out, der, 50);
    /* a too small output buffer: -1, the entry stays */
    assert_int_equal(gw_sesscache_fetch(z, id, 32, 20, out, 49), -1);
    assert_int_equal(gw_sesscache_fetch(z, id, 32, 20, out, 50), 50);
    /* a shorter ID that is a prefix of a stored one is another ID */
    assert_int_equal(gw_sesscache_fetch(z, id, 31, 20, out, sizeof(out)), 0);
    gw_sesscache_remove(z, id, 32);
    assert_int_equal(gw_sesscache_fetch(z, id, 32, 20, out, sizeof(out)), 0);
    gw_sesscache_remove(z, id, 32); /* absent: nothing happens */
    gw_sesscache_stats_t st = stats_of(z);
    assert_int_equal(st.used, 1);
    assert_int_equal(st.stores, 3);
    gw_sesscache_destroy(z);
}

static void bad_input(void **state)
{
    gw_sesscache_t *z = zone_64k();
    uint8_t id[33] = {1}, der[GW_SESSCACHE_MAX_DER + 1] = {0}, out[GW_SESSCACHE_MAX_DER];
    assert_int_equal(gw_sesscache_store(z, id, 0, der, 10, 100, 10), -1);
    assert_int_equal(gw_sesscache_store(z, id, 33, der, 10, 100, 10), -1);
    assert_int_equal(gw_sesscache_store(z, id, 32, der, 0, 100, 10), -1);
    assert_int_equal(gw_sesscache_store(z, id, 32, der, 10, 10, 10), -1); /* expired */
    /* oversized: refused and counted; the largest allowed fits */
    assert_int_equal(gw_sesscache_store(z, id, 32, der, sizeof(der), 100, 10), -1);
    assert_int_equal(gw_sesscache_store(z, id, 32, der, GW_SESSCACHE_MAX_DER, 100, 10), 0);
    assert_int_equal(gw_sesscache_fetch(z, id, 32, 20, out, sizeof(out)), GW_SESSCACHE_MAX_DER);
    assert_int_equal(gw_sesscache_fetch(z, id, 0, 20, out, sizeof(out)), 0);
    assert_int_equal(gw_sesscache_fetch(z, id, 33, 20, out, sizeof(out)), 0);
    gw_sesscache_stats_t st = stats_of(z);
    assert_int_equal(st.oversized, 1);
    gw_sesscache_destroy(z);
    /* too small for one slot, too large */
    errno = 0;
    assert_null(gw_sesscache_create(256));
    assert_int_equal(errno, EINVAL);
    assert_null(gw_sesscache_create(((size_t)4 << 30) + 1));
}

static void expiry(void **state)
{
    gw_sesscache_t *z = zone_64k();
    put(z, 1, 100, 10);
    assert_true(has(z, 1, 99));
    assert_false(has(z, 1, 100)); /* expire <= now: gone, and freed */
    gw_sesscache_stats_t st = stats_of(z);
    assert_int_equal(st.used, 0);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 1);
    gw_sesscache_destroy(z);
}

static void lru_when_full(void **state)
{
    gw_sesscache_t *z = zone_64k();
    gw_sesscache_stats_t st = stats_of(z);
    unsigned n = (unsigned)st.slots;
    assert_true(n > 100 && n < (64 << 10) / GW_SESSCACHE_SLOT);
    for (unsigned i = 0; i < n; i++)
        put(z, i, 1000, 10);
    /* touch 0: the least recently used is now 1 */
    assert_true(has(z, 0, 20));
    put(z, n, 1000, 20);
    assert_true(has(z, 0, 20));
    assert_false(has(z, 1, 20));
    assert_true(has(z, 2, 20));
    assert_true(has(z, n, 20));
    st = stats_of(z);
    assert_int_equal(st.used, n);
    assert_int_equal(st.evictions, 1);
    /* a full cache of expired entries: replacing them is not an eviction */
    for (unsigned i = 0; i < n; i++)
        put(z, 10000 + i, 2000, 1500);
    st = stats_of(z);
    assert_int_equal(st.used, n);
    assert_true(has(z, 10000, 1600));
    assert_true(has(z, 10000 + n - 1, 1600));
    gw_sesscache_destroy(z);
}

static void shared_across_fork(void **state)
{
    gw_sesscache_t *z = zone_64k();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        put(z, 42, 100, 10);
        _exit(0);
    }
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    assert_true(has(z, 42, 20));
    gw_sesscache_destroy(z);
}

static void dead_lock_holder(void **state)
{
    gw_sesscache_t *z = zone_64k();
    put(z, 1, 100, 10);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        lock(z); /* and die holding it */
        _exit(0);
    }
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    /* no deadlock: the cache is emptied (the dead holder may have left it half updated) */
    assert_false(has(z, 1, 20));
    put(z, 2, 100, 10);
    assert_true(has(z, 2, 20));
    gw_sesscache_stats_t st = stats_of(z);
    assert_int_equal(st.recoveries, 1);
    gw_sesscache_destroy(z);
}

static void zone_registry(void **state)
{
    char why[256];
    int b1 = 0, b2 = 0, b3 = 0;
    gw_sesscache_t *a = gw_sesscache_acquire("A", 64 << 10, &b1, why, sizeof(why));
    assert_non_null(a);
    put(a, 5, 100, 10);
    /* same build, same name and size: the same zone */
    assert_ptr_equal(gw_sesscache_acquire("A", 64 << 10, &b1, why, sizeof(why)), a);
    /* same build, other size: an error */
    assert_null(gw_sesscache_acquire("A", 128 << 10, &b1, why, sizeof(why)));
    assert_non_null(strstr(why, "declared with sizes"));
    /* a reload (other build) with the same name and size keeps the sessions */
    assert_ptr_equal(gw_sesscache_acquire("A", 64 << 10, &b2, why, sizeof(why)), a);
    assert_true(has(a, 5, 20));
    /* ... with another size: a new zone (the old one lives on until released) */
    gw_sesscache_t *a2 = gw_sesscache_acquire("A", 128 << 10, &b3, why, sizeof(why));
    assert_non_null(a2);
    assert_ptr_not_equal(a2, a);
    assert_false(has(a2, 5, 20));
    char longname[80];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_null(gw_sesscache_acquire(longname, 64 << 10, &b2, why, sizeof(why)));
    /* three references to a: gcc 12 -O3 cannot see the count and warns after inlining */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
    gw_sesscache_release(a);
    gw_sesscache_release(a);
    gw_sesscache_release(a);
#pragma GCC diagnostic pop
    gw_sesscache_release(a2);
    gw_sesscache_release(NULL);
    /* all released: a new acquire makes a fresh zone */
    gw_sesscache_t *a3 = gw_sesscache_acquire("A", 64 << 10, &b1, why, sizeof(why));
    assert_non_null(a3);
    assert_false(has(a3, 5, 20));
    gw_sesscache_release(a3);
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(store_fetch_replace_remove), cmocka_unit_test(bad_input),
                    cmocka_unit_test(expiry), cmocka_unit_test(lru_when_full),
                    cmocka_unit_test(shared_across_fork), cmocka_unit_test(dead_lock_holder),
                    cmocka_unit_test(zone_registry));
}
