// attnmech posterior — the templated small SPD kernels of simd/spd_kernels.h; included by exactly one TU per ISA
// (internal linkage).
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "simd/spd_kernels.h"
#include "spd.h"

namespace {

using std::size_t;
constexpr size_t kPanel = 8;  // panel width of the factor and the triangular inverse (spd_padded's multiple)
constexpr size_t kCols = 4;   // columns of a register tile

template <class Arch>
struct Spd {
  using B = xsimd::batch<double, Arch>;
  static constexpr size_t W = B::size;
  static_assert(kPanel % W == 0, "panels hold whole vectors");
  static_assert(2 * W <= 16, "row tiles lie within the 16-row blocks inverse() zeroes below Y's diagonal");

  // One register tile: C(0 : MB·W, 0 : NR) ← (acc ? C : 0) ∓ Σ_{k < kk} A(:, k) B(k, :) (− when Neg), with B(k, j)
  // at Bm[k·bk + j·bj]. With mask, only the entries (r, c) with r + d ≥ c are stored (C's lower triangle when the
  // tile's first row lies d rows below its first column's diagonal).
  template <bool Neg, size_t MB, size_t NR>
  static void tile(size_t kk, const double *A, size_t lda, const double *Bm, size_t bk, size_t bj, double *C,
                   size_t ldc, bool acc, bool mask, long d) {
    B c[MB][NR];
    for (size_t j = 0; j < NR; ++j)
      for (size_t i = 0; i < MB; ++i) c[i][j] = acc ? B::load_unaligned(C + i * W + j * ldc) : B(0.0);
    for (size_t k = 0; k < kk; ++k) {
      B a[MB];
      for (size_t i = 0; i < MB; ++i) a[i] = B::load_unaligned(A + i * W + k * lda);
      for (size_t j = 0; j < NR; ++j) {
        const B b(Bm[k * bk + j * bj]);
        for (size_t i = 0; i < MB; ++i) c[i][j] = Neg ? xsimd::fnma(a[i], b, c[i][j]) : xsimd::fma(a[i], b, c[i][j]);
      }
    }
    if (!mask) {
      for (size_t j = 0; j < NR; ++j)
        for (size_t i = 0; i < MB; ++i) c[i][j].store_unaligned(C + i * W + j * ldc);
      return;
    }
    alignas(64) double t[MB * W];
    for (size_t j = 0; j < NR; ++j) {
      for (size_t i = 0; i < MB; ++i) c[i][j].store_aligned(t + i * W);
      for (size_t r = 0; r < MB * W; ++r)
        if (static_cast<long>(r) + d >= static_cast<long>(j)) C[r + j * ldc] = t[r];
    }
  }

  template <bool Neg, size_t MB>
  static void tile_cols(size_t nr, size_t kk, const double *A, size_t lda, const double *Bm, size_t bk, size_t bj,
                        double *C, size_t ldc, bool acc, bool mask, long d) {
    switch (nr) {
      case 1: tile<Neg, MB, 1>(kk, A, lda, Bm, bk, bj, C, ldc, acc, mask, d); break;
      case 2: tile<Neg, MB, 2>(kk, A, lda, Bm, bk, bj, C, ldc, acc, mask, d); break;
      case 3: tile<Neg, MB, 3>(kk, A, lda, Bm, bk, bj, C, ldc, acc, mask, d); break;
      default: tile<Neg, MB, 4>(kk, A, lda, Bm, bk, bj, C, ldc, acc, mask, d); break;
    }
  }

