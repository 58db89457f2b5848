/*
 * Keccak-f[1600] and the FIPS 202 sponges ML-KEM needs (internal to mb8): SHA3-256,
 * SHA3-512, SHAKE128, SHAKE256. Portable C, one state at a time (keccak.c); the state is
 * 25 lanes of 64 bits, byte i of the sponge at bits 8(i % 8) of lane i / 8 (FIPS 202 §B.1
 * order). Timing depends only on the lengths absorbed and squeezed.
 */
#ifndef MB8_MLKEM_KECCAK_H
#define MB8_MLKEM_KECCAK_H

#include <stddef.h>
#include <stdint.h>

/* Rates in bytes (FIPS 202 §6: 1600 - 2 * capacity bits). */
#define MB8__SHAKE128_RATE 168
#define MB8__SHAKE256_RATE 136
#define MB8__SHA3_256_RATE 136
#define MB8__SHA3_512_RATE 72

/* Domain separation: the suffix bits and the first pad bit (FIPS 202 §6.1, §6.2). */
#define MB8__SHA3_DS 0x06u
#define MB8__SHAKE_DS 0x1Fu

/* A sponge: absorb any number of times, finalize once, then squeeze any number of times. */
typedef struct {
    uint64_t s[25];
    unsigned rate; /* bytes */
    unsigned pos;  /* bytes absorbed into / squeezed from the current block */
} mb8__keccak_t;

/* The round constants RC[ir] of the iota step (FIPS 202 §3.2.5, Algorithm 5 evaluated);
 * the 8-state permutation of mlkem_avx512.c uses them too. */
extern const uint64_t mb8__keccak_rc[24];

/* The permutation Keccak-p[1600, 24] (FIPS 202 §3.3). */
void mb8__keccak_f1600(uint64_t s[25]);

void mb8__keccak_init(mb8__keccak_t *k, unsigned rate);
void mb8__keccak_absorb(mb8__keccak_t *k, const uint8_t *in, size_t len);
/* pad10*1 with the domain bits ds (MB8__SHA3_DS or MB8__SHAKE_DS), then the permutation. */
void mb8__keccak_finalize(mb8__keccak_t *k, unsigned ds);
void mb8__keccak_squeeze(mb8__keccak_t *k, uint8_t *out, size_t len);

/* One-shot hashes of a || b (b may be NULL with blen 0). */
void mb8__sha3_256(uint8_t out[32], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
void mb8__sha3_512(uint8_t out[64], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
void mb8__shake256(uint8_t *out, size_t outlen, const uint8_t *a, size_t alen, const uint8_t *b,
                   size_t blen);

#endif
