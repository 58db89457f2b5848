// fuzz-sources: gw/net/realip.c gw/conf/deploy.c gw/conf/conf.c gw/conf/lexer.c
// gw/conf/directives.c gw/conf/include.c
/* Fuzz target: the client address of a trusted proxy's X-Forwarded-For (gw_realip_pick):
 * whoever is behind the proxy writes the field. The first byte chooses recursive mode;
 * 10.0.0.0/8 and ::1 are trusted. A picked address is IPv4 or IPv6, its port 0-65535. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "fuzz.h"

#include "net/realip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gw_cidr_t trusted[2];
    static int init;
    if (!init) {
        CHECK(gw_cidr_parse("10.0.0.0/8", &trusted[0]) == 0);
        CHECK(gw_cidr_parse("::1", &trusted[1]) == 0);
        init = 1;
    }
    if (size == 0)
        return 0;
    int recursive = data[0] & 1;
    int family = 0, port = -1;
    unsigned char addr[16];
    int r = gw_realip_pick((const char *)data + 1, size - 1, trusted, 2, recursive, &family, addr,
                           &port);
    CHECK(r == 0 || r == 1);
    if (r == 1)
        CHECK((family == AF_INET || family == AF_INET6) && port >= 0 && port <= 65535);
    return 0;
}
