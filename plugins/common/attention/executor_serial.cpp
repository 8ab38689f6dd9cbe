// attnmech — the serial executor (executor.hpp): every piece of a run's P-sized work in this process, through
// libcore (am_theory_memory_check, am_theory_kernel, am_prekernel, am_theory_alignment). The kernels phase holds
// one P×P buffer, reused for each kernel in turn, unless the policy hands it the whole kernels' own storage, or
// none when no kernel is stored (the alignment alone comes from the kernel's factor).
#include <attnmech/paths.h>
#include <attnmech/theory.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "executor.hpp"

namespace am {
namespace attention {

namespace {

// Rows and columns `ex` of the P×P matrix K (column-major) into `block` (m×m, column-major); returns the smallest
// element of all of K (the heat map's scale is diverging when the kernel has a negative element).
double take_block(const double *K, size_t P, const std::vector<size_t> &ex, double *block) {
  const size_t m = ex.size();
  for (size_t b = 0; b < m; ++b)
    for (size_t a = 0; a < m; ++a) block[a + m * b] = K[ex[a] + P * ex[b]];
  double lo = INFINITY;
  for (size_t i = 0; i < P * P; ++i)
    if (K[i] < lo) lo = K[i];
  return lo;
}

class Serial final : public Executor {
 public:
  std::string share() const override { return ""; }

  am_status check_memory(am_context *ctx, const RunShape &s, const char *what) override {
    return am_theory_memory_check(ctx, s.arch, s.P, s.N0, s.Pt, s.k, s.whole_kernels ? 1 : 0, s.extra_doubles, what);
  }

  am_status attach(am_context *, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *,
                   bool main) override {
    if (!main) return AM_OK;  // a path subset's handle does its own work
    th_ = th;
    P_ = P;
    N0_ = N0;
    H_ = H;
    xi_ = xi;
    return AM_OK;
  }

  // The main handle's factor of Γ (kept for the predictions at the solution) and its solve's workspaces.
  void predictions_done() override {
    if (th_) am_theory_release(th_);
  }
  bool makes_kernels(bool) const override { return true; }

  am_status kernel(am_context *ctx, const double *U, const std::vector<size_t> &examples, size_t k,
                   KernelOut *out) override {
    // The kernel is built only when it is stored or its blocks are drawn; the alignment comes from its factor
    // (am_theory_alignment: O(P·N0·H²), not O(P³)), or from the kernel when that is the cheaper way.
    double *K = nullptr;
    if (out->whole || !examples.empty()) {
      K = out->whole ? out->whole : buffer();
      if (am_status st = am_theory_kernel(ctx, th_, U, K)) return st;
    }
    if (k > 0)
      if (am_status st = am_theory_alignment(ctx, th_, U, K, k, out->overlaps, out->eigenvalues)) return st;
    if (!examples.empty()) out->min = take_block(K, P_, examples, out->block);
    return AM_OK;
  }

  am_status prekernel(am_context *ctx, size_t p, const std::vector<size_t> &examples, KernelOut *out) override {
    double *K = out->whole ? out->whole : buffer();
    if (am_status st = am_prekernel(ctx, N0_, H_, P_, xi_, p, p, K, P_)) return st;
    if (!examples.empty()) out->min = take_block(K, P_, examples, out->block);
    return AM_OK;
  }

 private:
  double *buffer() {
    if (K_.empty()) K_.resize(P_ * P_);
    return K_.data();
  }

  am_theory *th_ = nullptr;
  size_t P_ = 0, N0_ = 0, H_ = 0;
  const double *xi_ = nullptr;
  std::vector<double> K_;  // the kernels phase's one P×P matrix
};

}  // namespace

std::unique_ptr<Executor> serial_executor() { return std::make_unique<Serial>(); }

}  // namespace attention
}  // namespace am
