/*
 * The P-384 kernels behind mb8/p384.h (internal to mb8): common/ec_internal.h declares them
 * for this curve (mb8__p384_ecdh_ref, mb8__p384_ecdh_ifma, ...) and says what they do.
 */
#ifndef MB8_P384_INTERNAL_H
#define MB8_P384_INTERNAL_H

#include "mb8/p384.h"

#define MB8__EC p384
#define MB8__EC_UC P384
#define MB8__EC_WS_BYTES 49152
#include "../common/ec_internal.h"

#endif
