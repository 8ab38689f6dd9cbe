// bench/potts/loss_time — one full-batch loss+gradient of the factored model (the peer case of bench_potts: L = C = 20,
// one head, M = 3000, random tokens and θ ~ N(0, 1), seed 1) against the dgemm rate measured in the same process, for
// comparing builds in alternation on a shared machine (docs/potts.md). CPU time: getrusage(RUSAGE_SELF) (every
// thread of the process, so OpenBLAS's own threads count) and wall time; min / median over the repetitions.
// Usage: loss_time [reps] [L] [C] [M] [heads] [chunk] [dgemm_reps]   (chunk 0 = the model's automatic one; run with and without
// OPENBLAS_NUM_THREADS=1)
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "factored.h"
#include "potts_model.h"

#ifndef LOSS_TIME_NS
#define LOSS_TIME_NS am::potts
#endif
using namespace LOSS_TIME_NS;

namespace {

double cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + 1e-6 * u.ru_utime.tv_usec + u.ru_stime.tv_sec + 1e-6 * u.ru_stime.tv_usec;
}
double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void stats(std::vector<double> v, double &mn, double &med) {
  std::sort(v.begin(), v.end());
  mn = v.front();
  med = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 9;
  const int L = argc > 2 ? std::atoi(argv[2]) : 20, C = argc > 3 ? std::atoi(argv[3]) : 20;
  const size_t M = argc > 4 ? (size_t)std::atol(argv[4]) : 3000;
  const int H = argc > 5 ? std::atoi(argv[5]) : 1;
  const size_t chunk = argc > 6 ? (size_t)std::atol(argv[6]) : 0;
  const int dreps = argc > 7 ? std::max(1, std::atoi(argv[7])) : reps;
  const int n = 600;
  std::vector<double> A((size_t)n * n, 0.5), B((size_t)n * n, 0.25), Cm((size_t)n * n, 0.0);
  std::vector<double> gc, gw;
  for (int r = 0; r < dreps; ++r) {
    const double c0 = cpu(), w0 = wall();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, Cm.data(), n);
    gc.push_back(cpu() - c0);
    gw.push_back(wall() - w0);
  }
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  std::vector<int32_t> tok(M * L);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, C);
  FactoredModel fm(L, C, H, chunk);
  std::vector<double> th(fm.n_params()), g(th.size());
  am_rng_fill_normal(&rng, th.data(), th.size());
  double f = fm.loss(th.data(), tok.data(), M, g.data());  // warm-up
  std::vector<double> lc, lw;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu(), w0 = wall();
    f = fm.loss(th.data(), tok.data(), M, g.data());
    lc.push_back(cpu() - c0);
    lw.push_back(wall() - w0);
  }
  double gcm, gcd, gwm, lcm, lcd, lwm, lwd, dummy;
  stats(gc, gcm, gcd);
  stats(gw, gwm, dummy);
  stats(lc, lcm, lcd);
  stats(lw, lwm, lwd);
  const double gf = 2.0 * n * n * n, fl = fm.flops(M);
  double gs = 0;
  for (double x : g) gs += x * x;
  std::printf("loss_time L=%d C=%d M=%zu H=%d chunk=%zu reps=%d: loss %.17g |g|^2 %.17g\n", L, C, M, H, chunk, reps, f, gs);
  std::printf("  dgemm %d^3: cpu min %.2f ms (%.2f GF/s cpu), median %.2f ms; wall min %.2f ms\n", n, gcm * 1e3,
              gf / gcm * 1e-9, gcd * 1e3, gwm * 1e3);
  std::printf("  loss+grad: cpu min %.2f ms median %.2f ms; wall min %.2f ms median %.2f ms; %.2f of dgemm rate (cpu min)\n",
              lcm * 1e3, lcd * 1e3, lwm * 1e3, lwd * 1e3, fl / lcm / (gf / gcm));
  return 0;
}
