// attnmech — estimator plugin "vanilla" (standard transformer, MLM with Adam); logic in potts_core.
#include <new>

#include <attnmech/plugin.h>

#include "potts_estimators.h"

namespace {

struct Instance {
  const am_host *host;
  potts::VanillaOptions opt;
};

const am_param_def kParams[] = {
    {"layers", AM_PARAM_INT, "1", "transformer blocks", 1, 64, nullptr},
    {"d", AM_PARAM_INT, "20", "embedding dimension", 1, 4096, nullptr},
    {"hidden", AM_PARAM_INT, "0", "MLP hidden width (0 = 4d)", 0, 1e6, nullptr},
    {"lr", AM_PARAM_REAL, "1e-3", "Adam learning rate", 0, 10, nullptr},
    {"l2", AM_PARAM_REAL, "0", "l2 penalty on all parameters", 0, 1e6, nullptr},
    {"batch", AM_PARAM_INT, "256", "mini-batch size (one random masked site per sequence)", 1, 1e9, nullptr},
    {"epochs", AM_PARAM_INT, "200", "epochs over the training set", 1, 1e9, nullptr},
    {"cosine", AM_PARAM_BOOL, "1", "cosine decay of the learning rate", 0, 1, nullptr},
    {"eval_every", AM_PARAM_INT, "10", "epochs between points of the training curves", 1, 1e9, nullptr},
    {"eval_sequences", AM_PARAM_INT, "1000", "sequences (train and test) scored for the curves (0 = all)", 0, 1e9,
     nullptr},
    {"final_test_sequences", AM_PARAM_INT, "0", "test sequences for the final test loss (0 = all)", 0, 1e9, nullptr},
    {"M_train", AM_PARAM_INT, "0", "use only the first M_train training sequences (0 = all)", 0, 1e9, nullptr},
};

am_status create(const am_host *host, void **instance) {
  if (!host || !instance) return AM_ERR_INVALID_ARGUMENT;
  *instance = nullptr;
  Instance *in = new (std::nothrow) Instance();
  if (!in) return am_context_fail(host->ctx, AM_ERR_NO_MEMORY, "vanilla: out of memory");
  in->host = host;
  am_status st;
  try {
    st = potts::vanilla_options_from_params(host->ctx, host->params, &in->opt);
  } catch (...) {
    st = am_context_fail(host->ctx, AM_ERR_NO_MEMORY, "vanilla: out of memory reading parameters");
  }
  if (st != AM_OK) {
    delete in;
    return st;
  }
  *instance = in;
  return AM_OK;
}

void destroy(void *instance) { delete static_cast<Instance *>(instance); }

am_status estimate(void *instance, const am_record *dataset, am_record *run) {
  if (!instance || !run) return AM_ERR_INVALID_ARGUMENT;
  const Instance *in = static_cast<const Instance *>(instance);
  try {
    potts::SeqData d;
    am_status st = potts::read_sequence_dataset(in->host->ctx, dataset, in->opt.M_use, &d);
    if (st != AM_OK) return st;
    return potts::run_vanilla(in->host->ctx, in->opt, d, in->host->rng, run);
  } catch (const std::bad_alloc &) {
    return am_context_fail(in->host->ctx, AM_ERR_NO_MEMORY, "vanilla: out of memory");
  } catch (...) {
    return am_context_fail(in->host->ctx, AM_ERR_INTERNAL, "vanilla: unexpected exception");
  }
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
    create,
    destroy,
    nullptr,
    estimate,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
