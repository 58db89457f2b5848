/* see mb8/p384.h: the public entry points, lane bookkeeping and kernel dispatch, those of
 * common/ec_dispatch.h for P-384. */
#include "p384_internal.h"

#include "../common/ec_dispatch.h"
