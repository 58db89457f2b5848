/*
 * Accelerators: OpenSSL 3 providers (`ssl_provider`) and legacy engines (`ssl_engine`)
 * loaded into the process's default library context, the default property query, and
 * the per-worker poll hook of providers that offer one.
 */
#ifndef GW_TLS_ACCEL_H
#define GW_TLS_ACCEL_H

#include "conf/conf.h"
#include "tlsgate/prov.h"

/**
 * Load every provider and engine of conf that is not loaded yet, and set the default
 * property query. Providers are loaded through a generated OpenSSL configuration (the
 * same `[provider_sect]` an `openssl.cnf` would hold: `module`, `activate`, and the
 * PARAM VALUE pairs), so providers read their parameters as they always do; the default
 * provider is activated too. A provider already loaded (a reload) keeps its parameters:
 * changing them needs a restart, which is logged.
 *
 * Returns 0, or -1 after adding "FILE:LINE: ssl_provider: NAME: reason" messages
 * (OpenSSL's reasons included) to errs.
 */
int gw_accel_load(const gw_conf_t *conf, gw_errlist_t *errs);

/**
 * The poll hook: for every loaded provider that has a gettable integer parameter named
 * "poll" (a provider opts in by offering it; reading it completes what the provider has
 * queued and returns how many requests it completed), read it, together with the optional
 * integer "queued" (requests the provider still holds for this thread: a batching provider
 * lets a queue that is still growing wait for the next pass). Called by a worker once per
 * loop pass while async jobs are paused. backlog: the work this pass still has (its
 * ready events plus woken jobs; 0 when the loop is about to idle), passed as the input
 * parameter "poll_backlog": our provider computes a partial batch only when it is 0 or the
 * batch waited its cap (prov/README.md). Returns the total completed (0 when no provider
 * polls) and sets *queued to the total still held (0 when no provider reports it).
 */
int gw_accel_poll(int *queued, unsigned backlog);

/** Does any loaded provider offer the poll hook? */
int gw_accel_has_poll(void);

/**
 * The idle hook: for every loaded provider that offers a gettable unsigned parameter named
 * "idle" (ours: one batch of idle-time precomputation, prov/README.md), read it once.
 * Called by a worker whose loop pass found nothing ready and has no job paused, i.e. just
 * before it would block. Returns the work the providers still have (the sum of what they
 * returned; 0: nothing left, block).
 */
unsigned gw_accel_idle(void);

/** Does any loaded provider offer the idle hook? */
int gw_accel_has_idle(void);

/** Does a loaded provider offer the "metrics" parameter (an octet string of
 * sizeof(tlsgate_metrics_t), prov/include/tlsgate/prov.h)? */
int gw_accel_has_metrics(void);

/**
 * Read the metrics snapshot of the first loaded provider that offers "metrics" into *out
 * (caller's buffer). A provider whose answer is not our layout (refused, another size,
 * another version or algorithm count) is never asked again. Returns 1 with *out filled,
 * or 0 when no provider gave a usable snapshot (*out is then undefined).
 */
int gw_accel_metrics(tlsgate_metrics_t *out);

#endif
