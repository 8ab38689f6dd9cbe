// The discrete "right panel" of the replica estimator: test loss of factored attention fitted by
// pseudo-likelihood (the shared Potts library plugins/common/potts, potts_core) on generalized Potts
// data at α = M/L, so the interpolation peak of the Gaussian theory can be compared with the discrete model.
// One realisation = one draw of (J, U) and one set of sequences serving every α (the training sets are nested
// prefixes); several realisations are averaged per α with the standard error of the mean.
#include <algorithm>
#include <cmath>
#include <vector>

#include "potts_estimators.h"
#include "potts_data.h"
#include "replica.h"

namespace am::replica {

namespace {

// One realisation: test loss and ε* at every M. Realisation 0 uses the streams of the single-realisation panel.
am_status realisation(const am::sdk::Host &host, const am_rng &rng, const PottsPanel &o, const std::vector<double> &Ms,
                      size_t r, double *loss, double *eps) {
  am_context *ctx = host.ctx();
  am::potts::TaskOptions to;
  to.L = o.L;
  to.C = o.L;
  to.M = (size_t)*std::max_element(Ms.begin(), Ms.end());
  to.M_test = o.M_test;
  to.redraw = true;        // an ordered (non-equilibrating) draw of J, U is replaced by the next one
  to.equil_chains = 1000;  // the check averages over 100 sweeps; 1000 chains keep its error ≈ 0.002
  to.parallel = am::potts::host_parallel_for(host);
  const am::sdk::Record ds = am::sdk::make_record(), ex = am::sdk::make_record();
  am_rng task_rng;
  am_rng_split(&rng, r == 0 ? 1001 : 100000 + r, &task_rng);
  am_status st = am::potts::make_dataset(ctx, to, task_rng, ds.get(), ex.get());
  if (st) return st;
  for (size_t k = 0; k < Ms.size(); ++k) {
    am::potts::SeqData d;
    if ((st = am::potts::read_sequence_dataset(ctx, ds.get(), (size_t)Ms[k], &d))) return st;
    am::potts::PLOptions po;
    po.l2 = o.l2;
    po.stop_tol = o.stop_tol;
    po.M_use = (size_t)Ms[k];
    po.curve_every = 1 << 30;  // no training curves
    po.parallel = to.parallel;  // the loss on the host's threads (fixed blocks: same bits on every thread count)
    const am::sdk::Record run = am::sdk::make_record();
    am_rng est_rng;
    am_rng_split(&rng, r == 0 ? 2000 + k : 1000000 + 1000 * r + k, &est_rng);
    st = am::potts::run_pseudolikelihood(ctx, po, d, est_rng, run.get());
    double tl = NAN, es = NAN;
    am_record_get_number(run.get(), "test_loss", &tl);
    am_record_get_number(run.get(), "epsilon_star", &es);
    if (st < 0) return st;
    loss[k] = tl;
    eps[k] = es;
    const double done = (double)(r * Ms.size() + k + 1), all = (double)(o.realisations * Ms.size());
    if (am_context_progress(ctx, done, all, "replica: potts panel")) return AM_CANCELLED;
  }
  return AM_OK;
}

// Mean and standard error of the mean over the rows of x (R rows of n values, row-major).
void mean_se(const std::vector<double> &x, size_t R, size_t n, std::vector<double> *mean, std::vector<double> *se) {
  mean->assign(n, 0.0);
  se->assign(n, 0.0);
  for (size_t k = 0; k < n; ++k) {
    double m = 0.0;
    for (size_t r = 0; r < R; ++r) m += x[r * n + k];
    m /= (double)R;
    double v = 0.0;
    for (size_t r = 0; r < R; ++r) v += (x[r * n + k] - m) * (x[r * n + k] - m);
    (*mean)[k] = m;
    (*se)[k] = R > 1 ? std::sqrt(v / ((double)R - 1.0) / (double)R) : 0.0;
  }
}

}  // namespace

am_status fill_potts_panel(const am::sdk::Host &host, const am_rng &rng, const PottsPanel &o, am_record *pp) {
  const size_t n = o.alpha.size(), R = std::max<size_t>(1, o.realisations);
  std::vector<double> Ms(n);
  for (size_t k = 0; k < n; ++k) Ms[k] = std::max(1.0, std::round(o.alpha[k] * o.L));
  std::vector<double> loss(R * n), eps(R * n), excess(R * n);
  for (size_t r = 0; r < R; ++r) {
    const am_status st = realisation(host, rng, o, Ms, r, loss.data() + r * n, eps.data() + r * n);
    if (st) return st;
  }
  for (size_t t = 0; t < R * n; ++t) excess[t] = loss[t] - eps[t];
  std::vector<double> ml, sl, me, se, mx, sx;
  mean_se(loss, R, n, &ml, &sl);
  mean_se(eps, R, n, &me, &se);
  mean_se(excess, R, n, &mx, &sx);
  am_record_set_string(pp, "status", "done");
  am_record_remove(pp, "fill_from");
  am_record_set_number(pp, "l2", o.l2);
  am_record_set_number(pp, "stop_tol", o.stop_tol);
  am_record_set_number(pp, "M_test", (double)o.M_test);
  am_record_set_number(pp, "realisations", (double)R);
  am_record_set_vector(pp, "M", Ms.data(), n);
  // With one realisation these are its values (and the standard errors are absent).
  am_record_set_vector(pp, "test_loss", ml.data(), n);
  am_record_set_vector(pp, "epsilon_star", me.data(), n);
  am_record_set_vector(pp, "excess", mx.data(), n);
  // The peak: the largest mean test loss on the alpha grid (interior = not at either end of the grid).
  size_t kmax = 0;
  for (size_t k = 1; k < n; ++k)
    if (ml[k] > ml[kmax]) kmax = k;
  if (n > 0) {
    am_record *pk = am_record_object(pp, "peak");
    if (!pk) return AM_ERR_NO_MEMORY;
    am_record_set_number(pk, "alpha", o.alpha[kmax]);
    am_record_set_number(pk, "height", ml[kmax]);
    if (R > 1) am_record_set_number(pk, "height_stderr", sl[kmax]);
    am_record_set_bool(pk, "interior", kmax > 0 && kmax + 1 < n);
  }
  if (R > 1) {
    am_record_set_vector(pp, "test_loss_stderr", sl.data(), n);
    am_record_set_vector(pp, "epsilon_star_stderr", se.data(), n);
    am_record_set_vector(pp, "excess_stderr", sx.data(), n);
    // realisations × alpha (row r = realisation r), for other statistics than the mean
    std::vector<double> cm(R * n);
    for (size_t r = 0; r < R; ++r)
      for (size_t k = 0; k < n; ++k) cm[r + R * k] = loss[r * n + k];
    am_record_set_matrix(pp, "test_loss_realisations", cm.data(), R, n, R);
  }
  return AM_OK;
}

}  // namespace am::replica
