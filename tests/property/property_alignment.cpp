// Property: am_kernel_alignment on symmetric PSD kernels of every rank from 0 to P (ties at the cut, duplicated
// examples, extreme scales, padded leading dimensions), for every edge of k, against a full dsyevd.
#include <algorithm>
#include <cmath>

#include "property.hpp"
#include "reference.hpp"

using namespace prop;

namespace {

struct Kernel {
  size_t P = 0, r = 0;
  vec K;  // P × P, ld P
};

// A PSD kernel of rank ≤ r: X Xᵀ (X: P × r), or Q diag(λ) Qᵀ with tied eigenvalues, or duplicated examples.
Kernel draw_kernel(Gen &g) {
  Kernel k;
  const size_t cls = g.pick({6, 3, 1});
  k.P = cls == 0 ? g.integer(1, 12) : cls == 1 ? g.integer(13, 64) : g.integer(65, 200);
  k.r = g.pick({1, 5}) == 0 ? g.integer(0, std::min<size_t>(k.P, 2)) : g.integer(0, k.P);
  const size_t mode = g.pick({4, 2, 2});
  const double scale = g.chance(0.1) ? std::pow(10.0, g.unif() * 200 - 100) : 1.0;
  g.note("P=%zu rank<=%zu mode=%s scale=%g", k.P, k.r, mode == 0 ? "XXt" : mode == 1 ? "ties" : "duplicates", scale);
  const size_t P = k.P, r = k.r;
  vec X(P * std::max<size_t>(r, 1), 0.0);
  for (auto &x : X) x = g.normal();
  if (mode == 1) {  // exact ties: an orthonormal P × r basis (QR of the Gaussian block) with eigenvalues in {1, 2}
    vec tau(std::max<size_t>(r, 1));
    if (r > 0) LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)P, (lapack_int)r, X.data(), (lapack_int)P, tau.data());
    if (r > 0) LAPACKE_dorgqr(LAPACK_COL_MAJOR, (lapack_int)P, (lapack_int)r, (lapack_int)r, X.data(), (lapack_int)P, tau.data());
    for (size_t c = 0; c < r; ++c) {
      const double lam = (double)g.integer(1, 2);
      for (size_t i = 0; i < P; ++i) X[i + c * P] *= std::sqrt(lam);
    }
  } else if (mode == 2) {  // examples (rows) repeated
    for (size_t i = 1; i < P; ++i)
      if (g.chance(0.5)) {
        const size_t src = g.integer(0, i - 1);
        for (size_t c = 0; c < r; ++c) X[i + c * P] = X[src + c * P];
      }
  }
  k.K.assign(P * P, 0.0);
  if (r > 0)
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)P, (int)r, scale, X.data(), (int)P, 0.0, k.K.data(), (int)P);
  for (size_t j = 0; j < P; ++j)
    for (size_t i = 0; i < j; ++i) k.K[i + j * P] = k.K[j + i * P];
  return k;
}

// k at and around every edge: 0, 1, the rank, P − 1, P, P + 1, or anywhere.
size_t draw_k(Gen &g, size_t P, size_t r) {
  const size_t e[] = {0, 1, 2, r ? r - 1 : 0, r, r + 1, P ? P - 1 : 0, P, P + 1};
  return g.chance(0.6) ? e[g.integer(0, 8)] : g.integer(0, P + 1);
}

Outcome alignment_case(Gen &g) {
  Context c;
  Kernel kn = draw_kernel(g);
  const size_t P = kn.P, k = draw_k(g, P, kn.r);
  const size_t ldk = g.chance(0.2) ? P + g.integer(1, 3) : P;
  vec y(P);
  const size_t ym = g.pick({6, 1, 1});
  for (auto &v : y) v = ym == 0 ? g.normal() : ym == 1 ? 0.0 : 1.0;
  const bool nan = g.chance(0.02);
  g.note("k=%zu ldk=%zu y=%s nan=%d", k, ldk, ym == 0 ? "gaussian" : ym == 1 ? "zero" : "ones", (int)nan);
  // the padding rows hold NaN: the library must read only the P × P block
  vec Kp(ldk * P, NAN);
  for (size_t j = 0; j < P; ++j)
    for (size_t i = 0; i < P; ++i) Kp[i + j * ldk] = kn.K[i + j * P];
  if (nan && P > 0) Kp[g.integer(0, P - 1)] = NAN;
  vec ov(k + 1, -7.0), ev(k + 1, -7.0);
  const am_status st = am_kernel_alignment(c.ctx, Kp.data(), P, ldk, y.data(), k, ov.data(), ev.data());
  if (k > P || nan) {
    if (st == AM_OK && k > 0) return {format("k = %zu > P = %zu or a NaN entry accepted", k, P), ""};
    if (st == AM_OK) return {};
    return refusal(c.ctx, st, "am_kernel_alignment");
  }
  if (st != AM_OK) return {format("refused a valid kernel: %s: %s", am_status_string(st), am_context_last_error(c.ctx)), ""};
  if (ov[k] != -7.0 || ev[k] != -7.0) return {"wrote past the k outputs", ""};
  return {compare_alignment(kn.K, P, y, k, ov, ev), ""};
}

}  // namespace

TEST_CASE("property: kernel alignment on kernels of every rank, every edge of k, against dsyevd") {
  am_blas_threads_set(1);
  CHECK(run_cases("alignment", kCiAlignment, alignment_case) > 0);
}
