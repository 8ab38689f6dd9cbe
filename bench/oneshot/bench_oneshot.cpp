// bench_oneshot — (1) one Adam step's loss+gradient of the GD network (batch 64, N0 = 192, S = 48, L = 2, H = 4)
// at G = 32 against G = 128 (the reference's), and at value width 512 against 128 (path form: the value width
// should barely matter); (2) the theory over an N × T grid with warm starts against cold starts from the GP
// point, on random Q/K heads (P = 200 by default; `bench_oneshot P` to change).
#include "oneshot_core.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace oneshot;
using clk = std::chrono::steady_clock;

static double step_time(size_t G, size_t W, int threads) {
  ModelShape s;
  s.G = G;
  s.W = W;
  am_rng r;
  am_rng_init(&r, 1, 0);
  Model m, g;
  init_model(s, &r, &m);
  const size_t n = 64;
  std::vector<double> X(n * s.S * s.N0), y(n);
  am_rng_fill_normal(&r, X.data(), X.size());
  for (auto &v : y) v = am_rng_below(&r, 2) ? 1 : -1;
  loss_and_grad(m, n, X.data(), y.data(), &g, threads);
  const int reps = 5;
  const auto t0 = clk::now();
  for (int k = 0; k < reps; ++k) loss_and_grad(m, n, X.data(), y.data(), &g, threads);
  return std::chrono::duration<double>(clk::now() - t0).count() / reps;
}

int main(int argc, char **argv) {
  const size_t P = argc > 1 ? size_t(std::atoi(argv[1])) : 200;
  const double a = step_time(32, 128, 2), b = step_time(128, 128, 2), c = step_time(32, 512, 2);
  std::printf("GD step (64 episodes, 2 threads): G=32 W=128 %.3f s | G=128 %.3f s (x%.2f) | W=512 %.3f s (x%.2f)\n", a,
              b, b / a, c, c / a);

  // theory grid on random heads
  Options o;
  o.widths_scan = {10, 100, 1000, 10000};
  Prepared p;
  am_rng r;
  am_rng_init(&r, 2, 0);
  p.model.shape.G = 32;
  init_model(p.model.shape, &r, &p.model);
  for (auto *Xs : {&p.X_train, &p.X_val, &p.X_test}) {
    const size_t n = Xs == &p.X_train ? P : 200;
    Xs->resize(n * 48 * 192);
    am_rng_fill_normal(&r, Xs->data(), Xs->size());
    std::vector<double> &y = Xs == &p.X_train ? p.y_train : Xs == &p.X_val ? p.y_val : p.y_test;
    y.resize(n);
    // labels correlated with the first feature of the last token, so the theory has something to fit
    for (size_t k = 0; k < n; ++k) y[k] = (*Xs)[k * 48 * 192 + 47 * 192] > 0 ? 1 : -1;
  }
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  GridResult g;
  auto t0 = clk::now();
  am_status st = theory_grid(ctx, o, p, &g);
  const double warm = std::chrono::duration<double>(clk::now() - t0).count();
  double it_warm = 0;
  for (double v : g.iterations) it_warm += v;
  // cold: one temperature and one width at a time (every solve from the GP point)
  double cold = 0, it_cold = 0;
  for (double N : o.widths_scan)
    for (double T : o.temperatures) {
      Options oc = o;
      oc.widths_scan = {N};
      oc.temperatures = {T};
      GridResult gc;
      t0 = clk::now();
      theory_grid(ctx, oc, p, &gc);
      cold += std::chrono::duration<double>(clk::now() - t0).count();
      it_cold += gc.iterations[0];
    }
  std::printf("theory grid %zu x %zu at P=%zu (status %d, %zu failures): warm starts %.1f s, %.0f Newton iterations | "
              "cold %.1f s, %.0f iterations (x%.2f time)\n",
              o.widths_scan.size(), o.temperatures.size(), P, int(st), g.failures, warm, it_warm, cold, it_cold,
              cold / warm);
  am_context_destroy(&ctx);
  return 0;
}
