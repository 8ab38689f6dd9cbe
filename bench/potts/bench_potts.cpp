// bench/potts — time of one full-batch loss+gradient evaluation of the factored model, as a fraction
// of its dgemm FLOP count (6·M·C·L²) at the dgemm rate measured in the same run; plus the time to
// converge (L-BFGS) on sampled Potts data at L = C = 20, M = 3000.
// Usage: bench_potts [--quick]
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "potts_model.h"

using namespace potts;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sustained dgemm rate (flop/s) on n×n×n products, best of a few repetitions.
static double dgemm_rate(int n, int m_, int k, int reps) {
  std::vector<double> A((size_t)n * k, 0.5), B((size_t)k * m_, 0.25), C((size_t)n * m_, 0.0);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, m_, k, 1.0, A.data(), n, B.data(), k, 0.0, C.data(), n);
    best = std::min(best, now() - t0);
  }
  return 2.0 * n * m_ * k / best;
}

static void case_loss(int L, int C, size_t M, double rate_sq, int reps) {
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  std::vector<int32_t> tok(M * L);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, C);
  FactoredModel fm(L, C, 1);
  std::vector<double> th(fm.n_params()), g(th.size());
  am_rng_fill_normal(&rng, th.data(), th.size());
  fm.loss(th.data(), tok.data(), M, g.data());  // warm-up
  double best = 1e300, tot = 0.0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    fm.loss(th.data(), tok.data(), M, g.data());
    const double dt = now() - t0;
    best = std::min(best, dt);
    tot += dt;
  }
  // the rate of dgemm at the shapes the model uses (chunk 256: [256·C × L] × [L × L])
  const double rate_shape = dgemm_rate(256 * C, L, L, 50);
  const double flops = fm.flops(M);
  std::printf("L=%d C=%d M=%zu: loss+grad %.2f ms (best of %d, mean %.2f ms); dgemm flops %.3g\n", L, C, M, best * 1e3,
              reps, tot / reps * 1e3, flops);
  std::printf("   dgemm-rate time (square n=1000 rate %.2f GF/s): %.2f ms -> efficiency %.2f (time / ideal %.2fx)\n",
              rate_sq * 1e-9, flops / rate_sq * 1e3, flops / rate_sq / best, best / (flops / rate_sq));
  std::printf("   dgemm rate at the model's shapes [%d x %d x %d]: %.2f GF/s -> efficiency %.2f\n", 256 * C, L, L,
              rate_shape * 1e-9, flops / rate_shape / best);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const double rate = dgemm_rate(1000, 1000, 1000, quick ? 2 : 5);
  std::printf("dgemm rate (1000^3, this machine, this run): %.2f GF/s\n", rate * 1e-9);
  case_loss(20, 20, 3000, rate, quick ? 3 : 20);
  case_loss(100, 20, 10000, rate, quick ? 1 : 5);
  if (quick) return 0;
  // time to converge on Potts data (spec §1.3 recipe, β = 2), L-BFGS from W = 0, V ~ N(0, 1e-4)
  am_rng rng;
  am_rng_init(&rng, 0, 0);
  Model m;
  m.L = m.C = 20;
  m.beta = 2.0;
  make_J_sinkhorn(20, &rng, m.J);
  make_U_gaussian(20, &rng, m.U);
  SampleOptions so;
  so.threads = 2;
  std::vector<int32_t> tok;
  double t0 = now();
  sample(nullptr, m, 3000, so, rng, tok);
  std::printf("sampling 3000 sequences x 300 sweeps: %.2f s\n", now() - t0);
  FactoredModel fm(20, 20, 1);
  std::vector<double> th(fm.n_params(), 0.0);
  am_rng_fill_normal(&rng, fm.V(th.data(), 0), 400);
  for (int k = 0; k < 400; ++k) fm.V(th.data(), 0)[k] *= 1e-2;
  LbfgsOptions lo;
  lo.gtol = 1e-9;
  lo.ftol = 1e-13;
  t0 = now();
  const auto r = lbfgs_minimize(th.size(), th.data(),
                                [&](const double *x, double *g) { return fm.loss(x, tok.data(), 3000, g); }, lo);
  const double dt = now() - t0;
  std::printf("L-BFGS to convergence (L=C=20, M=3000): %.2f s, %d iterations, %d evaluations, |g| = %.2e (%s), "
              "loss %.6f\n",
              dt, r.iterations, r.evaluations, r.gnorm, lbfgs_status_string(r.status), r.f);
  return 0;
}
