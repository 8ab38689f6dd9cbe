// The `theory` estimator plugin: runs the attention-path theory (spec attention-paths.md §3–§4) on an
// attention dataset through libcore's am_theory_estimate. All numerics live in libcore; this module
// only maps its parameter table onto am_theory_options.
#include <attnmech/plugin.h>
#include <attnmech/theory.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

namespace am_theory_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_theory_plugin

namespace {

struct Instance {
  const am_host *host;
  am_theory_options opts;
  std::vector<double> kernels_at;  // store kernels for runs whose largest width is one of these
};

const am_param_def kParams[] = {
    {"alignment_k", AM_PARAM_INT, "30",
     "principal components of the GP and renormalised training kernels whose overlap with the labels is "
     "reported (0 = skip the alignment)",
     0, 100000, nullptr},
    {"max_iter", AM_PARAM_INT, "100", "maximum damped-Newton iterations of the order-parameter solve", 1, 100000,
     nullptr},
    {"grad_tol", AM_PARAM_REAL, "1e-10",
     "convergence threshold: max |dS_code/dU| <= grad_tol * max(1, |S_code|)", 0, 1, nullptr},
    {"kernels_at", AM_PARAM_INT_LIST, "10",
     "widths N (largest layer width) at which the run also stores its training kernels: per-path pre-kernels "
     "C^pp, GP and renormalised (P x P each); empty = never",
     1, 1e12, nullptr},
};

am_status read_param(const am_host *h, const char *key, double lo, double *out) {
  double v = 0;
  am_status st = am_record_get_number(h->params, key, &v);
  if (st != AM_OK) return am_context_fail(h->ctx, AM_ERR_INVALID_ARGUMENT, "theory: parameter '%s' missing", key);
  if (!std::isfinite(v) || v < lo)
    return am_context_fail(h->ctx, AM_ERR_USAGE, "theory: parameter '%s' = %g is out of range", key, v);
  *out = v;
  return AM_OK;
}

am_status theory_create(const am_host *host, void **instance) {
  if (!host || !instance) return AM_ERR_INVALID_ARGUMENT;
  try {
    double k = 30, it = 100, tol = 1e-10;
    am_status st;
    if (host->params) {
      if ((st = read_param(host, "alignment_k", 0, &k)) != AM_OK) return st;
      if ((st = read_param(host, "max_iter", 1, &it)) != AM_OK) return st;
      if ((st = read_param(host, "grad_tol", 0, &tol)) != AM_OK) return st;
    }
    auto *inst = new (std::nothrow) Instance;
    if (!inst) return AM_ERR_NO_MEMORY;
    inst->host = host;
    am_theory_default_options(&inst->opts);
    inst->opts.alignment_k = static_cast<uint32_t>(k);
    inst->opts.solve.max_iter = static_cast<uint32_t>(it);
    inst->opts.solve.grad_tol = tol;
    size_t n = 0;
    if (host->params && am_record_get_vector(host->params, "kernels_at", nullptr, 0, &n) == AM_OK && n > 0) {
      inst->kernels_at.resize(n);
      am_record_get_vector(host->params, "kernels_at", inst->kernels_at.data(), n, &n);
    }
    *instance = inst;
    return AM_OK;
  } catch (...) {
    return AM_ERR_INTERNAL;
  }
}

void theory_destroy(void *instance) { delete static_cast<Instance *>(instance); }

am_status theory_estimate(void *instance, const am_record *dataset, am_record *run) {
  auto *inst = static_cast<Instance *>(instance);
  if (!inst || !run) return AM_ERR_INVALID_ARGUMENT;
  if (!dataset)
    return am_context_fail(inst->host->ctx, AM_ERR_USAGE, "theory: needs an attention dataset (run it on a task)");
  try {
    am_theory_options opts = inst->opts;
    opts.store_kernels = 0;
    if (!inst->kernels_at.empty()) {
      double w[64];
      size_t n = 0;
      if (am_record_get_vector(dataset, "widths", w, 64, &n) == AM_OK && n > 0 && n <= 64) {
        double wmax = *std::max_element(w, w + n);
        for (double k : inst->kernels_at)
          if (k == wmax) opts.store_kernels = 1;
      }
    }
    return am_theory_estimate(inst->host->ctx, dataset, &opts, run);
  } catch (...) {
    return am_context_fail(inst->host->ctx, AM_ERR_INTERNAL, "theory: unexpected exception");
  }
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_ESTIMATOR,
    "theory",
    "0.1.0",
    "Attention-path theory: Newton solve of the order parameters U, predictor mean/variance, GP baseline, "
    "kernel alignment, head scores",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_ATTENTION,
    nullptr,
    theory_create,
    theory_destroy,
    nullptr,
    theory_estimate,
    am_theory_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
