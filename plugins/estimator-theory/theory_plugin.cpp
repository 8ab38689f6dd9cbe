// The `theory` estimator plugin: runs the attention-path theory (docs/design.md "Equations → code") on an
// attention dataset through the attention library's estimate (plugins/common/attention: temperature scan with
// validation selection, GP baseline, GP limits of the dataset's path subsets, alignment, head scores). This
// module maps its parameter table onto am::attention::Options, keeps the dataset's path inputs ξ for every
// width of a scan and, when the dataset carries a trained network, adds the pruning evaluation of that network
// in the order of the run's head scores (prune.cpp).
#include <attnmech/plugin.hpp>
#include <attnmech/theory.h>

#include "estimate.hpp"

#include "describe.hpp"
#include "prune.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

struct Opt {
  long alignment_k = 30, max_iter = 100, random_orders = 20;
  double grad_tol = 1e-10;
  std::vector<double> kernels_at, temperatures, prune_at;
  std::string kernels = "blocks";
};

using am::sdk::param;
constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::alignment_k>("alignment_k", "30",
                             "principal components of the GP and renormalised training kernels whose overlap with the "
                             "labels is reported (0 = skip the alignment)",
                             0, 100000),
    param<&Opt::max_iter>("max_iter", "100", "maximum damped-Newton iterations of the order-parameter solve", 1, 100000),
    param<&Opt::grad_tol>("grad_tol", "1e-10", "convergence threshold: max |dS_code/dU| <= grad_tol * max(1, |S_code|)",
                          0, 1),
    param<&Opt::kernels_at>("kernels_at", "10",
                            "widths N (largest layer width) at which the run also stores its training kernels: "
                            "per-path pre-kernels C^pp, GP and renormalised (P x P each); empty = never",
                            1, 1e12),
    param<&Opt::kernels>("kernels", "blocks",
                         "what the widths of kernels_at store: blocks = the rows and columns of the first and last 25 "
                         "training examples (what the heat maps draw; kernels.examples lists them, kernels.min holds "
                         "each whole kernel's smallest element); full = every kernel whole (3 + H_tot matrices of "
                         "P x P doubles in memory and in .npy files)",
                         0, -1, "blocks|full"),
    param<&Opt::temperatures>("temperatures", "",
                              "temperature grid scanned in every run (warm starts along T); the run reports the T of "
                              "best validation accuracy (dataset split X_val). Empty = the dataset's "
                              "temperatures_scan if it has one, else its temperature",
                              1e-12, 1e12),
    param<&Opt::prune_at>("prune_at", "10",
                          "widths N at which the run also prunes the dataset's trained network (key network) head by "
                          "head on the test split, in the order of this run's head scores, the reverse order and "
                          "random orders; empty = never",
                          1, 1e12),
    param<&Opt::random_orders>("random_orders", "20", "random pruning orders averaged against the head-score order", 0,
                               1e6),
};

// Largest width of the run (the run's N: its inputs' widths, else the dataset's), NaN without widths.
double run_width(const am_record *dataset, const am_record *inputs) {
  const am_record *src = am_record_get(inputs, "widths") ? inputs : dataset;
  double w[AM_MAX_LAYERS + 1];
  size_t n = 0;
  if (am_record_get_vector(src, "widths", w, AM_MAX_LAYERS + 1, &n) != AM_OK || n == 0) return NAN;
  return *std::max_element(w, w + n);
}

bool listed(const std::vector<double> &list, double v) { return std::find(list.begin(), list.end(), v) != list.end(); }

struct Theory {
  am::sdk::Host host;
  Opt opt;
  // ξ of the dataset the runs see (the host's dataset does not change between the runs of a scan).
  const am_record *xi_of = nullptr;
  am::attention::PathInputs xi;
  Theory(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {}

  am_status estimate(const am_record *dataset, const am_record *inputs, am_record *run) {
    if (!dataset) throw am::sdk::Error(AM_ERR_USAGE, "theory: needs an attention dataset (run it on a task)");
    am::attention::Options opts;
    opts.solve.max_iter = static_cast<uint32_t>(opt.max_iter);
    opts.solve.grad_tol = opt.grad_tol;
    opts.alignment_k = static_cast<uint32_t>(opt.alignment_k);
    const double width = run_width(dataset, inputs);
    opts.store_kernels = listed(opt.kernels_at, width);
    opts.full_kernels = opt.kernels == "full";
    opts.temperatures = opt.temperatures;
    if (xi_of != dataset) {
      xi = am::attention::PathInputs();
      xi_of = nullptr;
      AM_SDK_TRY(am::attention::load_path_inputs(host.ctx(), dataset, &xi));
      xi_of = dataset;
    }
    const am_status st = am::attention::estimate(host.ctx(), dataset, inputs, xi, opts, run);
    if ((st != AM_OK && st != AM_ERR_NOT_CONVERGED) || !listed(opt.prune_at, width) ||
        !am::theory_prune::has_network(dataset))
      return st;
    const std::vector<double> scores = am::sdk::get_vector(run, "head_scores");
    am_rng parent = host.rng(), r;
    am_rng_split(&parent, 19, &r);
    const am_status pst =
        am::theory_prune::prune(host.ctx(), dataset, scores, static_cast<size_t>(opt.random_orders), r, run);
    return pst != AM_OK ? pst : st;
  }

  static am_status describe(const am_record *results, am_record *report) {
    const am_status st = am::theory_plugin::describe(nullptr, results, report);
    return st != AM_OK ? st : theory_describe_scan(nullptr, results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Theory, kParams>(
    "theory", "0.2.0",
    "Attention-path theory: Newton solve of the order parameters U (temperature scan, validation selection), "
    "predictor mean/variance, GP baseline and GP of path subsets, kernel alignment, head scores, pruning",
    AM_DATA_ATTENTION);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
