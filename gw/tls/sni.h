/* The server_name extension parser, libc only so that it is fuzzed alone. */
#ifndef GW_TLS_SNI_H
#define GW_TLS_SNI_H

#include <stddef.h>

/**
 * Parse the body of a server_name extension (RFC 6066 §3): ServerNameList<1..2^16-1> of
 * { NameType; HostName<1..2^16-1> }. Returns 1 with *name and *len set to the first host_name
 * (pointing into ext), 0 when the list holds no host_name, -1 when it is malformed.
 */
int gw_tls_parse_sni(const unsigned char *ext, size_t ext_len, const unsigned char **name,
                     size_t *len);

#endif
