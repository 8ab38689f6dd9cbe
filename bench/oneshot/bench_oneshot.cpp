// bench_oneshot — (1) one Adam step's loss+gradient of the GD network (batch 64, N0 = 192, S = 48, L = 2, H = 4)
// at G = 32 against G = 128 (the reference's), and at value width 512 against 128 (path form: the value width
// should barely matter); (2) the theory estimator's temperature scan (warm starts along T) against cold starts
// from the GP point, at 4 widths on random Q/K heads (P = 200 by default; `bench_oneshot P` to change).
// `bench_oneshot smoke` (tests/scripts): a batch of 8, one repetition, P = 20 and 20 validation and test episodes,
// N = 1000 (the fewest Newton iterations) x 2 temperatures — seconds, a check that it runs, not a measurement.
#include "oneshot_core.h"
#include "estimate.hpp"

#include <attnmech/plugin.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace am::oneshot;
using clk = std::chrono::steady_clock;

static bool smoke = false;

static double step_time(size_t G, size_t W, int threads) {
  ModelShape s;
  s.G = G;
  s.W = W;
  am_rng r;
  am_rng_init(&r, 1, 0);
  Model m, g;
  init_model(s, &r, &m);
  const size_t n = smoke ? 8 : 64;
  std::vector<double> X(n * s.S * s.N0), y(n);
  am_rng_fill_normal(&r, X.data(), X.size());
  for (auto &v : y) v = am_rng_below(&r, 2) ? 1 : -1;
  const am::sdk::ParallelFor pf = am::sdk::threads_loop(threads);
  loss_and_grad(m, n, X.data(), y.data(), &g, pf);
  const int reps = smoke ? 1 : 5;
  const auto t0 = clk::now();
  for (int k = 0; k < reps; ++k) loss_and_grad(m, n, X.data(), y.data(), &g, pf);
  return std::chrono::duration<double>(clk::now() - t0).count() / reps;
}

int main(int argc, char **argv) {
  smoke = argc > 1 && std::string(argv[1]) == "smoke";
  const size_t P = smoke ? 20 : argc > 1 ? size_t(std::atoi(argv[1])) : 200;
  const double a = step_time(32, 128, 2), b = step_time(128, 128, 2), c = step_time(32, 512, 2);
  std::printf("GD step (%d episodes, 2 threads): G=32 W=128 %.3f s | G=128 %.3f s (x%.2f) | W=512 %.3f s (x%.2f)\n",
              smoke ? 8 : 64, a, b, b / a, c, c / a);

  // the theory's temperature scan (am::attention::estimate) on random Q/K heads, at every width: warm starts along T
  // (one call with the grid) against cold starts (one call per T, every solve from the GP point)
  ModelShape shape;
  shape.G = 32;
  am_rng r;
  am_rng_init(&r, 2, 0);
  Model m;
  init_model(shape, &r, &m);
  am_record *ds = nullptr;
  am_record_create(&ds);
  am_record_set_string(ds, "kind", AM_DATASET_ATTENTION);
  for (const char *split : {"train", "val", "test"}) {
    const size_t n = std::string(split) == "train" ? P : smoke ? 20 : 200;
    std::vector<double> X(n * 48 * 192), y(n);
    am_rng_fill_normal(&r, X.data(), X.size());
    // labels correlated with the first feature of the last token, so the theory has something to fit
    for (size_t k = 0; k < n; ++k) y[k] = X[k * 48 * 192 + 47 * 192] > 0 ? 1 : -1;
    am_array_view v{};
    v.dtype = AM_F64;
    v.ndim = 3;
    v.shape[0] = n;
    v.shape[1] = 48;
    v.shape[2] = 192;
    v.data = X.data();
    am_record_set_array(ds, ("X_" + std::string(split)).c_str(), &v);
    am_record_set_vector(ds, ("y_" + std::string(split)).c_str(), y.data(), n);
  }
  for (const char *key : {"heads", "widths", "variances"}) {
    am_record *l = am_record_list(ds, key);
    const size_t n = key[0] == 'h' ? 2 : key[0] == 'w' ? 3 : 4;
    for (size_t i = 0; i < n; ++i) am_record_append_number(l, key[0] == 'h' ? 4.0 : 1.0);
  }
  am_record_set_number(ds, "temperature", 0.5);
  am_record_set_string(ds, "readout", "mean");
  am_record *att = am_record_object(ds, "attention");
  for (size_t j = 0; j < 8; ++j) {
    am_record *hd = am_record_object(att, ("l" + std::to_string(j / 4 + 1) + "_h" + std::to_string(j % 4 + 1)).c_str());
    am_record_set_matrix(hd, "Q", m.Q[j].data(), 32, 192, 32);
    am_record_set_matrix(hd, "K", m.K[j].data(), 32, 192, 32);
  }
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am::attention::PathInputs xi;  // ξ once for every width, as the theory estimator keeps it
  am::attention::load_path_inputs(ctx, ds, &xi);
  am::sdk::Record inputs = am::sdk::make_record();
  const std::vector<double> widths = smoke ? std::vector<double>{1000} : std::vector<double>{10, 100, 1000, 10000};
  const std::vector<double> temps = smoke ? std::vector<double>{0.1, 1}
                                          : std::vector<double>{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5};
  double warm = 0, cold = 0, it_warm = 0, it_cold = 0;
  auto iterations = [](const am_record *run, bool scan) {
    if (!scan) return am_record_number(am_record_get(am_record_get(run, "solver"), "iterations"));
    std::vector<double> it(16);
    size_t n = 0;
    am_record_get_vector(am_record_get(run, "temperature_scan"), "iterations", it.data(), it.size(), &n);
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += it[i];
    return s;
  };
  for (double N : widths) {
    const double wl[3] = {N, N, N};
    am_record_remove(inputs.get(), "widths");
    am_record_set_vector(inputs.get(), "widths", wl, 3);
    for (int pass = 0; pass < 2; ++pass)
      for (size_t k = 0; k < (pass == 0 ? 1 : temps.size()); ++k) {
        am::attention::Options opt;
        opt.solve.grad_tol = 1e-8;
        opt.alignment_k = 0;
        opt.temperatures = pass == 0 ? temps : std::vector<double>{temps[k]};
        am_record *run = nullptr;
        am_record_create(&run);
        const auto t0 = clk::now();
        am::attention::estimate(ctx, ds, inputs.get(), xi, opt, run);
        const double sec = std::chrono::duration<double>(clk::now() - t0).count();
        (pass == 0 ? warm : cold) += sec;
        (pass == 0 ? it_warm : it_cold) += iterations(run, pass == 0);
        am_record_destroy(&run);
      }
  }
  std::printf("theory T scan %zu x %zu at P=%zu: warm starts along T %.1f s, %.0f Newton iterations | cold %.1f s, "
              "%.0f iterations (x%.2f time)\n",
              widths.size(), temps.size(), P, warm, it_warm, cold, it_cold, cold / warm);
  am_record_destroy(&ds);
  am_context_destroy(&ctx);
  return 0;
}
