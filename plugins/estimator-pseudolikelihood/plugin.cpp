// attnmech — estimator plugin "pseudolikelihood" (factored attention = asymmetric PLM): its parameter table bound to
// am::pseudolikelihood::Options (the factored-attention fit's options and the alignment fit's); the choice of engine
// and of the report is in estimate.cpp.
#include <attnmech/plugin.hpp>

#include <string>

#include "estimate.h"

namespace {

using Opt = am::pseudolikelihood::Options;
using PL = am::potts::PLOptions;
using Msa = am::msa::FitOptions;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::pl, &PL::optimizer>(
        "optimizer", "lbfgs",
        "lbfgs = full batch, deterministic; sgd = mini-batch SGD (lr, batch, epochs); adam = mini-batch Adam", 0, -1,
        "lbfgs|sgd|adam"),
    param<&Opt::pl, &PL::max_iter>("max_iter", "5000", "L-BFGS iteration limit", 1, 1e8),
    param<&Opt::pl, &PL::gtol>("gtol", "1e-9", "L-BFGS stops when the gradient norm is below this", 0, 1),
    param<&Opt::pl, &PL::ftol>("ftol", "1e-10",
                      "L-BFGS also stops when the loss decreases by less than ftol*max(1,|loss|) in 10 successive "
                      "iterations (0 = off)",
                      0, 1),
    param<&Opt::pl, &PL::stop_tol>("stop_tol", "1",
                          "L-BFGS stops when the fit stops improving: the loss decreased by at most "
                          "stop_tol*n_params/(2*M*L) (that multiple of the excess loss expected from the finite "
                          "sample) over the last stop_window iterations (0 = off: run to gtol/ftol/max_iter; 0.1 "
                          "before 3.8)",
                          0, 1e6),
    param<&Opt::pl, &PL::stop_window>("stop_window", "10", "iterations of the stop_tol (and rtol) window", 1, 1e6),
    param<&Opt::pl, &PL::stop_progress>("stop_progress", "0.01",
                               "guard of the window rules: they fire only once the window's decrease is also at most "
                               "this fraction of the decrease since the start (0 = no guard)",
                               0, 1),
    param<&Opt::msa, &Msa::fields>("fields", "auto",
                        "single-site fields: auto = on for an alignment dataset (task msa), off otherwise; 1 on any "
                        "sequence dataset runs the alignment fit (weights 1 without them)",
                        0, -1, "auto|0|1"),
    param<&Opt::msa, &Msa::gaps>("gaps", "auto",
                      "alignment fit: missing = gap tokens are neither scored nor context and the gap colour is "
                      "dropped (plmc -g); state = the gap is an ordinary colour; auto = missing when the alphabet has "
                      "a gap",
                      0, -1, "auto|state|missing"),
    param<&Opt::msa, &Msa::model>("model", "auto",
                       "alignment fit: potts = plmc's symmetric Potts model (all C^2 couplings of each pair); "
                       "factored = factored attention (heads, its memory grows slower with L); auto = potts on an "
                       "alignment whenever its fit fits the memory budget, else factored (docs/msa.md, the defaults "
                       "study)",
                       0, -1, "auto|factored|potts"),
    param<&Opt::msa, &Msa::score_gap>("score_gap", "include",
                       "alignment fit with gaps=state: include = the gap colour counts in the pair scores' Frobenius "
                       "norms (plmc's couplings file); exclude = left out (EVcouplings' scores)",
                       0, -1, "include|exclude"),
    param<&Opt::msa, &Msa::couplings>("couplings", "auto",
                       "alignment fit: 1 = write params.J [L, L, C, C]; 0 = leave it out (the factored model's A and V "
                       "give it, J_ij(a,b) = sum_h A^h_ij V^h_ab); auto = always for potts, for factored while "
                       "L*L*C*C <= 2^25 (268 MB: L <= 289 at C = 20; docs/msa.md, Memory)",
                       0, -1, "auto|1|0"),
    param<&Opt::msa, &Msa::lambda_h>("lambda_h", "0.01",
                                     "alignment fit: l2 on the fields, lambda_h*sum h^2 (plmc's -lh)", 0, 1e9),
    param<&Opt::msa, &Msa::lambda_e>("lambda_e", "16",
                          "alignment fit: l2 on the couplings, (lambda_e/2)*sum_{i!=j} |J_ij|^2 (plmc's -le)", 0, 1e9),
    param<&Opt::msa, &Msa::logit_scale>("logit_scale", "0",
                             "alignment fit, factored: attention softmax(s*W) with s = logit_scale, a preconditioner "
                             "for L-BFGS from W = 0 (0 = auto: L/8)",
                             0, 1e6),
    param<&Opt::msa, &Msa::symmetric>("symmetric", "0",
                           "alignment fit, factored: the conditionals use the symmetric couplings "
                           "(J_ij(a,b) + J_ji(b,a))/2 (a Potts model made of heads)",
                           0, 1),
    param<&Opt::msa, &Msa::rtol>("rtol", "2e-3",
                      "alignment fit: L-BFGS stops when the objective decreased by at most rtol*|objective| over the "
                      "last stop_window iterations (0 = off; 2e-3 by the defaults study in docs/msa.md)",
                      0, 1),
    param<&Opt::pl, &PL::l2>("l2", "0", "l2 penalty (l2/2)(|W|^2 + |V|^2)", 0, 1e6),
    param<&Opt::pl, &PL::lr>("lr", "0",
                    "learning rate (sgd/adam); 0 = auto: sgd 20, adam 0.02 (the loss is a mean per scored token, so SGD "
                    "needs a large rate; both reach the L-BFGS optimum in ~300 epochs at L = C = 20, M = 3000 with "
                    "cosine=1)",
                    0, 1e6),
    param<&Opt::pl, &PL::batch>("batch", "256", "mini-batch size (sgd/adam)", 1, 1e9),
    param<&Opt::pl, &PL::epochs>("epochs", "200", "epochs (sgd/adam)", 1, 1e9),
    param<&Opt::pl, &PL::cosine>("cosine", "0", "cosine decay of the learning rate (sgd/adam)", 0, 1),
    param<&Opt::pl, &PL::heads>("heads", "0",
                       "attention heads (a = 0); 0 = auto: 1 on the potts task's sequences, 64 on an alignment", 0,
                       1024),
    param<&Opt::pl, &PL::a>("a", "0",
                   "perturbation of spec 2.5: 0 = collapsed factored model; > 0 = uncollapsed model mixing positions "
                   "and colours",
                   0, 100),
    param<&Opt::pl, &PL::d>("d", "0", "embedding dimension of the uncollapsed model (0 = max(L, C))", 0, 10000),
    param<&Opt::pl, &PL::a_scan>("a_scan", "", "also fit the uncollapsed model at these a (test loss vs a)", 0, 100),
    param<&Opt::pl, &PL::a_scan_iter>("a_scan_iter", "500", "L-BFGS iterations per a of a_scan", 1, 1e8),
    param<&Opt::pl, &PL::init_scale>("init_scale", "0",
                            "initial V ~ N(0, init_scale^2), W = 0; 0 = auto: 0.01 on the potts task's sequences, 0.1 "
                            "on an alignment (0.01 leaves a 256-head alignment fit at its starting saddle)",
                            0, 100),
    param<&Opt::pl, &PL::M_use>("M_train", "0", "use only the first M_train training sequences (0 = all)", 0, 1e9),
    param<&Opt::pl, &PL::curve_every>("curve_every", "10", "record the training curves every n iterations/epochs", 1,
                                      1e9),
};

// The instance: the host and the options; the host's loop runs the fits' losses.
struct Estimator {
  am::sdk::Host host;
  Opt opt;
  Estimator(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {
    opt.pl.parallel = am::potts::host_parallel_for(h);
  }

  am_status estimate(const am_record *dataset, am_record *run) {
    return am::pseudolikelihood::estimate(host.ctx(), opt, dataset, host.rng(), run);
  }

  static am_status describe(const am_record *results, am_record *report) {
    try {
      return am::pseudolikelihood::describe(results, report);
    } catch (...) {
      throw am::sdk::Error(AM_ERR_NO_MEMORY, "pseudolikelihood: cannot describe the results");
    }
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Estimator, kParams>(
    "pseudolikelihood", "1.0.0",
    "factored self-attention fitted by pseudo-likelihood (the inverse Potts problem), collapsed or uncollapsed "
    "(perturbation a)",
    AM_DATA_SEQUENCE);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