  // C(0:m, 0:nc) ← (acc ? C : 0) ∓ A(0:m, 0:kmax) B(0:kmax, 0:nc) (− when Neg), m a multiple of W, C apart from A
  // and B. shape: A lower triangular (a tile of rows rs.. stops at k = rs + its height) or upper triangular (it
  // starts at k = rs), the other triangle zero. lower: C's entries above its diagonal are left alone (tiles wholly
  // above it skipped; C's column c meets the diagonal at its row c + diag).
  enum Shape { kFull, kLowerA, kUpperA };
  template <bool Neg>
  static void product(Shape shape, size_t m, size_t nc, size_t kmax, const double *A, size_t lda, const double *Bm,
                      size_t bk, size_t bj, double *C, size_t ldc, bool acc, bool lower, size_t diag = 0) {
    for (size_t rs = 0; rs < m;) {
      const size_t mb = m - rs >= 2 * W ? 2 : 1, h = mb * W;
      const size_t k0 = shape == kUpperA ? std::min(rs, kmax) : 0;
      const size_t kk = (shape == kLowerA ? std::min(rs + h, kmax) : kmax) - k0;
      const double *Ak = A + rs + k0 * lda, *Bk = Bm + k0 * bk;
      for (size_t cs = 0; cs < nc && !(lower && cs + diag >= rs + h); cs += kCols) {
        const size_t nr = std::min(kCols, nc - cs);
        const bool mask = lower && rs + 1 < cs + nr + diag;
        const long d = static_cast<long>(rs) - static_cast<long>(cs + diag);
        if (mb == 2)
          tile_cols<Neg, 2>(nr, kk, Ak, lda, Bk + cs * bj, bk, bj, C + rs + cs * ldc, ldc, acc, mask, d);
        else
          tile_cols<Neg, 1>(nr, kk, Ak, lda, Bk + cs * bj, bk, bj, C + rs + cs * ldc, ldc, acc, mask, d);
      }
      rs += h;
    }
  }

  // y(0:m) ← y − f·x (from row `from`, scalar up to the panel's end, whole vectors after it; m a multiple of 8).
  static void axpy_from(size_t from, size_t m, double f, const double *x, double *y) {
    for (size_t r = from; r < kPanel; ++r) y[r] -= x[r] * f;
    const B bf(f);
    for (size_t r = std::max(from, kPanel); r < m; r += W)
      xsimd::fnma(B::load_unaligned(x + r), bf, B::load_unaligned(y + r)).store_unaligned(y + r);
  }

  // Columns c0..c1 of a panel (from its row 0, m rows) factored one by one, each updating the next ones of these;
  // returns the 1-based column of a pivot that is not positive and finite, or 0.
  static size_t panel_columns(size_t c0, size_t c1, size_t m, double *Pn, size_t lda) {
    for (size_t c = c0; c < c1; ++c) {
      double *col = Pn + c * lda;
      const double piv = col[c];
      if (!(piv > 0) || !std::isfinite(piv)) return c + 1;
      const double l = std::sqrt(piv), inv = 1.0 / l;
      col[c] = l;
      for (size_t r = c + 1; r < kPanel; ++r) col[r] *= inv;
      const B binv(inv);
      for (size_t r = kPanel; r < m; r += W) (B::load_unaligned(col + r) * binv).store_unaligned(col + r);
      for (size_t c2 = c + 1; c2 < c1; ++c2) axpy_from(c2, m, col[c2], col, Pn + c2 * lda);
    }
    return 0;
  }

  static int cholesky(size_t n, double *A, size_t lda) {
    const size_t np = am::posterior::simd::spd_padded(n), half = kPanel / 2;
    for (size_t j0 = 0; j0 < n; j0 += kPanel) {
      const size_t nb = std::min(kPanel, n - j0), m = np - j0, h1 = std::min(half, nb);
      double *Pn = A + j0 + j0 * lda;  // the panel's columns from row j0 (m rows, m ≥ 8)
      // the panel minus the contributions of the factored columns: P −= L(j0:, 0:j0) L(J, 0:j0)ᵀ
      if (j0) product<true>(kFull, m, nb, j0, A + j0, lda, A + j0, lda, 1, Pn, lda, true, true);
      // its first half column by column, the second half minus the first's contributions (a tile product), then
      // the second half column by column
      size_t bad = panel_columns(0, h1, m, Pn, lda);
      if (!bad && nb > half) {
        product<true>(kFull, m, nb - half, half, Pn, lda, Pn + half, lda, 1, Pn + half * lda, lda, true, true, half);
        bad = panel_columns(half, nb, m, Pn, lda);
      }
      if (bad) return static_cast<int>(j0 + bad);
    }
    return 0;
  }

