/*
 * ML-KEM-768 (FIPS 203, August 2024) for 8 independent lanes: key generation,
 * encapsulation and decapsulation, the ML-KEM.*_internal algorithms of FIPS 203 §6 with
 * the input checks of §7.2 and §7.3. The caller draws the randomness (d, z and m: 32 bytes
 * each from an approved RBG, FIPS 203 §3.3); mb8 calls no RNG.
 *
 * In TLS (draft-ietf-tls-ecdhe-mlkem) the client generates a key pair and sends ek, the
 * server encapsulates against it (the operation a gateway batches), and the client
 * decapsulates the server's ciphertext.
 *
 * Kernels: SHA3-256, SHA3-512, SHAKE128 and SHAKE256 (FIPS 202) are mb8's own Keccak-f[1600]
 * (mb8 uses no OpenSSL). Encapsulation has an AVX-512 path selected at run time
 * (mb8_cpu_has_ifma(): the same CPUs); key generation and decapsulation run the portable
 * kernel (src/mlkem/mlkem_ref.c) lane by lane. Both give bit-identical results (tests/diff).
 *
 * Lane conventions are those of mb8/status.h. The lane arrays must not be NULL; their
 * entries may be, as each function says. Outputs may not alias inputs. Nothing is
 * allocated; secret temporaries are wiped before return.
 *
 * Timing: depends only on which lanes are used and on public data (the encapsulation
 * key's bytes: the rejection sampling of the matrix A from rho takes a variable number of
 * SHAKE128 blocks, and a rejected key returns earlier); never on d, z, m, the decapsulation
 * key's secret part or whether decapsulation rejected the ciphertext (implicit rejection
 * selects the output by mask).
 */
#ifndef MB8_MLKEM_H
#define MB8_MLKEM_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/status.h"

/** Encapsulation key (public): ByteEncode12(t) || rho, 384 * 3 + 32 bytes (FIPS 203 Table 3). */
#define MB8_MLKEM768_EK_BYTES 1184
/** Decapsulation key: dk_PKE (1152) || ek (1184) || H(ek) (32) || z (32). */
#define MB8_MLKEM768_DK_BYTES 2400
/** Ciphertext: ByteEncode10(u) (960) || ByteEncode4(v) (128). */
#define MB8_MLKEM768_CT_BYTES 1088
/** Shared secret, and each of the seeds d, z and the message m. */
#define MB8_MLKEM_SS_BYTES 32
#define MB8_MLKEM_SEED_BYTES 32

/** Bytes of scratch mb8_mlkem768_encaps needs (any kernel; MB8_SCRATCH_ALIGN-aligned). */
size_t mb8_mlkem768_scratch_size(void);

/**
 * ML-KEM.KeyGen_internal(d, z) (FIPS 203 Algorithm 16) for each lane.
 *
 * - d[i], z[i]: 32 bytes each, the key's seeds (secret). d[i] NULL marks lane i unused
 *   (MB8_STATUS_UNUSED, nothing read or written).
 * - ek[i]: MB8_MLKEM768_EK_BYTES; dk[i]: MB8_MLKEM768_DK_BYTES.
 *
 * Status: MB8_STATUS_OK, MB8_STATUS_UNUSED, or MB8_STATUS_BAD_INPUT when d[i] != NULL but
 * z[i], ek[i] or dk[i] is NULL (outputs not written). Portable kernel only.
 */
mb8_status_t mb8_mlkem768_keygen(uint8_t *const ek[MB8_LANES], uint8_t *const dk[MB8_LANES],
                                 const uint8_t *const d[MB8_LANES],
                                 const uint8_t *const z[MB8_LANES]);

/**
 * The modulus check of FIPS 203 §7.2 on one encapsulation key (MB8_MLKEM768_EK_BYTES):
 * 1 when every 12-bit coefficient of its first 1152 bytes is below q = 3329, else 0.
 * mb8_mlkem768_encaps runs it too; this is for a caller that must reject a key before it
 * encapsulates (a TLS server checks the client's key share on receipt). Public data;
 * constant time anyway.
 */
int mb8_mlkem768_ek_check(const uint8_t *ek);

/**
 * ML-KEM.Encaps_internal(ek, m) (FIPS 203 Algorithm 17) for each lane, after the
 * encapsulation key check of FIPS 203 §7.2 (the length is the caller's: ek[i] points to
 * MB8_MLKEM768_EK_BYTES bytes; the modulus check: every 12-bit coefficient of t below q =
 * 3329, i.e. ByteEncode12(ByteDecode12(ek)) == ek).
 *
 * - ek[i]: the peer's encapsulation key (public). NULL marks lane i unused.
 * - m[i]: 32 random bytes (secret).
 * - ct[i]: MB8_MLKEM768_CT_BYTES; ss[i]: MB8_MLKEM_SS_BYTES, the shared secret K.
 * - scratch: mb8_mlkem768_scratch_size() bytes, MB8_SCRATCH_ALIGN-aligned (the vector
 *   kernel's matrix and polynomials; wiped before return).
 *
 * Status: MB8_STATUS_OK; MB8_STATUS_UNUSED; MB8_STATUS_BAD_INPUT when ek[i] fails the
 * modulus check (ct[i] and ss[i] are then not written), or m[i], ct[i] or ss[i] is NULL,
 * or scratch is NULL or misaligned (every used lane). Runs the AVX-512 kernel when
 * mb8_cpu_has_ifma(), else the portable one.
 */
mb8_status_t mb8_mlkem768_encaps(uint8_t *const ct[MB8_LANES], uint8_t *const ss[MB8_LANES],
                                 const uint8_t *const ek[MB8_LANES],
                                 const uint8_t *const m[MB8_LANES], void *scratch);

/**
 * ML-KEM.Decaps_internal(dk, c) (FIPS 203 Algorithm 18) for each lane, after the
 * decapsulation input check of FIPS 203 §7.3 (the hash check: H(dk[1152:2336]) equals
 * dk[2336:2368]; lengths are the caller's). Implicit rejection: a ciphertext that does not
 * re-encrypt to itself yields K' = J(z || c) = SHAKE256(z || c, 32 bytes), selected by
 * mask, with MB8_STATUS_OK: the caller cannot tell (FIPS 203 §6.3).
 *
 * - dk[i]: MB8_MLKEM768_DK_BYTES (secret). NULL marks lane i unused.
 * - ct[i]: MB8_MLKEM768_CT_BYTES from the peer (public; any bytes are a valid input).
 * - ss[i]: MB8_MLKEM_SS_BYTES.
 *
 * Status: MB8_STATUS_OK; MB8_STATUS_UNUSED; MB8_STATUS_BAD_KEY when dk[i] fails the hash
 * check (ss[i] not written); MB8_STATUS_BAD_INPUT when ct[i] or ss[i] is NULL. Portable
 * kernel only. Timing: independent of dk's secret part and of the rejection.
 */
mb8_status_t mb8_mlkem768_decaps(uint8_t *const ss[MB8_LANES], const uint8_t *const ct[MB8_LANES],
                                 const uint8_t *const dk[MB8_LANES]);

#endif
