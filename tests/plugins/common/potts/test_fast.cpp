// The fast Potts paths: the incremental Gibbs chain against the from-scratch reference sweep, the factored loss on the
// host's loop (same bits for any thread count), and the stopping rule of the fit against the long fit.
// Cheap: about a second in a release build.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "potts_estimators.h"
#include "potts_model.h"
#include "test_host.hpp"

using namespace am::potts;

namespace {

// Runs the reference sweep and GibbsChain side by side from one state with copies of one stream; returns the
// number of sweeps after which the states differ (0 = never) and checks the kept fields against a recomputation.
int first_divergence(const Model &m, int sweeps, int refresh, double *max_field_err) {
  am_rng r1;
  am_rng_init(&r1, 21, 3);
  std::vector<int32_t> s(m.L);
  random_state(m, s.data(), &r1);
  am_rng r2 = r1;
  GibbsChain chain(m, refresh);
  chain.set_state(s.data());
  std::vector<int> perm(m.L);
  std::vector<double> work(m.L + m.C), h(m.C);
  *max_field_err = 0.0;
  for (int t = 1; t <= sweeps; ++t) {
    gibbs_sweep(m, s.data(), &r1, perm.data(), work.data());
    chain.sweep(&r2);
    for (int i = 0; i < m.L; ++i)
      if (s[i] != chain.state()[i]) return t;
    for (int i = 0; i < m.L; ++i) {
      local_field(m, s.data(), i, h.data());
      for (int a = 0; a < m.C; ++a)
        *max_field_err = std::max(*max_field_err, std::fabs(h[a] - chain.fields()[i * chain.stride() + a]));
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("incremental Gibbs chain: the same chain as the from-scratch reference sweep") {
  double err = 0.0;
  // dense Sinkhorn couplings, the task's default size; the fields refreshed every 100 sweeps (default) and every 3
  const Model m = potts_test::sinkhorn_model(20, 20, 2.0, 31);
  CHECK(first_divergence(m, 300, 100, &err) == 0);
  CHECK(err < 1e-12);
  CHECK(first_divergence(m, 100, 3, &err) == 0);
  CHECK(err < 1e-12);
  // sparse couplings (zero J_ij skipped) and C = 21 (rows padded to the vector width)
  Model k;
  k.L = 30;
  k.C = 21;
  k.beta = 1.5;
  am_rng rng;
  am_rng_init(&rng, 32, 0);
  REQUIRE(make_J_kregular(30, 4, &rng, k.J));
  make_U_gaussian(21, &rng, k.U);
  CHECK(first_divergence(k, 200, 100, &err) == 0);
  CHECK(err < 1e-12);
  // the Rao–Blackwellised entropy from the kept fields
  GibbsChain chain(m);
  am_rng r;
  am_rng_init(&r, 33, 0);
  chain.start(&r);
  for (int t = 0; t < 10; ++t) chain.sweep(&r);
  CHECK(chain.cond_entropy() == doctest::Approx(cond_entropy_rb(m, chain.state())).epsilon(1e-12));
}

TEST_CASE("factored loss on the host's loop: the same bits for every thread count") {
  const Model m = potts_test::sinkhorn_model(7, 5, 2.0, 34);
  am_rng rng;
  am_rng_init(&rng, 35, 0);
  const size_t M = 700;  // 3 reduction blocks, the last one partial
  std::vector<int32_t> tok(M * 7);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, 5);
  for (size_t chunk : {size_t(0), size_t(16)}) {
    FactoredModel fm(7, 5, 2, chunk);
    std::vector<double> th(fm.n_params());
    am_rng_fill_normal(&rng, th.data(), th.size());
    std::vector<double> g0(th.size()), g1(th.size()), g2(th.size());
    const double f0 = fm.loss(th.data(), tok.data(), M, g0.data(), 0.01);
    fm.set_parallel(potts_test::host_threads(1));
    const double f1 = fm.loss(th.data(), tok.data(), M, g1.data(), 0.01);
    fm.set_parallel(potts_test::host_threads(2));
    const double f2 = fm.loss(th.data(), tok.data(), M, g2.data(), 0.01);
    CHECK(f0 == f1);
    CHECK(f0 == f2);
    CHECK(g0 == g1);
    CHECK(g0 == g2);
    CHECK(fm.loss(th.data(), tok.data(), M, nullptr, 0.01) == f0);
  }
}

TEST_CASE("stopping rule: the fit stops when it stops improving and reconstructs like the long fit") {
  const Model m = potts_test::sinkhorn_model(10, 6, 2.0, 36);
  const size_t M = 1500;
  am_rng rng;
  am_rng_init(&rng, 37, 0);
  SampleOptions so;
  so.burnin = 100;
  so.parallel = potts_test::host_threads(2);
  std::vector<int32_t> tok;
  REQUIRE(sample(nullptr, m, M, so, rng, tok) == AM_OK);
  auto fit = [&](const PLOptions &o, std::vector<double> &th) {
    FactoredModel fm(10, 6, 1);
    th.assign(fm.n_params(), 0.0);
    am_rng r;
    am_rng_init(&r, 38, 0);
    am_rng_fill_normal(&r, fm.V(th.data(), 0), 36);
    for (int k = 0; k < 36; ++k) fm.V(th.data(), 0)[k] *= 1e-2;
    return fit_factored(fm, th, tok.data(), M, o);
  };
  PLOptions fast, slow;
  fast.parallel = potts_test::host_threads(2);
  slow.stop_tol = 0.0;  // the long fit: ftol 1e-10 / gtol 1e-9 / 5000 iterations
  std::vector<double> tf, ts;
  const LbfgsResult rf = fit(fast, tf), rs = fit(slow, ts);
  CHECK(rf.status == LBFGS_WINDOW);
  CHECK(rs.status != LBFGS_WINDOW);
  CHECK(rf.iterations * 3 < rs.iterations);
  // The loss at the stop is within a quarter of the rule's scale n_params/(2ML) of the long fit's (measured
  // 2.5e-4 = 0.054 of the scale 4.5e-3 after 41 iterations; the long fit takes 454).
  const double scale = (100.0 + 36.0) / (2.0 * M * 10);
  CHECK(rf.f >= rs.f);
  CHECK(rf.f - rs.f < 0.25 * scale);
  CHECK(rs.iterations > 200);
  // Couplings A_ij V_ab (column-centred V) against the truth β J_ij U_ab (same gauge): the squared error of the
  // stopped fit is within 5 % of the long fit's (at this small M it is lower: the long fit goes on over-fitting).
  FactoredModel fm(10, 6, 1);
  std::vector<double> Af(100), As(100);
  attention_from_W(fm.W(tf.data(), 0), 10, Af.data());
  attention_from_W(fm.W(ts.data(), 0), 10, As.data());
  const double r = row_sum_mean(m.J, 10);
  double d_st = 0.0, d_ft = 0.0;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      if (i == j) continue;
      for (int b = 0; b < 6; ++b) {
        double cf = 0, cs = 0, ct = 0;
        for (int a = 0; a < 6; ++a) {
          cf += fm.V(tf.data(), 0)[a + 6 * b] / 6;
          cs += fm.V(ts.data(), 0)[a + 6 * b] / 6;
          ct += m.beta * m.U[a + 6 * b] / 6;
        }
        for (int a = 0; a < 6; ++a) {
          const double ef = Af[i + 10 * j] * (fm.V(tf.data(), 0)[a + 6 * b] - cf);
          const double es = As[i + 10 * j] * (fm.V(ts.data(), 0)[a + 6 * b] - cs);
          const double et = m.J[i + 10 * j] / r * r * (m.beta * m.U[a + 6 * b] - ct);
          d_st += (es - et) * (es - et);
          d_ft += (ef - et) * (ef - et);
        }
      }
    }
  CHECK(d_ft < 1.05 * d_st);  // measured (release): 17.8 vs 33.5 — the long fit goes on over-fitting
}
