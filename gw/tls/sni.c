/* The server_name extension's body (RFC 6066 §3); see gw/tls/tls.h. libc only. */
#include <stddef.h>

#include "tls/sni.h"

int gw_tls_parse_sni(const unsigned char *p, size_t n, const unsigned char **name, size_t *len)
{
    if (n < 2)
        return -1;
    size_t list = ((size_t)p[0] << 8) | p[1];
    if (list + 2 != n || list < 3)
        return -1;
    p += 2;
    size_t left = list;
    while (left >= 3) {
        unsigned type = p[0];
        size_t l = ((size_t)p[1] << 8) | p[2];
        if (l + 3 > left || l == 0)
            return -1;
        if (type == 0 /* host_name */) {
            /* "The ServerNameList MUST NOT contain more than one name of the same
             * name_type": the first host_name is the one that counts. */
            *name = p + 3;
            *len = l;
            return 1;
        }
        p += 3 + l;
        left -= 3 + l;
    }
    return left == 0 ? 0 : -1;
}
