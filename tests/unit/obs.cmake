# Observability pages (gw/core/obs.c, gw/core/stats.c): snapshot, fold into the retired
# total, JSON and Prometheus rendering. Built straight from the two sources (libc only;
# the provider's public header for the metrics layout).
add_executable(unit_obs_test ${CMAKE_SOURCE_DIR}/tests/unit/obs_test.c
                             ${CMAKE_SOURCE_DIR}/gw/core/obs.c ${CMAKE_SOURCE_DIR}/gw/core/stats.c)
target_include_directories(unit_obs_test PRIVATE ${CMAKE_SOURCE_DIR}/gw
                                                 ${CMAKE_SOURCE_DIR}/prov/include)
target_link_libraries(unit_obs_test PRIVATE PkgConfig::CMOCKA)
add_test(NAME unit_obs COMMAND unit_obs_test)
