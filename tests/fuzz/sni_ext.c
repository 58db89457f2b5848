// fuzz-sources: gw/tls/sni.c
/* Fuzz target: the server_name extension body parser (attacker-controlled ClientHello). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"

#include "tls/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const unsigned char *name = NULL;
    size_t len = 0;
    int r = gw_tls_parse_sni(data, size, &name, &len);
    CHECK(r >= -1 && r <= 1);
    if (r == 1) {
        /* the name lies wholly inside the input */
        CHECK(name >= data && len > 0 && (size_t)(name - data) + len <= size);
    }
    return 0;
}