  // out(r, c) = −Σ_{c2 ≤ c} P(r, c2) Z(c, c2) for r < m (a multiple of W), c < NB: P times the upper triangle Zᵀ,
  // a row block of P in registers at a time.
  template <size_t NB>
  static void times_upper(size_t m, const double *Pm, size_t ldp, const double *Z, double *out, size_t ldo) {
    for (size_t r = 0; r < m; r += W) {
      B p[NB];
      for (size_t c = 0; c < NB; ++c) p[c] = B::load_unaligned(Pm + r + c * ldp);
      for (size_t c = 0; c < NB; ++c) {
        B s = p[0] * B(Z[c]);
        for (size_t c2 = 1; c2 <= c; ++c2) s = xsimd::fma(p[c2], B(Z[c + c2 * kPanel]), s);
        (-s).store_unaligned(out + r + c * ldo);
      }
    }
  }

  // Y = L⁻ᵀ (upper triangular; ld np) by panels from the left: with U = Lᵀ, Y_JJ = U_JJ⁻¹ = (L_JJ⁻¹)ᵀ and
  // Y(0:j0, J) = −(Y_AA U(0:j0, J)) Y_JJ, where U(0:j0, J) = L(J, 0:j0)ᵀ is read from L's rows. T: the bracket.
  static void transposed_inverse(size_t n, const double *L, size_t lda, double *Y, size_t np, double *T) {
    double z[kPanel * kPanel];
    for (size_t j0 = 0; j0 < n; j0 += kPanel) {
      const size_t nb = std::min(kPanel, n - j0);
      for (size_t c = 0; c < nb; ++c)
        for (size_t r = c; r < nb; ++r) z[r + c * kPanel] = L[(j0 + r) + (j0 + c) * lda];
      am::posterior::lower_triangular_inverse(nb, z, kPanel);  // Z = L_JJ⁻¹ (spd.h: plain loops at this size)
      for (size_t c = 0; c < nb; ++c)
        for (size_t r = 0; r <= c; ++r) Y[(j0 + r) + (j0 + c) * np] = z[c + r * kPanel];
      if (!j0) continue;
      product<false>(kUpperA, j0, nb, j0, Y, np, L + j0, lda, 1, T, j0, false, false);
      switch (nb) {
        case 1: times_upper<1>(j0, T, j0, z, Y + j0 * np, np); break;
        case 2: times_upper<2>(j0, T, j0, z, Y + j0 * np, np); break;
        case 3: times_upper<3>(j0, T, j0, z, Y + j0 * np, np); break;
        case 4: times_upper<4>(j0, T, j0, z, Y + j0 * np, np); break;
        case 5: times_upper<5>(j0, T, j0, z, Y + j0 * np, np); break;
        case 6: times_upper<6>(j0, T, j0, z, Y + j0 * np, np); break;
        case 7: times_upper<7>(j0, T, j0, z, Y + j0 * np, np); break;
        default: times_upper<8>(j0, T, j0, z, Y + j0 * np, np); break;
      }
    }
  }

  // (L Lᵀ)⁻¹ = Y Yᵀ with Y = L⁻ᵀ: its lower triangle into A (rows to np: the padding rows get Y's zeros).
  static void inverse(size_t n, double *A, size_t lda, double *work) {
    if (n == 0) return;
    const size_t np = am::posterior::simd::spd_padded(n);
    double *Y = work, *T = work + np * n;
    // The tiles read Y's strict lower triangle within their rows (blocks of at most 16 from row 0) and its padding
    // rows as zeros: those are set here, so the work space may hold anything.
    for (size_t k = 0; k < n; ++k) {
      double *y = Y + k * np;
      std::fill(y + k + 1, y + std::min(np, (k / 16 + 1) * 16), 0.0);
      std::fill(y + n, y + np, 0.0);
    }
    transposed_inverse(n, A, lda, Y, np, T);
    product<false>(kUpperA, np, n, n, Y, np, Y, np, 1, A, lda, false, true);
  }

