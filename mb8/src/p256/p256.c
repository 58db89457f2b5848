/* see mb8/p256.h: the public entry points, lane bookkeeping and kernel dispatch, those of
 * common/ec_dispatch.h for P-256. */
#include "p256_internal.h"

#include "../common/ec_dispatch.h"
