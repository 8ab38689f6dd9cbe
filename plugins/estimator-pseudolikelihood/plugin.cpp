// attnmech — estimator plugin "pseudolikelihood" (factored attention = asymmetric PLM); logic in potts_core.
#include <new>

#include <attnmech/plugin.h>

#include "../common/plugin_glue.hpp"

#include "potts_estimators.h"

namespace am_pseudolikelihood_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_pseudolikelihood_plugin

namespace {

constexpr char kName[] = "pseudolikelihood";
using Opt = potts::PLOptions;

const am_param_def kParams[] = {
    AM_PARAM("optimizer", AM_PARAM_CHOICE, "lbfgs",
     "lbfgs = full batch, deterministic; sgd = mini-batch SGD (lr, batch, epochs); adam = mini-batch Adam", 0, -1,
     "lbfgs|sgd|adam"),
    AM_PARAM("max_iter", AM_PARAM_INT, "5000", "L-BFGS iteration limit", 1, 1e8, nullptr),
    AM_PARAM("gtol", AM_PARAM_REAL, "1e-9", "L-BFGS stops when the gradient norm is below this", 0, 1, nullptr),
    AM_PARAM("ftol", AM_PARAM_REAL, "1e-10",
     "L-BFGS also stops when the loss decreases by less than ftol*max(1,|loss|) in 10 successive iterations "
     "(0 = off)", 0, 1, nullptr),
    AM_PARAM("l2", AM_PARAM_REAL, "0", "l2 penalty (l2/2)(|W|^2 + |V|^2)", 0, 1e6, nullptr),
    AM_PARAM("lr", AM_PARAM_REAL, "0",
     "learning rate (sgd/adam); 0 = auto: sgd 20, adam 0.02 (the loss is a mean per scored token, so SGD needs a "
     "large rate; both reach the L-BFGS optimum in ~300 epochs at L = C = 20, M = 3000 with cosine=1)",
     0, 1e6, nullptr),
    AM_PARAM("batch", AM_PARAM_INT, "256", "mini-batch size (sgd/adam)", 1, 1e9, nullptr),
    AM_PARAM("epochs", AM_PARAM_INT, "200", "epochs (sgd/adam)", 1, 1e9, nullptr),
    AM_PARAM("cosine", AM_PARAM_BOOL, "0", "cosine decay of the learning rate (sgd/adam)", 0, 1, nullptr),
    AM_PARAM("heads", AM_PARAM_INT, "1", "attention heads (collapsed model, a = 0)", 1, 64, nullptr),
    AM_PARAM("a", AM_PARAM_REAL, "0",
     "perturbation of spec 2.5: 0 = collapsed factored model; > 0 = uncollapsed model mixing positions and colours",
     0, 100, nullptr),
    AM_PARAM("d", AM_PARAM_INT, "0", "embedding dimension of the uncollapsed model (0 = max(L, C))", 0, 10000, nullptr),
    AM_PARAM("a_scan", AM_PARAM_REAL_LIST, "", "also fit the uncollapsed model at these a (test loss vs a)", 0, 100, nullptr),
    AM_PARAM("a_scan_iter", AM_PARAM_INT, "500", "L-BFGS iterations per a of a_scan", 1, 1e8, nullptr),
    AM_PARAM("init_scale", AM_PARAM_REAL, "0.01", "initial V ~ N(0, init_scale^2), W = 0", 0, 100, nullptr),
    AM_PARAM("M_train", AM_PARAM_INT, "0", "use only the first M_train training sequences (0 = all)", 0, 1e9, nullptr),
    AM_PARAM("curve_every", AM_PARAM_INT, "10", "record the training curves every n iterations/epochs", 1, 1e9, nullptr),
};

am_status parse(const am_host *h, Opt *o) { return potts::pl_options_from_params(h->ctx, h->params, h->threads, o); }

am_status estimate(void *instance, const am_record *dataset, am_record *run) {
  if (!instance || !run) return AM_ERR_INVALID_ARGUMENT;
  const auto *in = am_glue::get<Opt>(instance);
  return am_glue::guarded<kName>(in->host->ctx, [&] {
    am_rng rng;
    am_host_rng(in->host, &rng);
    return potts::fit_dataset(in->host->ctx, in->opt, dataset, rng, run, &potts::run_pseudolikelihood);
  });
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_ESTIMATOR,
    "pseudolikelihood",
    "1.0.0",
    "factored self-attention fitted by pseudo-likelihood (inverse Potts problem); optional perturbation a",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_SEQUENCE,
    nullptr,
    am_glue::create<Opt, parse, kName>,
    am_glue::destroy<Opt>,
    nullptr,
    estimate,
    am_pseudolikelihood_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
