# Issue #23's configuration: include with globs (files written to a temporary directory),
# add_header, error_page, allow/deny, real_ip, log_format, underscores_in_headers, and
# the CIDR matcher (gw/conf/include.c, gw/conf/deploy.c; libc only).
add_executable(unit_deploy_conf ${CMAKE_SOURCE_DIR}/tests/unit/deploy_conf_test.c
               ${GW_CONF_SOURCES} ${CMAKE_SOURCE_DIR}/gw/net/realip.c)
target_include_directories(unit_deploy_conf PRIVATE ${CMAKE_SOURCE_DIR}/gw)
target_link_libraries(unit_deploy_conf PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_deploy_conf COMMAND unit_deploy_conf)
