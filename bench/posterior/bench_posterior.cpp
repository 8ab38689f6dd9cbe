// Benchmark of the posterior estimator's inner loop: gradient evaluations per second of the network
// log posterior (path form, BLAS, one thread) at N = 10, 100, 1000 (P = 100, N0 = 231, S = 31,
// L = 2, H = (2, 2): 4 paths, Markov-task sizes), against PyTorch autograd of the token-wise forward
// pass measured in the same run (skipped with a message if python3/torch are absent), and at
// N = 1000 the achieved FLOP rate as a fraction of a large single-thread dgemm.
//
// The last column is the log density + gradient of the marginal model (V_0 integrated out, marginal.h) at
// the same point: one evaluation costs more (a P × P Cholesky) but NUTS needs far fewer of them.
//
// Then the fastest of 3000 marginal evaluations at N = 10 (the small-matrix path: P × P Cholesky and inverse at
// P = 100, simd/spd_kernels.h), a figure that stays put on a loaded machine where the rates above move by ±30 %,
// against the same evaluations by the LAPACK route (the kernels' scalar variant) alternating with them.
// Last, one NUTS chain at N = 10 (full and marginal model, 100 warm-up + 100 draws, tree depth ≤ 6): gradients
// per CPU second with the sampler's own work (tree building, U-turn tests, draw recording) included, where the
// model is cheapest and that work weighs most. The draws are fixed by the seed, so the work is the same each run.
//
// Usage: bench_posterior [seconds per measurement, default 2]   (POSTERIOR_NO_TORCH=1 skips PyTorch)
//        bench_posterior smoke   (tests/scripts: 0.02 s per measurement, N = 10 and 100, PyTorch at N = 10 only, a 300³
//                                 dgemm, 100 marginal evaluations, one chain each: seconds, not a measurement)
#include "marginal.h"
#include "network.h"
#include "posterior.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef POSTERIOR_TORCH_SCRIPT
#define POSTERIOR_TORCH_SCRIPT "torch_tokenwise.py"
#endif

using namespace am::posterior;
using clk = std::chrono::steady_clock;

