// fuzz-sources: gw/proxy/response.c
/* Upstream response heads (gw/proxy/response.c): never crash, never read past the input,
 * and a head that parses is consistent (length within the input, status 100..599). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "proxy/response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_dup_exact(data, size); /* ASan sees any read past the end */
    int status = 0, minor = 0, has_cl = 0, chunked = 0, conn_close = 0;
    unsigned long long cl = 0;
    int r =
        gw_proxy_parse_response(buf, size, &status, &minor, &has_cl, &cl, &chunked, &conn_close);
    CHECK(r >= -1 && (size_t)(r > 0 ? r : 0) <= size);
    if (r > 0) {
        CHECK(status >= 100 && status <= 599);
        CHECK(chunked >= 0 && chunked <= 2);
        CHECK(!(has_cl && chunked));
        CHECK(cl <= 0x7fffffffffffffffULL);
        /* a prefix of a complete head is incomplete or the same verdict, never longer */
        int r2 = gw_proxy_parse_response(buf, (size_t)r, &status, &minor, &has_cl, &cl, &chunked,
                                         &conn_close);
        CHECK(r2 == r);
    }
    size_t pos = 0, el;
    const char *e;
    int n = 0;
    while (gw_proxy_list_elem(buf, size, &pos, &e, &el)) {
        CHECK(e >= buf && e + el <= buf + size && el > 0);
        CHECK(++n <= (int)size);
    }
    free(buf);
    return 0;
}
