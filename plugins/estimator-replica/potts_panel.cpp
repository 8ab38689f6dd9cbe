// The discrete "right panel" of the replica estimator: test loss of factored attention fitted by
// pseudo-likelihood (the shared Potts library plugins/common/potts, potts_core) on generalized Potts
// data at α = M/L, so the interpolation peak of the Gaussian theory can be compared with the discrete model.
// One draw of (J, U) and one set of sequences serve every α (the training sets are nested prefixes).
#include <algorithm>
#include <cmath>
#include <vector>

#include "potts_estimators.h"
#include "potts_data.h"
#include "replica.h"

namespace replica {

am_status fill_potts_panel(const am::sdk::Host &host, const am_rng &rng, int L, double l2, size_t M_test,
                           const std::vector<double> &alphas, am_record *pp) {
  am_context *ctx = host.ctx();
  std::vector<double> Ms(alphas.size());
  for (size_t k = 0; k < Ms.size(); ++k) Ms[k] = std::max(1.0, std::round(alphas[k] * L));
  potts::TaskOptions to;
  to.L = L;
  to.C = L;
  to.M = (size_t)*std::max_element(Ms.begin(), Ms.end());
  to.M_test = M_test;
  to.redraw = true;        // an ordered (non-equilibrating) draw of J, U is replaced by the next one
  to.equil_chains = 1000;  // the check averages over 100 sweeps; 1000 chains keep its error ≈ 0.002
  to.parallel = potts::host_parallel_for(host);
  const am::sdk::Record ds = am::sdk::make_record(), ex = am::sdk::make_record();
  am_rng task_rng;
  am_rng_split(&rng, 1001, &task_rng);
  am_status st = potts::make_dataset(ctx, to, task_rng, ds.get(), ex.get());
  if (st) return st;
  std::vector<double> loss(Ms.size()), eps(Ms.size());
  for (size_t k = 0; k < Ms.size(); ++k) {
    potts::SeqData d;
    if ((st = potts::read_sequence_dataset(ctx, ds.get(), (size_t)Ms[k], &d))) return st;
    potts::PLOptions po;
    po.l2 = l2;
    po.M_use = (size_t)Ms[k];
    po.curve_every = 1 << 30;  // no training curves
    po.parallel = to.parallel;  // the loss on the host's threads (fixed blocks: same bits on every thread count)
    const am::sdk::Record run = am::sdk::make_record();
    am_rng est_rng;
    am_rng_split(&rng, 2000 + k, &est_rng);
    st = potts::run_pseudolikelihood(ctx, po, d, est_rng, run.get());
    double tl = NAN, es = NAN;
    am_record_get_number(run.get(), "test_loss", &tl);
    am_record_get_number(run.get(), "epsilon_star", &es);
    if (st < 0) return st;
    loss[k] = tl;
    eps[k] = es;
    if (am_context_progress(ctx, (double)(k + 1), (double)Ms.size(), "replica: potts panel")) return AM_CANCELLED;
  }
  am_record_set_string(pp, "status", "done");
  am_record_remove(pp, "fill_from");
  am_record_set_number(pp, "l2", l2);
  am_record_set_number(pp, "M_test", (double)M_test);
  am_record_set_vector(pp, "M", Ms.data(), Ms.size());
  am_record_set_vector(pp, "test_loss", loss.data(), loss.size());
  am_record_set_vector(pp, "epsilon_star", eps.data(), eps.size());
  std::vector<double> ex_loss(Ms.size());
  for (size_t k = 0; k < Ms.size(); ++k) ex_loss[k] = loss[k] - eps[k];
  am_record_set_vector(pp, "excess", ex_loss.data(), ex_loss.size());
  return AM_OK;
}

}  // namespace replica
