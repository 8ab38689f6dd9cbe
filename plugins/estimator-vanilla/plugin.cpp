// attnmech — estimator plugin "vanilla" (standard transformer, MLM with Adam): its parameter table bound to
// am::vanilla::VanillaOptions; the model (vanilla.cpp) and its training (vanilla_driver.cpp) are beside it.
#include <attnmech/plugin.hpp>

#include <string>

#include "../common/sequence_report.hpp"
#include "vanilla_driver.h"

namespace {

using Opt = am::vanilla::VanillaOptions;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::layers>("layers", "1", "transformer blocks", 1, 64),
    param<&Opt::d>("d", "20", "embedding dimension", 1, 4096),
    param<&Opt::hidden>("hidden", "0", "MLP hidden width (0 = 4d)", 0, 1e6),
    param<&Opt::norm>("norm", "post",
                      "LayerNorm placement: post = after each residual sum (BERT); pre = on the attention and MLP "
                      "branches, plus a final LayerNorm before the read-out",
                      0, -1, "post|pre"),
    param<&Opt::optimizer>("optimizer", "adam", "adam, or sgd: plain mini-batch gradient descent (with momentum)", 0,
                           -1, "adam|sgd"),
    param<&Opt::lr>("lr", "1e-3", "learning rate (peak, before the cosine decay)", 0, 10),
    param<&Opt::momentum>("momentum", "0", "heavy-ball momentum of optimizer=sgd (v <- momentum v + g)", 0, 0.999),
    param<&Opt::warmup>("warmup", "0", "epochs of linear learning-rate warm-up before the cosine decay", 0, 1e9),
    param<&Opt::dropout>("dropout", "0",
                         "dropout rate in training (attention weights, both branches, MLP hidden units)", 0, 0.9),
    param<&Opt::l2>("l2", "0", "l2 penalty on all parameters", 0, 1e6),
    param<&Opt::batch>("batch", "256", "mini-batch size (one random masked site per sequence)", 1, 1e9),
    param<&Opt::epochs>("epochs", "200", "epochs over the training set", 1, 1e9),
    param<&Opt::cosine>("cosine", "1", "cosine decay of the learning rate", 0, 1),
    param<&Opt::eval_every>("eval_every", "10", "epochs between points of the training curves", 1, 1e9),
    param<&Opt::eval_test_max>("eval_sequences", "1000", "sequences (train and test) scored for the curves (0 = all)",
                               0, 1e9),
    param<&Opt::final_test_max>("final_test_sequences", "0", "test sequences for the final test loss (0 = all)", 0,
                                1e9),
    param<&Opt::train_seed>("train_seed", "0",
                            "training stream: 0 = the run seed's; k > 0 = an independent one (same data, another "
                            "initialisation, batch order and masks)",
                            0, 1e9),
    param<&Opt::M_use>("M_train", "0", "use only the first M_train training sequences (0 = all)", 0, 1e9),
};

// The instance: the host and the options; estimate() reads the sequence dataset and trains on it.
struct Estimator {
  am::sdk::Host host;
  Opt opt;
  Estimator(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {}

  am_status estimate(const am_record *dataset, am_record *run) {
    return am::potts::fit_dataset(host.ctx(), opt, dataset, host.rng(), run, am::vanilla::run_vanilla);
  }

  static am_status describe(const am_record *results, am_record *report) {
    try {
      return am::sequence_report::describe(results, report);
    } catch (...) {
      throw am::sdk::Error(AM_ERR_NO_MEMORY, "vanilla: cannot describe the results");
    }
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Estimator, kParams>(
    "vanilla", "1.0.0",
    "standard transformer encoder (1..n layers, single head) trained by masked-token prediction (Adam or SGD)",
    AM_DATA_SEQUENCE);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
