// attnmech — task plugin "potts": its parameter table bound to am::potts::TaskOptions (the options of the shared
// sequence generator, plugins/common/potts/potts_data.h, which does the work) and the few checks across
// parameters that a table cannot say.
#include <attnmech/plugin.hpp>

#include "potts_data.h"

namespace am::potts_plugin {
am_status describe(const am_record *results, am_record *report);
}  // namespace am::potts_plugin

namespace {

using Opt = am::potts::TaskOptions;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::L>("L", "20", "number of sites (sequence length)", 2, 10000),
    param<&Opt::C>("C", "20", "number of colours (states); FASTA output needs C <= 20", 2, 1000),
    param<&Opt::beta>("beta", "2", "inverse temperature beta", 0, 1e6),
    param<&Opt::M>("M", "3000", "training sequences", 1, 1e9),
    param<&Opt::M_test>("M_test", "10000", "test sequences (independent chains)", 0, 1e9),
    param<&Opt::couplings>("couplings", "sinkhorn",
                           "site couplings J: sinkhorn = spec recipe (symmetric, unit row sums); kregular = random "
                           "k-regular graph / k; file = J_file",
                           0, -1, "sinkhorn|kregular|file"),
    param<&Opt::k>("k", "4", "degree of the k-regular graph (couplings=kregular)", 1, 10000),
    param<&Opt::sinkhorn_scale>("sinkhorn_scale", "1.5", "K_ij = exp(scale (r_ij + r_ji)) before Sinkhorn", 0, 100),
    param<&Opt::J_file>("J_file", "", "user-given J (.npy, L x L; symmetrised, diagonal zeroed); implies couplings=file",
                        0, -1),
    param<&Opt::U_file>("U_file", "", "user-given colour matrix U (.npy, C x C); default U = (G + G^T)/sqrt(2)", 0, -1),
    param<&Opt::burnin>("burnin", "300", "heat-bath sweeps before a sample is kept (B of the equilibration test)", 1,
                        1e7),
    param<&Opt::thin>("thin", "0", "0 = one independent chain per sequence; n > 0 = one chain, keep every n-th sweep",
                      0, 1e7),
    param<&Opt::draw>("draw", "0", "which draw of (J, U) for this seed", 0, 1e9),
    param<&Opt::redraw>("redraw", "0", "if a draw fails the equilibration test, move on to the next draw", 0, 1),
    param<&Opt::max_redraws>("max_redraws", "10", "draws tried after the first when redraw=1", 0, 1000),
    param<&Opt::equilibration_test>(
        "equilibration_test", "1",
        "run the equilibration test (conditional entropy after B and 2B sweeps, autocorrelation time of H)", 0, 1),
    param<&Opt::equil_chains>("equil_chains", "4000", "independent chains of the equilibration test", 2, 1e8),
    param<&Opt::entropy_tol>("entropy_tol", "0.005",
                             "equilibrated if the conditional entropies after B and 2B sweeps agree within this (nats "
                             "per site)",
                             0, 10),
    param<&Opt::max_freq_limit>("max_freq_limit", "0.3",
                                "equilibrated only if the top single-site colour frequency is below this", 0, 1),
    param<&Opt::out_sequences>("out_sequences", "",
                               "path prefix: write PREFIX_train.npy / PREFIX_test.npy (int32 [M, L]) and, when C <= "
                               "20, .fasta",
                               0, -1),
};

// The parsed table plus what it cannot check: J_file implies couplings=file; a k-regular graph must exist.
Opt checked(Opt o) {
  if (o.couplings.empty()) o.couplings = "sinkhorn";
  if (!o.J_file.empty()) o.couplings = "file";
  if (o.couplings == "file" && o.J_file.empty())
    throw am::sdk::Error(AM_ERR_USAGE, "potts: couplings=file needs J_file=PATH.npy");
  if (o.couplings == "kregular" && (o.k >= o.L || ((size_t)o.L * o.k) % 2))
    throw am::sdk::Error(AM_ERR_USAGE, "potts: k-regular graph needs k < L and L·k even (L=" + std::to_string(o.L) +
                                           ", k=" + std::to_string(o.k) + ")");
  return o;
}

struct Potts {
  am::sdk::Host host;
  Opt opt;
  Potts(const am::sdk::Host &h, const Opt &o) : host(h), opt(checked(o)) { opt.parallel = am::potts::host_parallel_for(h); }

  am_status make_dataset(am_record *dataset, am_record *extras) {
    return am::potts::make_dataset(host.ctx(), opt, host.rng(), dataset, extras);
  }
  static am_status describe(const am_record *results, am_record *report) {
    return am::potts_plugin::describe(results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::task<Potts, kParams>(
    "potts", "1.0.0",
    "generalized Potts sequences (J sites x U colours) by heat-bath Gibbs sampling, with an equilibration test",
    AM_DATA_SEQUENCE, "pseudolikelihood");

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
