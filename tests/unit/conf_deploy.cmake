# Issue #23's configuration: include with globs (files written to a temporary directory),
# add_header, error_page, allow/deny, real_ip, log_format, underscores_in_headers, and
# the CIDR matcher (gw/conf/include.c, gw/conf/deploy.c; libc only).
tlsgate_unit_test(conf_deploy ${GW_CONF_SOURCES} ${CMAKE_SOURCE_DIR}/gw/net/realip.c)
