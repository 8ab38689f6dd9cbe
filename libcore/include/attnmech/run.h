/* attnmech — the run API: one call does what `attnmech run` does (docs/embedding.md).
 *
 *   am_run_spec *spec;  am_run_spec_create(&spec);
 *   am_run_spec_set_task(spec, "markov");             // or an estimator that runs without a task
 *   am_run_spec_set(spec, "P", "200");                // every --set key=value: task, estimator, host keys
 *   double w[] = {10, 100};  am_run_spec_set_widths(spec, w, 2);   // the --width scan
 *   am_record *results = NULL;
 *   am_status st = am_run_execute(ctx, registry, spec, &results);  // the results document
 *   ... am_report_write(...) (attnmech/report.h), am_record_destroy(&results); am_run_spec_destroy(&spec);
 *
 * What a run does: validate everything cheap (names, kinds, parameters, widths) → create the task and
 * make its dataset (seed stream 1; never changed afterwards) → create the estimator once (seed stream 2) →
 * for each width of the scan: estimate on the dataset with the run's inputs (its widths, the spec's start;
 * plugin.h) into a new entry of "runs" — the estimator draws its random numbers afresh in every estimate,
 * so a width gives the same numbers alone or inside a scan → the document of docs/results-schema.md
 * (schema 2), with `report` from the plugins' describe functions.
 *
 * Host keys (set like any parameter): seed (default 0), threads (0 = all cores), widths (W0,…,WL, when
 * neither the task nor the estimator has a parameter of that name). Any other key is looked up in the
 * task's table, then the estimator's; the last setting of a key wins; an unknown key is AM_ERR_USAGE.
 *
 * Progress, log lines and cancel go through the context (am_context_cancel stops the run at the next
 * check; the document then holds the runs so far, status "cancelled"). am_run_execute is re-entrant: it
 * keeps no global state, the registry is only read, and BLAS's process-global thread count is never
 * changed by it (see am_blas_threads_set). */
#ifndef ATTNMECH_RUN_H
#define ATTNMECH_RUN_H

#include "registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AM_RESULTS_SCHEMA_VERSION 3

typedef struct am_run_spec am_run_spec;

AM_API am_status am_run_spec_create(am_run_spec **out);
/* Destroys *spec and sets it to NULL; accepts NULL. */
AM_API void am_run_spec_destroy(am_run_spec **spec);
/* The task by name; NULL or "" = none (then the estimator must run without a task). */
AM_API am_status am_run_spec_set_task(am_run_spec *spec, const char *task);
/* The estimator by name; NULL or "" = the task's default estimator. */
AM_API am_status am_run_spec_set_estimator(am_run_spec *spec, const char *estimator);
/* One key=value setting (text as a user types it; lists comma-separated). */
AM_API am_status am_run_spec_set(am_run_spec *spec, const char *key, const char *value);
/* The width scan: one run per entry, each with W_0 = … = W_L = widths[i] (overrides a `widths` setting).
 * n = 0 clears it (then the dataset's widths_scan is scanned, or one run with its own widths). */
AM_API am_status am_run_spec_set_widths(am_run_spec *spec, const double *widths, size_t n);
/* Optional starting state, copied and handed to the estimator as the run inputs' object "start" (e.g.
 * {"U": [U_1, …, U_L]} warm-starts the theory's Newton solve). NULL clears it. */
AM_API am_status am_run_spec_set_start(am_run_spec *spec, const am_record *state);

/* Checks the spec against the registry without running anything: plugin names and kinds, every parameter
 * value and range, host keys. AM_OK or AM_ERR_USAGE with a message on ctx. */
AM_API am_status am_run_validate(am_context *ctx, const am_registry *registry, const am_run_spec *spec);

/* Runs the spec. *results receives the results document (a record root; free it with am_record_destroy)
 * whenever any run started — also on failure, with the runs so far and "status" saying what happened.
 * Returns AM_OK (also when a solver stopped by round-off), AM_CANCELLED, AM_ERR_NOT_CONVERGED (a run's
 * solver failed; its results are marked), AM_ERR_USAGE (bad spec: *results stays NULL), or the error of
 * the run that failed. */
AM_API am_status am_run_execute(am_context *ctx, const am_registry *registry, const am_run_spec *spec,
                                am_record **results);

/* (Re)computes results["report"] ({plots, summary}) from the describe functions of the plugins the
 * document names (`task`, `estimator`); used for documents written without a report (schema 1). Plugins
 * not in the registry contribute nothing. */
AM_API am_status am_run_describe(am_context *ctx, const am_registry *registry, am_record *results);

#ifdef __cplusplus
}
#endif
#endif
