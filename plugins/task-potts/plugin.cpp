// attnmech — task plugin "potts": descriptor and C callbacks only; the logic is in potts_core.
#include <new>

#include <attnmech/plugin.h>

#include "../common/plugin_glue.hpp"

#include "potts_task.h"

namespace am_potts_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_potts_plugin

namespace {

constexpr char kName[] = "potts";
using Opt = potts::TaskOptions;

const am_param_def kParams[] = {
    AM_PARAM("L", AM_PARAM_INT, "20", "number of sites (sequence length)", 2, 10000, nullptr),
    AM_PARAM("C", AM_PARAM_INT, "20", "number of colours (states); FASTA output needs C <= 20", 2, 1000, nullptr),
    AM_PARAM("beta", AM_PARAM_REAL, "2", "inverse temperature beta", 0, 1e6, nullptr),
    AM_PARAM("M", AM_PARAM_INT, "3000", "training sequences", 1, 1e9, nullptr),
    AM_PARAM("M_test", AM_PARAM_INT, "10000", "test sequences (independent chains)", 0, 1e9, nullptr),
    AM_PARAM("couplings", AM_PARAM_CHOICE, "sinkhorn",
     "site couplings J: sinkhorn = spec recipe (symmetric, unit row sums); kregular = random k-regular graph / k; "
     "file = J_file",
     0, -1, "sinkhorn|kregular|file"),
    AM_PARAM("k", AM_PARAM_INT, "4", "degree of the k-regular graph (couplings=kregular)", 1, 10000, nullptr),
    AM_PARAM("sinkhorn_scale", AM_PARAM_REAL, "1.5", "K_ij = exp(scale (r_ij + r_ji)) before Sinkhorn", 0, 100, nullptr),
    AM_PARAM("J_file", AM_PARAM_STRING, "", "user-given J (.npy, L x L; symmetrised, diagonal zeroed); implies couplings=file",
     0, -1, nullptr),
    AM_PARAM("U_file", AM_PARAM_STRING, "", "user-given colour matrix U (.npy, C x C); default U = (G + G^T)/sqrt(2)", 0, -1,
     nullptr),
    AM_PARAM("burnin", AM_PARAM_INT, "300", "heat-bath sweeps before a sample is kept (B of the equilibration test)", 1, 1e7,
     nullptr),
    AM_PARAM("thin", AM_PARAM_INT, "0", "0 = one independent chain per sequence; n > 0 = one chain, keep every n-th sweep",
     0, 1e7, nullptr),
    AM_PARAM("draw", AM_PARAM_INT, "0", "which draw of (J, U) for this seed", 0, 1e9, nullptr),
    AM_PARAM("redraw", AM_PARAM_BOOL, "0", "if a draw fails the equilibration test, move on to the next draw", 0, 1, nullptr),
    AM_PARAM("max_redraws", AM_PARAM_INT, "10", "draws tried after the first when redraw=1", 0, 1000, nullptr),
    AM_PARAM("equilibration_test", AM_PARAM_BOOL, "1",
     "run the equilibration test (conditional entropy after B and 2B sweeps, autocorrelation time of H)", 0, 1,
     nullptr),
    AM_PARAM("equil_chains", AM_PARAM_INT, "4000", "independent chains of the equilibration test", 2, 1e8, nullptr),
    AM_PARAM("entropy_tol", AM_PARAM_REAL, "0.005", "equilibrated if the conditional entropies after B and 2B sweeps agree "
     "within this (nats per site)", 0, 10, nullptr),
    AM_PARAM("max_freq_limit", AM_PARAM_REAL, "0.3", "equilibrated only if the top single-site colour frequency is below this",
     0, 1, nullptr),
    AM_PARAM("out_sequences", AM_PARAM_STRING, "",
     "path prefix: write PREFIX_train.npy / PREFIX_test.npy (int32 [M, L]) and, when C <= 20, .fasta", 0, -1,
     nullptr),
};

am_status parse(const am_host *h, Opt *o) { return potts::task_options_from_params(h->ctx, h->params, h->threads, o); }

am_status make_dataset(void *instance, am_record *dataset, am_record *extras) {
  if (!instance || !dataset || !extras) return AM_ERR_INVALID_ARGUMENT;
  const auto *in = am_glue::get<Opt>(instance);
  return am_glue::guarded<kName>(in->host->ctx, [&] {
    am_rng rng;
    am_host_rng(in->host, &rng);
    return potts::make_dataset(in->host->ctx, in->opt, rng, dataset, extras);
  });
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_TASK,
    "potts",
    "1.0.0",
    "generalized Potts sequences (J sites x U colours) by heat-bath Gibbs sampling, with an equilibration test",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_SEQUENCE,
    "pseudolikelihood",
    am_glue::create<Opt, parse, kName>,
    am_glue::destroy<Opt>,
    make_dataset,
    nullptr,
    am_potts_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
