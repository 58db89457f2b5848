/*
 * The P-256 kernels behind mb8/p256.h (internal to mb8): common/ec_internal.h declares them
 * for this curve (mb8__p256_ecdh_ref, mb8__p256_ecdh_ifma, ...) and says what they do.
 */
#ifndef MB8_P256_INTERNAL_H
#define MB8_P256_INTERNAL_H

#include "mb8/p256.h"

#define MB8__EC p256
#define MB8__EC_UC P256
#define MB8__EC_WS_BYTES 32768
#include "../common/ec_internal.h"

#endif