namespace {

const size_t P = 100, N0 = 231, S = 31, H1 = 2, H2 = 2;

// Random ξ of the right shape (the timing does not depend on its values).
std::vector<double> random_xi(am_rng &r) {
  std::vector<double> xi(P * N0 * H1 * H2);
  for (double &v : xi) v = 0.05 * am_rng_normal(&r);
  return xi;
}

// The benchmark network's settings at width N (two layers of H1, H2 heads, T = 0.01).
NetworkSpec bench_spec(size_t N) {
  NetworkSpec sp;
  sp.L = 2;
  sp.heads = {H1, H2};
  sp.widths = {N, N, N};
  sp.variances = {1, 1, 1, 1};
  sp.temperature = 0.01;
  sp.N0 = N0;
  return sp;
}

// Alternating ±1 labels of the P training examples.
std::vector<double> alternating_labels() {
  std::vector<double> y(P);
  for (size_t i = 0; i < P; ++i) y[i] = (i % 2) ? 1.0 : -1.0;
  return y;
}

// FLOPs of one log-posterior + gradient evaluation (GEMM/GEMV terms only; 2 per multiply-add).
double flops_per_gradient(size_t N) {
  const double n = static_cast<double>(N), H = H1 * H2;
  double f = 0;
  f += 2 * (H2 * n * n * 1) + 2 * (H1 * n * n * H2);          // effective weights (forward)
  f += 2 * N0 * H * n + 2 * P * N0 * H;                        // Z = V0ᵀw, f = Ξ vec Z
  f += 2 * P * N0 * H + 2 * n * N0 * H * 2;                    // dZ, dV0, dw
  f += 2 * (2 * H1 * n * n * H2) + 2 * (2 * H2 * n * n * 1);   // dV, dw for layers 1 and 2
  return f;
}

double time_gradients(size_t N, double budget, double *flop_rate, double *marginal_rate = nullptr) {
  am_rng r;
  am_rng_init(&r, 1234, N);
  const std::vector<double> xi = random_xi(r);
  const std::vector<double> y = alternating_labels();
  const NetworkSpec sp = bench_spec(N);
  Network net(sp, P, xi.data(), y.data());
  std::vector<double> th(net.dim()), g(net.dim());
  net.sample_prior(r, th.data());
  Network::Work wk;
  net.init_work(wk);
  net.log_posterior(th.data(), g.data(), wk);  // warm-up
  long n = 0;
  auto t0 = clk::now();
  double el = 0;
  volatile double sink = 0;
  do {
    for (int k = 0; k < 10; ++k) sink = sink + net.log_posterior(th.data(), g.data(), wk);
    n += 10;
    el = std::chrono::duration<double>(clk::now() - t0).count();
  } while (el < budget);
  if (flop_rate) *flop_rate = flops_per_gradient(N) * n / el;
  if (!marginal_rate) return n / el;
  const double full = n / el;
  // the marginal model (V_0 integrated out): same point without V_0
  const PairKernels C(net);
  MarginalDensity md(net, C);
  const double *q = th.data() + N * N0;
  md.log_density(q, g.data());
  long m = 0;
  t0 = clk::now();
  do {
    for (int k = 0; k < 10; ++k) sink = sink + md.log_density(q, g.data());
    m += 10;
    el = std::chrono::duration<double>(clk::now() - t0).count();
  } while (el < budget);
  *marginal_rate = m / el;
  return full;
}

double dgemm_rate(size_t n, double budget) {
  std::vector<double> A(n * n, 1.0 / n), B(n * n, 0.5), C(n * n, 0.0);
  const int m = static_cast<int>(n);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, A.data(), m, B.data(), m, 0.0, C.data(), m);
  long reps = 0;
  const auto t0 = clk::now();
  double el = 0;
  do {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, A.data(), m, B.data(), m, 0.0, C.data(),
                m);
    ++reps;
    el = std::chrono::duration<double>(clk::now() - t0).count();
  } while (el < budget);
  return 2.0 * n * n * n * reps / el;
}

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// One chain of the sampler on the problem above at width N: gradients per CPU second, best of `reps` runs.
double chain_rate(size_t N, bool marginal, int reps, long long *gradients, bool smoke) {
  am_rng r;
  am_rng_init(&r, 1234, N);
  const std::vector<double> xi = random_xi(r);
  const size_t Pt = 20;
  std::vector<double> xt(Pt * N0 * H1 * H2);
  for (double &v : xt) v = 0.05 * am_rng_normal(&r);
  const std::vector<double> y = alternating_labels();
  const NetworkSpec sp = bench_spec(N);
  const Network net(sp, P, xi.data(), y.data());
  PosteriorSettings st;
  st.chains = 1;
  st.sampler.warmup = smoke ? 20 : 100;
  st.sampler.samples = smoke ? 20 : 100;
  st.sampler.max_tree_depth = 6;
  st.marginal = marginal;
  am_rng parent;
  am_rng_init(&parent, 9, 1);
  double best = 0;
  for (int k = 0; k < reps; ++k) {
    const double t0 = cpu_seconds();
    const auto out = run_chains(net, Pt, xt.data(), st, parent, nullptr, nullptr);
    const double t = cpu_seconds() - t0;
    *gradients = out[0].gradient_evaluations;
    best = std::max(best, static_cast<double>(out[0].gradient_evaluations) / t);
  }
  return best;
}

// Fastest of `reps` marginal log density + gradient evaluations at width N (thread CPU seconds), with the SPD kernels
// in use (best[0]) and with the LAPACK route, the scalar variant (best[1]), alternating: the baseline in the same run.
void marginal_min_seconds(size_t N, int reps, double best[2]) {
  am_rng r;
  am_rng_init(&r, 1234, N);
  const std::vector<double> xi = random_xi(r);
  const std::vector<double> y = alternating_labels();
  const NetworkSpec sp = bench_spec(N);
  const Network net(sp, P, xi.data(), y.data());
  std::vector<double> th(net.dim()), g(net.dim());
  net.sample_prior(r, th.data());
  const PairKernels C(net);
  MarginalDensity md(net, C), lapack(net, C, am::posterior::simd::spd_scalar_kernels());
  MarginalDensity *dens[2] = {&md, &lapack};
  best[0] = best[1] = 1e30;
  for (int k = 0; k < reps; ++k)
    for (int v = 0; v < 2; ++v) {
      timespec t0, t1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
      dens[v]->log_density(th.data() + N * N0, g.data());
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
      best[v] = std::min(best[v], static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec));
    }
}

