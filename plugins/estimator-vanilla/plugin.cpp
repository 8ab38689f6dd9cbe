// attnmech — estimator plugin "vanilla" (standard transformer, MLM with Adam); logic in potts_core.
#include <new>

#include <attnmech/plugin.h>

#include "../common/plugin_glue.hpp"

#include "potts_estimators.h"

namespace am_vanilla_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_vanilla_plugin

namespace {

constexpr char kName[] = "vanilla";
using Opt = potts::VanillaOptions;

const am_param_def kParams[] = {
    AM_PARAM("layers", AM_PARAM_INT, "1", "transformer blocks", 1, 64, nullptr),
    AM_PARAM("d", AM_PARAM_INT, "20", "embedding dimension", 1, 4096, nullptr),
    AM_PARAM("hidden", AM_PARAM_INT, "0", "MLP hidden width (0 = 4d)", 0, 1e6, nullptr),
    AM_PARAM("lr", AM_PARAM_REAL, "1e-3", "Adam learning rate", 0, 10, nullptr),
    AM_PARAM("l2", AM_PARAM_REAL, "0", "l2 penalty on all parameters", 0, 1e6, nullptr),
    AM_PARAM("batch", AM_PARAM_INT, "256", "mini-batch size (one random masked site per sequence)", 1, 1e9, nullptr),
    AM_PARAM("epochs", AM_PARAM_INT, "200", "epochs over the training set", 1, 1e9, nullptr),
    AM_PARAM("cosine", AM_PARAM_BOOL, "1", "cosine decay of the learning rate", 0, 1, nullptr),
    AM_PARAM("eval_every", AM_PARAM_INT, "10", "epochs between points of the training curves", 1, 1e9, nullptr),
    AM_PARAM("eval_sequences", AM_PARAM_INT, "1000", "sequences (train and test) scored for the curves (0 = all)", 0, 1e9,
     nullptr),
    AM_PARAM("final_test_sequences", AM_PARAM_INT, "0", "test sequences for the final test loss (0 = all)", 0, 1e9, nullptr),
    AM_PARAM("M_train", AM_PARAM_INT, "0", "use only the first M_train training sequences (0 = all)", 0, 1e9, nullptr),
};

am_status parse(const am_host *h, Opt *o) { return potts::vanilla_options_from_params(h->ctx, h->params, o); }

am_status estimate(void *instance, const am_record *dataset, am_record *run) {
  if (!instance || !run) return AM_ERR_INVALID_ARGUMENT;
  const auto *in = am_glue::get<Opt>(instance);
  return am_glue::guarded<kName>(in->host->ctx, [&] {
    am_rng rng;
    am_host_rng(in->host, &rng);
    return potts::fit_dataset(in->host->ctx, in->opt, dataset, rng, run, &potts::run_vanilla);
  });
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_ESTIMATOR,
    "vanilla",
    "1.0.0",
    "standard transformer encoder (1..n layers, single head) trained by masked-token prediction with Adam",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_SEQUENCE,
    nullptr,
    am_glue::create<Opt, parse, kName>,
    am_glue::destroy<Opt>,
    nullptr,
    estimate,
    am_vanilla_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
