# Observability pages (gw/core/obs.c, gw/core/stats.c): snapshot, fold into the retired
# total, JSON and Prometheus rendering. Built straight from the two sources (libc only;
# the provider's public header for the metrics layout).
tlsgate_unit_test(core_obs ${CMAKE_SOURCE_DIR}/gw/core/obs.c ${CMAKE_SOURCE_DIR}/gw/core/stats.c)
target_include_directories(unit_core_obs_test PRIVATE ${CMAKE_SOURCE_DIR}/prov/include)