// Runs the PyTorch baseline; returns grads/s or a negative number (message in *why).
double torch_rate(size_t N, double budget, std::string *why) {
  char cmd[1024];
  std::snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' %zu %zu %zu %zu %zu %zu %g 2>&1", POSTERIOR_TORCH_SCRIPT, N, P,
                N0, S, H1, H2, budget);
  FILE *p = popen(cmd, "r");
  if (!p) {
    *why = "cannot start /usr/bin/python3";
    return -1;
  }
  char line[512];
  std::string all;
  double v = -1;
  while (std::fgets(line, sizeof line, p)) {
    all += line;
    if (std::sscanf(line, "grads_per_second %lf", &v) == 1) break;
  }
  pclose(p);
  if (v < 0) *why = all.empty() ? "no output from python3" : all;
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  const bool smoke = argc > 1 && std::string(argv[1]) == "smoke";
  const double budget = smoke ? 0.02 : argc > 1 ? std::atof(argv[1]) : 2.0;
  const std::vector<size_t> widths = smoke ? std::vector<size_t>{10, 100} : std::vector<size_t>{10, 100, 1000};
  const size_t n_dgemm = smoke ? 300 : 1000, N_max = widths.back();
  const am::sdk::BlasThreads one_thread(1);  // as during sampling
  std::printf("posterior gradient benchmark: P=%zu N0=%zu S=%zu L=2 H=(%zu,%zu), float64, 1 thread\n", P, N0, S, H1,
              H2);
  std::printf("%6s %16s %16s %10s %16s\n", "N", "attnmech grad/s", "torch grad/s", "speed-up", "marginal grad/s");
  double rate_max = 0;
  for (size_t N : widths) {
    double fr = 0, mr = 0;
    const double ours = time_gradients(N, budget, &fr, &mr);
    if (N == N_max) rate_max = fr;
    std::string why = smoke && N > 10 ? "smoke: N = 10 only" : "";
    const double theirs = std::getenv("POSTERIOR_NO_TORCH") || !why.empty() ? -1 : torch_rate(N, budget, &why);
    if (theirs > 0)
      std::printf("%6zu %16.1f %16.2f %9.1fx %16.1f\n", N, ours, theirs, ours / theirs, mr);
    else
      std::printf("%6zu %16.1f %16s %10s %16.1f   (torch baseline skipped: %s)\n", N, ours, "-", "-", mr,
                  why.empty() ? "POSTERIOR_NO_TORCH" : why.substr(0, why.find('\n')).c_str());
    std::fflush(stdout);
  }
  const double peak = dgemm_rate(n_dgemm, budget);
  std::printf("N=%zu: %.2f GFLOP/s in the gradient (%.1f MFLOP per evaluation) = %.0f%% of dgemm %zu^3 (%.2f GFLOP/s)\n",
              N_max, rate_max * 1e-9, flops_per_gradient(N_max) * 1e-6, 100.0 * rate_max / peak, n_dgemm, peak * 1e-9);
  const int evaluations = smoke ? 100 : 3000, chains = smoke ? 1 : 3;
  double best[2];
  marginal_min_seconds(10, evaluations, best);
  std::printf("marginal log density + gradient, N=10 (P=%zu): %.1f us with the %s SPD kernels, %.1f us by the LAPACK "
              "route (scalar variant): %.2fx (fastest of %d each, alternating, thread CPU time)\n",
              P, 1e6 * best[0], am::posterior::simd::spd_kernels().name, 1e6 * best[1], best[1] / best[0], evaluations);
  for (bool marginal : {false, true}) {
    long long grads = 0;
    const double rate = chain_rate(10, marginal, chains, &grads, smoke);
    std::printf("one NUTS chain, N=10, %s model: %.1f gradients per CPU second (%lld gradients, best of %d)\n",
                marginal ? "marginal" : "full", rate, grads, chains);
  }
  return 0;
}
