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
#include "potts_data.h"

#include <ctime>

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
  std::printf("   dgemm-rate time (square n=600 rate %.2f GF/s): %.2f ms -> efficiency %.2f (time / ideal %.2fx)\n",
              rate_sq * 1e-9, flops / rate_sq * 1e3, flops / rate_sq / best, best / (flops / rate_sq));
  std::printf("   dgemm rate at the model's shapes [%d x %d x %d]: %.2f GF/s -> efficiency %.2f\n", 256 * C, L, L,
              rate_shape * 1e-9, flops / rate_shape / best);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const double rate = dgemm_rate(600, 600, 600, quick ? 5 : 30);
  std::printf("dgemm rate (600^3, best of repeated calls, this machine, this run): %.2f GF/s\n", rate * 1e-9);
  case_loss(20, 20, 3000, rate, quick ? 3 : 20);
  case_loss(100, 20, 10000, rate, quick ? 1 : 5);
  if (quick) return 0;
  // time to converge on the data of `attnmech run potts --set M=3000` (seed 0: same J, U and training
  // sequences as the CLI), L-BFGS from W = 0, V ~ N(0, 1e-4), stopping rule of the estimator (ftol 1e-10)
  TaskOptions to;
  am_rng task_rng;
  am_rng_init(&task_rng, 0, 1);  // the CLI's task stream for seed 0
  Model m;
  draw_model(nullptr, to, task_rng, 0, &m);
  am_context_settings cs;  // the chains on 2 threads through the loop a plugin's host offers
  am_context_default_settings(&cs);
  cs.threads = 2;
  am_context *pctx = nullptr;
  am_context_create(&pctx, &cs);
  am_host host;
  am_host_init(&host, pctx, nullptr, 0, 0, 2);
  SampleOptions so;
  so.parallel = host_parallel_for(am::sdk::Host(&host));
  am_rng rtrain;
  am_rng_split(&task_rng, 2, &rtrain);
  std::vector<int32_t> tok;
  double t0 = now();
  sample(nullptr, m, 3000, so, rtrain, tok);
  am_context_destroy(&pctx);
  std::printf("sampling 3000 sequences x 300 sweeps (2 threads): %.2f s; eps*(train) = %.6f\n", now() - t0,
              epsilon_star(m, tok.data(), 3000));
  FactoredModel fm(20, 20, 1);
  std::vector<double> th(fm.n_params(), 0.0);
  am_rng rng;
  am_rng_init(&rng, 0, 2);
  am_rng_fill_normal(&rng, fm.V(th.data(), 0), 400);
  for (int k = 0; k < 400; ++k) fm.V(th.data(), 0)[k] *= 1e-2;
  LbfgsOptions lo;
  lo.gtol = 1e-9;
  lo.ftol = 1e-10;
  std::vector<double> trace;
  t0 = now();
  const std::clock_t c0 = std::clock();
  const auto r = lbfgs_minimize(
      th.size(), th.data(), [&](const double *x, double *g) { return fm.loss(x, tok.data(), 3000, g); }, lo,
      [&](int, double f, double, const double *) {
        trace.push_back(now() - t0);
        trace.push_back(f);
        return true;
      });
  const double dt = now() - t0, cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  double t6 = dt;  // first time the loss is within 1e-6 of its final value
  for (size_t k = 0; k + 1 < trace.size(); k += 2)
    if (trace[k + 1] - r.f < 1e-6) {
      t6 = trace[k];
      break;
    }
  std::printf("L-BFGS to convergence (L=C=20, M=3000): %.2f s wall, %.2f s CPU, %d iterations, %d evaluations, "
              "|g| = %.2e (%s), loss %.8f; within 1e-6 of the final loss after %.2f s\n",
              dt, cpu, r.iterations, r.evaluations, r.gnorm, lbfgs_status_string(r.status), r.f, t6);
  return 0;
}
