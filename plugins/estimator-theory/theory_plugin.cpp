// The `theory` estimator plugin: runs the attention-path theory (spec attention-paths.md §3–§4) on an
// attention dataset through libcore's am_theory_estimate (temperature scan with validation selection, GP
// baseline, GP limits of the dataset's path subsets, alignment, head scores). This module maps its parameter
// table onto am_theory_options and, when the dataset carries a trained network, adds the pruning evaluation
// of that network in the order of the run's head scores (prune.cpp).
#include <attnmech/plugin.h>
#include <attnmech/theory.h>

#include "prune.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

namespace {

struct Instance {
  const am_host *host;
  am_theory_options opts;
  std::vector<double> kernels_at;  // store kernels for runs whose largest width is one of these
  std::vector<double> temperatures;  // temperature grid ("" = the dataset's temperatures_scan)
  std::vector<double> prune_at;      // prune the dataset's network at runs whose largest width is one of these
  size_t random_orders = 20;
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
    {"temperatures", AM_PARAM_REAL_LIST, "",
     "temperature grid scanned in every run (warm starts along T); the run reports the T of best validation "
     "accuracy (dataset split X_val). Empty = the dataset's temperatures_scan if it has one, else its temperature",
     1e-12, 1e12, nullptr},
    {"prune_at", AM_PARAM_INT_LIST, "10",
     "widths N at which the run also prunes the dataset's trained network (key network) head by head on the test "
     "split, in the order of this run's head scores, the reverse order and random orders; empty = never",
     1, 1e12, nullptr},
    {"random_orders", AM_PARAM_INT, "20", "random pruning orders averaged against the head-score order", 0, 1e6,
     nullptr},
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

void read_vector(const am_record *obj, const char *key, std::vector<double> *out) {
  size_t n = 0;
  out->clear();
  am_status st = am_record_get_vector(obj, key, nullptr, 0, &n);
  if ((st != AM_OK && st != AM_ERR_BUFFER_TOO_SMALL) || n == 0) return;
  out->resize(n);
  am_record_get_vector(obj, key, out->data(), n, &n);
}

void read_list(const am_host *h, const char *key, std::vector<double> *out) { read_vector(h->params, key, out); }

// Largest width of the dataset (the run's N), NaN without widths.
double run_width(const am_record *dataset) {
  double w[64];
  size_t n = 0;
  if (am_record_get_vector(dataset, "widths", w, 64, &n) != AM_OK || n == 0 || n > 64) return NAN;
  return *std::max_element(w, w + n);
}

bool listed(const std::vector<double> &list, double v) { return std::find(list.begin(), list.end(), v) != list.end(); }

am_status theory_create(const am_host *host, void **instance) {
  if (!host || !instance) return AM_ERR_INVALID_ARGUMENT;
  try {
    double k = 30, it = 100, tol = 1e-10, ro = 20;
    am_status st;
    if (host->params) {
      if ((st = read_param(host, "random_orders", 0, &ro)) != AM_OK) return st;
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
    if (host->params) {
      read_list(host, "kernels_at", &inst->kernels_at);
      read_list(host, "temperatures", &inst->temperatures);
      read_list(host, "prune_at", &inst->prune_at);
    }
    inst->random_orders = static_cast<size_t>(ro);
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
    const double width = run_width(dataset);
    opts.store_kernels = listed(inst->kernels_at, width) ? 1 : 0;
    opts.temperatures = inst->temperatures.empty() ? nullptr : inst->temperatures.data();
    opts.n_temperatures = inst->temperatures.size();
    am_status st = am_theory_estimate(inst->host->ctx, dataset, &opts, run);
    if ((st != AM_OK && st != AM_ERR_NOT_CONVERGED) || !listed(inst->prune_at, width) ||
        !theory_prune::has_network(dataset))
      return st;
    std::vector<double> scores;
    read_vector(run, "head_scores", &scores);
    am_rng r;
    am_rng_split(&inst->host->rng, 19, &r);
    const am_status pst = theory_prune::prune(inst->host->ctx, dataset, scores, inst->random_orders, r, run);
    return pst != AM_OK ? pst : st;
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
    "Attention-path theory: Newton solve of the order parameters U (temperature scan, validation selection), "
    "predictor mean/variance, GP baseline and GP of path subsets, kernel alignment, head scores, pruning",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_ATTENTION,
    nullptr,
    theory_create,
    theory_destroy,
    nullptr,
    theory_estimate,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
