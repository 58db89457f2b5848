/*
 * LeakSanitizer and OpenSSL's secure heap (sanitizer builds): LeakSanitizer scans the
 * heap, stacks and globals, not the secure heap's mmap'd arena, so objects referenced
 * only from there (the provider's key objects point to ordinary allocations) would be
 * reported as leaks. Shared by the gateway (core/privs.c) and tests/integ/secheap_probe.c.
 */
#ifndef GW_CORE_LSAN_H
#define GW_CORE_LSAN_H

/**
 * After CRYPTO_secure_malloc_init: register the secure heap's arena (found through
 * /proc/self/maps from the address of a probe allocation) as a LeakSanitizer root region.
 * Does nothing in a build without AddressSanitizer, or when the arena is not found.
 */
void gw_lsan_register_secure_heap(void);

#endif
