// The fast Potts paths: the incremental Gibbs chain against the from-scratch reference sweep and the factored loss on
// the host's loop (same bits for any thread count). The stopping rule against the long fit: test_stopping.cpp.
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
