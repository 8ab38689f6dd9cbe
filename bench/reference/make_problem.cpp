// attnmech bench/reference — writes the Markov all-paths problem (docs/tasks.md, P = 100,
// P_test = 1000, T = 0.01, N = 10) in the `npy` task's directory format (docs/tasks.md), so that
// `attnmech run npy` and the authors' reference code (run_reference.py) read the SAME files; then
// times attnmech's solve phase alone (ξ from the files' record, Newton from the GP point to 1e-10),
// for the solve-phase ratio printed by compare.py.
//
//   make_problem DIR [--seed S] [--width N] [--reps R]
//
// Writes DIR/{X_train,y_train,X_test,y_test}.npy, DIR/W_l<l>_h<h>.npy, DIR/model.json and
// DIR/attnmech_phases.json (phase times in seconds, best of R repetitions, plus the solver's numbers):
// xi_train_s (ξ of the 100 training examples: attention of every head + path vectors), solve_s (theory
// create + damped Newton from the GP point), xi_test_s (ξ of the 1000 test examples), predict_s (test mean
// and variance from ξ_test). All single-threaded (context threads 1; OpenBLAS as the environment says).
#include <attnmech/attnmech.h>

#include "markov_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;
double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

[[noreturn]] void die(am_context *ctx, const std::string &what) {
  std::fprintf(stderr, "make_problem: %s: %s\n", what.c_str(), ctx ? am_context_last_error(ctx) : "");
  std::exit(2);
}

void check(am_context *ctx, am_status st, const std::string &what) {
  if (st != AM_OK) die(ctx, what);
}

// Writes any numeric view as f8 in C order with the same logical shape: element (i, j, …) of the
// record's array is element [i][j]… of the .npy file whatever memory order the record used.
void write_c_order(am_context *ctx, const am_array_view &v, const std::string &path) {
  const size_t n = am_array_view_count(&v);
  std::vector<double> buf(n);
  check(ctx, am_array_to_f64_c(ctx, &v, buf.data(), n), "convert " + path);
  am_array_view out{};
  out.dtype = AM_F64;
  out.ndim = v.ndim;
  for (uint32_t d = 0; d < v.ndim; ++d) out.shape[d] = v.shape[d];
  out.fortran_order = 0;
  out.data = buf.data();
  check(ctx, am_npy_write(ctx, path.c_str(), &out), "write " + path);
}

void write_key(am_context *ctx, const am_record *ds, const char *key, const std::string &dir) {
  am_array_view v{};
  check(ctx, am_record_get_array(ds, key, &v), std::string("dataset key ") + key);
  write_c_order(ctx, v, dir + "/" + key + ".npy");
}

std::string json_number_list(const am_record *list) {
  std::string s = "[";
  for (size_t i = 0; i < am_record_size(list); ++i) {
    char b[64];
    std::snprintf(b, sizeof b, "%s%.17g", i ? ", " : "", am_record_number(am_record_at(list, i)));
    s += b;
  }
  return s + "]";
}

