// bench/potts/stop_study — the trace the stopping rule of the factored fit was chosen and checked on (issue 41.5,
// docs/potts.md "Where the fit stops"): one dataset of the task's generator (seed, L, C, β, M; draws that do not
// equilibrate are skipped as with redraw=1), one long L-BFGS fit as the estimator starts it (W = 0, V ~ N(0, 1e-4),
// the rule off), and after every iteration: the loss, the gradient norm, the objective evaluations so far and the
// reconstruction against the truth (pair scores and all coupling entries, pair_scores.hpp) — which no rule sees.
// A rule's stop is found on the trace (L-BFGS is deterministic). Output: one TSV line per iteration on stdout.
// Usage: stop_study SEED L C BETA M [MAX_ITER [EQUIL]] (run with OPENBLAS_NUM_THREADS=1; EQUIL 0 skips the
// equilibration test and takes draw 0, for the smoke run); HEADS=h fits h heads,
// LBFGS_M=m keeps m correction pairs (the study's side questions).
#include <attnmech/record.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "pair_scores.hpp"
#include "potts_data.h"
#include "potts_estimators.h"

using namespace am::potts;
using namespace am::potts::bench;

int main(int argc, char **argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: stop_study SEED L C BETA M [MAX_ITER [EQUIL]]\n");
    return 2;
  }
  const unsigned seed = (unsigned)std::atoi(argv[1]);
  TaskOptions to;
  to.L = std::atoi(argv[2]);
  to.C = std::atoi(argv[3]);
  to.beta = std::atof(argv[4]);
  to.M = (size_t)std::atol(argv[5]);
  to.M_test = 100;  // the rule sees the training set only; the training set does not depend on M_test
  to.redraw = true;
  const int max_iter = argc > 6 ? std::atoi(argv[6]) : 400;
  to.equilibration_test = argc > 7 ? std::atoi(argv[7]) != 0 : true;  // 0: draw 0 untested (the smoke run)
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = 2;
  am_context *ctx = nullptr;
  am_context_create(&ctx, &cs);
  am_host host;
  am_host_init(&host, ctx, nullptr, seed, 1, 2);
  to.parallel = host_parallel_for(am::sdk::Host(&host));
  am_rng task_rng;
  am_rng_init(&task_rng, seed, 1);  // the CLI's task stream for this seed
  am_record *ds = nullptr, *extras = nullptr;
  am_record_create(&ds);
  am_record_create(&extras);
  SeqData d;
  if (make_dataset(ctx, to, task_rng, ds, extras) != AM_OK || read_sequence_dataset(ctx, ds, 0, &d) != AM_OK) {
    std::fprintf(stderr, "stop_study: %s\n", am_context_last_error(ctx));
    return 1;
  }
  double draw = -1;
  am_record_get_number(am_record_get(ds, "truth"), "draw", &draw);
  // HEADS=h: h heads started as the estimator starts them (V and, for h > 1, W ~ N(0, 1e-4))
  const int heads = std::getenv("HEADS") ? std::atoi(std::getenv("HEADS")) : 1;
  FactoredModel fm(d.L, d.C, heads);
  std::vector<double> th(fm.n_params(), 0.0);
  am_rng rng;
  am_rng_init(&rng, 0, 2);
  for (int h = 0; h < heads; ++h) {
    am_rng_fill_normal(&rng, fm.V(th.data(), h), (size_t)d.C * d.C);
    for (int k = 0; k < d.C * d.C; ++k) fm.V(th.data(), h)[k] *= 1e-2;
    if (heads == 1) continue;
    am_rng_fill_normal(&rng, fm.W(th.data(), h), (size_t)d.L * d.L);
    for (int k = 0; k < d.L * d.L; ++k) fm.W(th.data(), h)[k] *= 1e-2;
  }
  PLOptions po;
  po.parallel = to.parallel;
  po.stop_tol = 0.0;
  po.max_iter = max_iter;
  fm.set_parallel(po.parallel);
  const std::vector<double> t = truth_couplings(d.truth), tf = frobenius_scores(t, d.C);
  int evals = 0;
  const Objective f = [&](const double *x, double *g) {
    ++evals;
    return fm.loss(x, d.train.data(), d.M, g, po.l2);
  };
  const double scale = double(fm.n_params()) / (2.0 * double(d.M) * d.L);
  std::printf("# seed %u draw %g L %d C %d beta %g M %zu n_params %zu scale %.6g eps_train %.6f\n", seed, draw, d.L,
              d.C, d.truth.beta, d.M, fm.n_params(), scale, d.eps_star_train);
  std::vector<double> g(th.size());
  std::printf("it\tf\tgnorm\tevals\tpair\tcoup\n0\t%.12g\tnan\t0\t%.6f\t%.6f\n", f(th.data(), g.data()),
              pearson(frobenius_scores(factored_couplings(fm, th.data()), d.C), tf), NAN);
  evals = 0;
  LbfgsOptions lo = lbfgs_options(po, max_iter, th.size(), d.M, d.L);
  if (std::getenv("LBFGS_M")) lo.m = std::atoi(std::getenv("LBFGS_M"));  // study only: the correction pairs kept
  lbfgs_minimize(th.size(), th.data(), f, lo, [&](int it, double fx, double gn, const double *x, double) {
    const std::vector<double> e = factored_couplings(fm, x);
    std::printf("%d\t%.12g\t%.6g\t%d\t%.6f\t%.6f\n", it, fx, gn, evals,
                pearson(frobenius_scores(e, d.C), tf), pearson(e, t));
    return true;
  });
  am_record_destroy(&ds);
  am_record_destroy(&extras);
  am_context_destroy(&ctx);
  return 0;
}
