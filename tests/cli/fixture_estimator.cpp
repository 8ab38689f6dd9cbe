// Test fixture for the CLI: a tiny estimator plugin ("cli-fixture") that runs without a task (and accepts
// sequence data, not attention data), writes known values, and can be asked to fail, not converge, or run
// slowly (to test Ctrl-C). Loaded with --plugin only.
#include <attnmech/plugin.h>
#include <attnmech/report_spec.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

namespace {

struct Instance {
  const am_host *host;
};

const am_param_def kParams[] = {
    AM_PARAM("n", AM_PARAM_INT, "20", "length of the trace array", 1, 1000, nullptr),
    AM_PARAM("scale", AM_PARAM_REAL, "1.5", "multiplier of the trace", 0, 100, nullptr),
    AM_PARAM("outcome", AM_PARAM_CHOICE, "ok", "what the run returns", 0, -1, "ok|not_converged|error|slow|nan|warn"),
    AM_PARAM("plot", AM_PARAM_STRING, "", "a line plot of the trace under this file name (a name the report refuses: "
             "a plot that cannot be drawn)", 0, 0, nullptr),
};

am_status create(const am_host *host, void **instance) {
  auto *in = new (std::nothrow) Instance{host};
  if (!in) return AM_ERR_NO_MEMORY;
  *instance = in;
  return AM_OK;
}

void destroy(void *instance) { delete static_cast<Instance *>(instance); }

am_status estimate(void *instance, const am_record *, const am_record *, am_record *run) {
  const am_host *h = static_cast<Instance *>(instance)->host;
  try {
    double n = 0, scale = 0;
    const char *outcome = "ok";
    am_record_get_number(h->params, "n", &n);
    am_record_get_number(h->params, "scale", &scale);
    am_record_get_string(h->params, "outcome", &outcome);
    std::vector<double> trace(static_cast<size_t>(n));
    for (size_t i = 0; i < trace.size(); ++i) trace[i] = scale * static_cast<double>(i);
    am_record_set_vector(run, "trace", trace.data(), trace.size());
    // J(i, j) = 10 i + j, 3 × 4, column-major with ld 5.
    double J[5 * 4];
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 5; ++i) J[i + 5 * j] = i < 3 ? 10.0 * i + j : -1.0;
    am_record_set_matrix(run, "J", J, 3, 4, 5);
    am_record_set_number(run, "value", scale * n);
    am_record_set_number(run, "seed", static_cast<double>(h->seed));
    am_rng r;
    am_host_rng(h, &r);
    am_record_set_number(run, "rng_first", static_cast<double>(am_rng_u32(&r)));
    am_record_set_number(run, "threads", h->threads);
    if (std::strcmp(outcome, "nan") == 0) am_record_set_number(am_record_object(run, "solver"), "hessian_min_eig", NAN);
    if (std::strcmp(outcome, "warn") == 0) am_record_append_string(am_record_list(run, "warnings"), "fixture: flagged");
    if (std::strcmp(outcome, "not_converged") == 0)
      return am_context_fail(h->ctx, AM_ERR_NOT_CONVERGED, "fixture: not converged as requested");
    if (std::strcmp(outcome, "error") == 0) return am_context_fail(h->ctx, AM_ERR_DOMAIN, "fixture: failure requested");
    if (std::strcmp(outcome, "slow") == 0) {
      am_context_log(h->ctx, AM_LOG_INFO, "fixture: started");
      for (int k = 0; k < 3000; ++k) {  // up to 30 s
        if (am_context_progress(h->ctx, k, 3000, "fixture")) {
          am_record_set_number(run, "steps_done", k);
          return AM_CANCELLED;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return AM_OK;
  } catch (...) {
    return AM_ERR_INTERNAL;
  }
}

// Its summary: the scalars of every run (the CLI prints what the plugins declare).
am_status describe(am_context *, const am_record *results, am_record *report) {
  am::spec::Report rep(report);
  const char *plot = nullptr;
  if (am_record_get_string(am_record_get(am_record_get(results, "params"), "estimator"), "plot", &plot) == AM_OK && plot &&
      *plot)
    rep.lines(plot, "trace", "i", "trace").series("trace", "", "runs.0.trace");
  for (size_t i = 0; i < am_record_size(am_record_get(results, "runs")); ++i) {
    am::spec::Node v = rep.values("run " + std::to_string(i));
    rep.scalar_items(v, results, am::spec::cat("runs", i));
  }
  return rep.status();
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION, sizeof(am_plugin_desc), AM_PLUGIN_ESTIMATOR, "cli-fixture", "0.0.1",
    "CLI test fixture: known values, requested failures", kParams, sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_SEQUENCE | AM_DATA_NONE, nullptr, create, destroy, nullptr, estimate, describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
