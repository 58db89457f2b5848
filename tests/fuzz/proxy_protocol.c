// fuzz-sources: gw/net/proxy_protocol.c
/* Fuzz target: the PROXY protocol v1/v2 header parser (the first bytes of a connection on
 * a `listen ... proxy_protocol` address: whoever can connect controls them). Checks that
 * a parse never reads past the input or the spec's bounds, and that a header's length is
 * stable: the same header parsed with trailing bytes gives the same result. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"

#include "net/proxy_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gw_pp_t pp;
    const char *why = NULL;
    int r = gw_pp_parse(data, size, &pp, &why);
    CHECK(r >= -1);
    CHECK((r == -1) == (why != NULL));
    if (r > 0) {
        CHECK((size_t)r <= size && (size_t)r <= GW_PP_V2_MAX);
        CHECK(pp.version == 1 || pp.version == 2);
        CHECK(pp.family == 0 || pp.family == AF_INET || pp.family == AF_INET6);
        CHECK(pp.src_port >= 0 && pp.src_port <= 65535);
        CHECK(pp.dst_port >= 0 && pp.dst_port <= 65535);
        if (pp.version == 1)
            CHECK(r <= GW_PP_V1_MAX);
        /* every prefix of a complete header is "incomplete", never an error */
        for (size_t k = 0; k < (size_t)r; k++) {
            gw_pp_t q;
            const char *w = NULL;
            CHECK(gw_pp_parse(data, k, &q, &w) == 0);
        }
    }
    if (r == 0) /* incomplete: only a prefix of a valid beginning */
        CHECK(size < GW_PP_V2_MAX);
    return 0;
}
