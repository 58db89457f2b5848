/* `tlsgate -V`: what was built, with what, and what it will load. */
#ifndef GW_BUILDINFO_H
#define GW_BUILDINFO_H

#include <stdio.h>

#include "conf/conf.h"

/**
 * Write to f: the version; the build options (OpenSSL headers compiled against, compiler,
 * CMake build type, sanitizers, -Werror); the OpenSSL library running now and its module
 * directory; whether this CPU can run mb8's AVX-512 IFMA kernels (asked of the built-in
 * tlsgate provider, OSSL_PROV_PARAM_BUILDINFO); and, when conf is not NULL, the providers
 * (with module path, "not found" when it is missing, and parameters), engines and property
 * query that conf (read from conf_name) loads; conf NULL with conf_name set: that file
 * could not be read; both NULL: no file. Nothing is loaded into the process's
 * default library context. Never fails (unknown facts are printed as such).
 */
void gw_version_print(FILE *f, const gw_conf_t *conf, const char *conf_name);

#endif
