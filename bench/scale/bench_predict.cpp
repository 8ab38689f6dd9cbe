// attnmech scale benchmark: the predictions phase after a solve, as the theory estimator runs it (estimate.cpp
// write_all_predictions): the predictor at the solution U on Pt test inputs, at the GP point, and the GP action.
// "kept": with the factor of Γ the handle keeps (the solve's at U, then the GP point's: one factorisation);
// "fresh": am_theory_release before each call, so each builds and factors Γ itself, as 3.8.0 did (three).
// Process CPU time, min and median over the repeats (alternating the two), each as a ratio to one P×P×P dgemm
// measured in the same run; the two ways' predictions and action compared bit for bit. The handle is put at U by
// am_theory_action (value only): the state a solve ending at U leaves (its last factor is U's).
// Run with OPENBLAS_NUM_THREADS=1 so CPU time is the work done (docs/scale.md).
// Usage: bench_predict [repeats (3)] [N0 (64)] [Pt (1000)] [P ...]   (P default 2000 4000)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "attnmech/attnmech.h"
#include "linalg.hpp"
#include "scale_util.hpp"
#include "theory.hpp"

namespace {

using scale_bench::cpu_seconds;
using scale_bench::gaussian;

double dgemm_seconds(size_t P) {
  const auto A = gaussian(P * P, 11, 1.0), B = gaussian(P * P, 12, 1.0);
  std::vector<double> C(P * P);
  const double t0 = cpu_seconds();
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)P, (int)P, (int)P, 1.0, A.data(), (int)P, B.data(),
              (int)P, 0.0, C.data(), (int)P);
  return cpu_seconds() - t0;
}

[[noreturn]] void fail(const char *what, size_t P) {
  std::fprintf(stderr, "bench_predict: %s failed at P = %zu\n", what, P);
  std::exit(1);
}

// One pass of the phase; out: both predictors' mean and variance and the GP action. Returns CPU seconds and the
// factorisations of Γ it made.
double phase(am_theory *th, const std::vector<double> &U, const std::vector<double> &Ugp, size_t Pt,
             const std::vector<double> &xt, bool kept, std::vector<double> *out, unsigned long long *factors) {
  out->assign(4 * Pt + 1, 0.0);
  am_action a{};
  a.struct_size = sizeof a;
  if (am_theory_action(nullptr, th, U.data(), nullptr, nullptr, nullptr) != AM_OK) fail("the action at U", th->P);
  const unsigned long long f0 = th->gamma_factorizations;
  const double t0 = cpu_seconds();
  double *o = out->data();
  for (int k = 0; k < 2; ++k) {
    if (!kept) am_theory_release(th);
    if (am_theory_predict(nullptr, th, (k ? Ugp : U).data(), Pt, xt.data(), o + 2 * k * Pt, o + (2 * k + 1) * Pt))
      fail("am_theory_predict", th->P);
  }
  if (!kept) am_theory_release(th);
  if (am_theory_action(nullptr, th, Ugp.data(), &a, nullptr, nullptr) != AM_OK) fail("the GP action", th->P);
  const double t = cpu_seconds() - t0;
  (*out)[4 * Pt] = a.S_code;
  *factors = th->gamma_factorizations - f0;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Whether the two ways gave the same bits (false: exit 1).
bool run(size_t P, size_t N0, size_t Pt, int reps) {
  am_arch arch;
  am_arch_default(&arch);
  arch.layers = 2;
  arch.heads[0] = arch.heads[1] = 4;
  for (int l = 0; l < 3; ++l) arch.widths[l] = (double)P / 2;
  const size_t H = 16;
  const auto xi = gaussian(P * N0 * H, 7, 1.0 / std::sqrt((double)(N0 * H)));
  const auto xt = gaussian(Pt * N0 * H, 9, 1.0 / std::sqrt((double)(N0 * H)));
  const auto y = scale_bench::teacher_labels(xi, P, N0);
  am_theory *th = nullptr;
  if (am_theory_create(nullptr, &th, &arch, P, N0, xi.data(), y.data(), 0.05) != AM_OK) fail("am_theory_create", P);
  std::vector<double> Ugp(am_theory_u_size(th)), U;
  am_theory_gp_point(th, Ugp.data());
  U = Ugp;  // a point off the GP one, as a solution is: U_1 scaled up, U_2 down
  for (size_t i = 0; i < U.size(); ++i) U[i] *= i < am_theory_u_offset(th, 2) ? 1.3 : 0.8;
  std::vector<double> t_kept, t_fresh, o_kept, o_fresh;
  unsigned long long f_kept = 0, f_fresh = 0;
  for (int r = 0; r < reps; ++r) {
    t_fresh.push_back(phase(th, U, Ugp, Pt, xt, false, &o_fresh, &f_fresh));
    t_kept.push_back(phase(th, U, Ugp, Pt, xt, true, &o_kept, &f_kept));
  }
  const bool same = std::memcmp(o_kept.data(), o_fresh.data(), o_kept.size() * sizeof(double)) == 0;
  am_theory_destroy(&th);
  const double g = dgemm_seconds(P);
  const double fmin = *std::min_element(t_fresh.begin(), t_fresh.end()), fmed = median(t_fresh);
  const double kmin = *std::min_element(t_kept.begin(), t_kept.end()), kmed = median(t_kept);
  std::printf("%6zu %5zu %7llu %6llu %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f %8.3f %8.3f %5s\n", P, Pt, f_fresh, f_kept,
              fmin, fmed, kmin, kmed, g, fmed / g, kmed / g, (fmed - kmed) / g, same ? "yes" : "NO");
  std::fflush(stdout);
  return same;
}

}  // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const size_t N0 = argc > 2 ? (size_t)std::atol(argv[2]) : 64;
  const size_t Pt = argc > 3 ? (size_t)std::max(1L, std::atol(argv[3])) : 1000;
  std::vector<size_t> Ps;
  for (int a = 4; a < argc; ++a) Ps.push_back((size_t)std::atol(argv[a]));
  if (Ps.empty()) Ps = {2000, 4000};
  const char *threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("predictions phase (predict at U and at the GP point on Pt inputs, the GP action): fresh factors vs "
              "the kept one; N0 = %zu, H = (4, 4); %d repeats; OPENBLAS_NUM_THREADS=%s\n",
              N0, reps, threads ? threads : "unset (CPU time then counts every thread)");
  std::printf("%6s %5s %7s %6s %9s %9s %9s %9s %8s %8s %8s %8s %5s\n", "P", "Pt", "f_fresh", "f_kept", "fresh_min",
              "fresh_med", "kept_min", "kept_med", "dgemm_s", "fresh/g", "kept/g", "saved/g", "bits");
  bool same = true;
  for (size_t P : Ps) same = run(P, N0, Pt, reps) && same;
  return same ? 0 : 1;
}
