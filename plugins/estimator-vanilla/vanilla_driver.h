// estimator "vanilla" — the driver that trains the standard transformer (vanilla.h) by masked-token prediction on a
// "sequence" dataset and fills the run record (docs/potts.md). With the model it is the static library vanilla_core,
// so the tests (tests/plugins/estimator-vanilla) call run_vanilla directly; plugin.cpp is the parameter table.
#ifndef ATTNMECH_VANILLA_DRIVER_H
#define ATTNMECH_VANILLA_DRIVER_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include <string>

#include "fit_memory.h"
#include "potts_estimators.h"
#include "vanilla.h"

namespace am::vanilla {

struct VanillaOptions {
  int layers = 1, d = 20, hidden = 0;
  std::string norm = "post";  // post | pre (pre-LN blocks + a final LayerNorm)
  std::string optimizer = "adam";  // adam | sgd (plain mini-batch gradient descent, optional heavy-ball momentum)
  double lr = 1e-3, l2 = 0.0, momentum = 0.0, dropout = 0.0;
  double warmup = 0.0;        // epochs of linear learning-rate warm-up (then the cosine decay)
  int train_seed = 0;         // 0: the estimator's stream of the run seed; k > 0: its k-th independent child
                              // (same data, another initialisation and batch order)
  int batch = 256, epochs = 200;
  bool cosine = true;
  int eval_every = 10;
  size_t eval_test_max = 1000;  // test sequences used for the curve
  size_t final_test_max = 0;    // test sequences for the final test loss (0 = all)
  size_t M_use = 0;
};

am_status run_vanilla(am_context *ctx, const VanillaOptions &o, const potts::SeqData &data, const am_rng &rng,
                      am_record *run);

// The training's memory (Adam, or SGD with momentum > 0 when `velocity`; batches of `batch`), checked by run_vanilla
// before the model exists (fit_memory.h: the estimates of the other sequence fits).
double vanilla_fit_bytes(const potts::FitShape &s, const VanillaConfig &cfg, size_t batch, bool adam, bool velocity);

}  // namespace am::vanilla
#endif