std::string json_escape(const char *s) {
  std::string o = "\"";
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') o += '\\';
    o += *s;
  }
  return o + "\"";
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_problem DIR [--seed S] [--width N] [--reps R]\n");
    return 2;
  }
  const std::string dir = argv[1];
  uint64_t seed = 0;
  double width = 10;
  int reps = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--width")) width = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "make_problem: unknown option %s\n", argv[i]);
      return 2;
    }
  }

  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = 1;
  am_context *ctx = nullptr;
  check(nullptr, am_context_create(&ctx, &cs), "context");

  // The markov task exactly as `attnmech run markov --set seed=S` draws it (task stream (seed, 1)).
  am::markov::Options mo;  // defaults: config all, P 100, P_test 1000, T 0.01, σ's 1, β 10
  mo.widths_scan = {width};
  am_rng rng;
  am_rng_init(&rng, seed, 1);
  am_record *ds = nullptr, *extras = nullptr;
  check(ctx, am_record_create(&ds), "record");
  check(ctx, am_record_create(&extras), "record");
  const auto tg0 = clk::now();
  check(ctx, am::markov::make_dataset(ctx, mo, rng, ds, extras), "markov make_dataset");
  const double t_generate = secs(tg0, clk::now());

  for (const char *k : {"X_train", "y_train", "X_test", "y_test"}) write_key(ctx, ds, k, dir);

  const am_record *att = am_record_get(ds, "attention");
  if (!att) die(ctx, "dataset has no attention object");
  const am_record *heads = am_record_get(ds, "heads");
  std::vector<std::string> head_files;
  int first_head_fortran = -1;
  for (size_t l = 0; l < am_record_size(heads); ++l) {
    const int H = (int)am_record_number(am_record_at(heads, l));
    for (int h = 1; h <= H; ++h) {
      const std::string key = "l" + std::to_string(l + 1) + "_h" + std::to_string(h);
      am_array_view v{};
      check(ctx, am_record_get_array(att, key.c_str(), &v), "attention." + key);
      if (first_head_fortran < 0) first_head_fortran = v.fortran_order;
      write_c_order(ctx, v, dir + "/W_" + key + ".npy");
      head_files.push_back("W_" + key + ".npy");
    }
  }

  double T = 0;
  am_arch arch;
  am_arch_default(&arch);
  check(ctx, am_dataset_arch(ctx, ds, &arch, &T), "dataset arch");
  {
    std::string labels = "[";
    const am_record *pl = am_record_get(ds, "path_labels");
    for (size_t i = 0; pl && i < am_record_size(pl); ++i)
      labels += (i ? ", " : "") + json_escape(am_record_string(am_record_at(pl, i)));
    labels += "]";
    FILE *f = std::fopen((dir + "/model.json").c_str(), "w");
    if (!f) die(nullptr, "cannot write " + dir + "/model.json");
    std::fprintf(f,
                 "{\"readout\": \"last\", \"heads\": %s, \"widths\": %s, \"variances\": %s,\n"
                 " \"temperature\": %.17g, \"form\": \"bilinear\", \"path_labels\": %s}\n",
                 json_number_list(heads).c_str(), json_number_list(am_record_get(ds, "widths")).c_str(),
                 json_number_list(am_record_get(ds, "variances")).c_str(), T, labels.c_str());
    std::fclose(f);
  }

  // ---- attnmech's phases alone, in process (best of `reps`): ξ of both splits, solve, predict.
  double best_xi = 1e30, best_xi_test = 1e30, best_solve = 1e30, best_predict = 1e30;
  double cpu_xi = 1e30, cpu_xi_test = 1e30, cpu_solve = 1e30, cpu_predict = 1e30;  // process CPU seconds
  am_solve_report rep{sizeof(am_solve_report)};
  std::vector<double> U;
  double acc = 0;
  size_t P = 0, N0 = 0, Pt = 0, N0t = 0;
  for (int r = 0; r < reps; ++r) {
    double *xi = nullptr, *y = nullptr, *xit = nullptr, *yt = nullptr;
    auto t0 = clk::now();
    double c0 = cpu_now();
    check(ctx, am_dataset_xi(ctx, ds, "train", &xi, &P, &N0, &y), "xi train");
    best_xi = std::min(best_xi, secs(t0, clk::now()));
    cpu_xi = std::min(cpu_xi, cpu_now() - c0);
    t0 = clk::now();
    c0 = cpu_now();
    check(ctx, am_dataset_xi(ctx, ds, "test", &xit, &Pt, &N0t, &yt), "xi test");
    best_xi_test = std::min(best_xi_test, secs(t0, clk::now()));
    cpu_xi_test = std::min(cpu_xi_test, cpu_now() - c0);

    am_theory *th = nullptr;
    t0 = clk::now();
    c0 = cpu_now();
    check(ctx, am_theory_create(ctx, &th, &arch, P, N0, xi, y, T), "theory create");
    U.assign(am_theory_u_size(th), 0.0);
    am_solve_settings ss;
    am_solve_default_settings(&ss);  // GP start, max|G| <= 1e-10·max(1,|S|)
    const am_status st = am_theory_solve(ctx, th, &ss, U.data(), &rep);
    best_solve = std::min(best_solve, secs(t0, clk::now()));
    cpu_solve = std::min(cpu_solve, cpu_now() - c0);
    if (st != AM_OK && st != AM_CONVERGED_ROUNDOFF) die(ctx, "solve");

    std::vector<double> mean(Pt), var(Pt);
    t0 = clk::now();
    c0 = cpu_now();
    check(ctx, am_theory_predict(ctx, th, U.data(), Pt, xit, mean.data(), var.data()), "predict");
    best_predict = std::min(best_predict, secs(t0, clk::now()));
    cpu_predict = std::min(cpu_predict, cpu_now() - c0);
    acc = am_accuracy(mean.data(), yt, Pt);
    am_theory_destroy(&th);
    am_free(xi);
    am_free(y);
    am_free(xit);
    am_free(yt);
  }

  FILE *f = std::fopen((dir + "/attnmech_phases.json").c_str(), "w");
  if (!f) die(nullptr, "cannot write attnmech_phases.json");
  std::fprintf(f,
               "{\"seed\": %llu, \"width\": %.17g, \"reps\": %d, \"blas_threads_note\": \"context threads 1\",\n"
               " \"generate_s\": %.9g, \"xi_train_s\": %.9g, \"xi_test_s\": %.9g, \"solve_s\": %.9g, \"predict_s\": %.9g,\n"
               " \"cpu_xi_train_s\": %.9g, \"cpu_xi_test_s\": %.9g, \"cpu_solve_s\": %.9g, \"cpu_predict_s\": %.9g,\n"
               " \"iterations\": %u, \"grad_max\": %.17g, \"S_code\": %.17g, \"U_a\": %.17g, \"test_accuracy\": %.17g,\n"
               " \"heads_record_fortran_order\": %d, \"P\": %zu, \"P_test\": %zu, \"N0\": %zu}\n",
               (unsigned long long)seed, width, reps, t_generate, best_xi, best_xi_test, best_solve, best_predict, cpu_xi,
               cpu_xi_test, cpu_solve, cpu_predict, rep.iterations,
               rep.grad_max, rep.S_code, rep.U_a, acc, first_head_fortran, P, Pt, N0);
  std::fclose(f);
  std::printf("wrote %s: P=%zu P_test=%zu N0=%zu heads=%s (record heads fortran_order=%d); "
              "attnmech solve %.3f ms (%u it, S_code %.10f)\n",
              dir.c_str(), P, Pt, N0, json_number_list(heads).c_str(), first_head_fortran, best_solve * 1e3,
              rep.iterations, rep.S_code);

  am_record_destroy(&ds);
  am_record_destroy(&extras);
  am_context_destroy(&ctx);
  return 0;
}