  // Pairs are taken kMaxPairs at a time (their weights or sums in registers).
  static constexpr size_t kMaxPairs = 10;

  static void combine(size_t n, size_t pairs, const double *S, const double *u, double diag, double *K, size_t ld) {
    const size_t np = n * (n + 1) / 2;
    for (size_t k0 = 0; k0 < pairs; k0 += kMaxPairs) {
      const size_t kn = std::min(kMaxPairs, pairs - k0);
      const double *Sk = S + k0 * np;
      B bu[kMaxPairs];
      for (size_t k = 0; k < kn; ++k) bu[k] = B(u[k0 + k]);
      for (size_t j = 0, p = 0; j < n; p += n - j, ++j) {
        double *col = K + j * (ld + 1);
        const size_t len = n - j, vend = len - len % W;
        for (size_t i = 0; i < vend; i += W) {
          B s = k0 ? B::load_unaligned(col + i) : B(0.0);
          for (size_t k = 0; k < kn; ++k) s = xsimd::fma(bu[k], B::load_unaligned(Sk + k * np + p + i), s);
          s.store_unaligned(col + i);
        }
        for (size_t i = vend; i < len; ++i) {
          double s = k0 ? col[i] : 0.0;
          for (size_t k = 0; k < kn; ++k) s = std::fma(u[k0 + k], Sk[k * np + p + i], s);
          col[i] = s;
        }
        if (k0 + kn == pairs) col[0] += diag;
      }
    }
  }

  static void traces(size_t n, size_t pairs, const double *S, const double *a, const double *M, size_t ld,
                     double *g) {
    const size_t np = n * (n + 1) / 2;
    for (size_t k0 = 0; k0 < pairs; k0 += kMaxPairs) {
      const size_t kn = std::min(kMaxPairs, pairs - k0);
      const double *Sk = S + k0 * np;
      B acc[kMaxPairs];
      double tail[kMaxPairs] = {};
      for (size_t k = 0; k < kn; ++k) acc[k] = B(0.0);
      for (size_t j = 0, p = 0; j < n; p += n - j, ++j) {
        const double *m = M + j * (ld + 1), *aj = a + j;
        const double q0 = 0.5 * (aj[0] * aj[0] - m[0]);  // the diagonal entry, halved
        for (size_t k = 0; k < kn; ++k) tail[k] = std::fma(q0, Sk[k * np + p], tail[k]);
        const size_t len = n - j, vend = 1 + (len - 1) - (len - 1) % W;
        const B ba(aj[0]);
        for (size_t i = 1; i < vend; i += W) {
          const B q = xsimd::fms(B::load_unaligned(aj + i), ba, B::load_unaligned(m + i));
          for (size_t k = 0; k < kn; ++k) acc[k] = xsimd::fma(q, B::load_unaligned(Sk + k * np + p + i), acc[k]);
        }
        for (size_t i = vend; i < len; ++i) {
          const double q = aj[i] * aj[0] - m[i];
          for (size_t k = 0; k < kn; ++k) tail[k] = std::fma(q, Sk[k * np + p + i], tail[k]);
        }
      }
      for (size_t k = 0; k < kn; ++k) g[k0 + k] = xsimd::hadd(acc[k]) + tail[k];
    }
  }

};

}  // namespace

namespace am::posterior::simd {

template <class Arch>
const SpdKernels &make_spd_kernels(const char *name) {
  static const SpdKernels k{name, &Spd<Arch>::cholesky, &Spd<Arch>::inverse, &Spd<Arch>::combine,
                            &Spd<Arch>::traces};
  return k;
}

}  // namespace am::posterior::simd
