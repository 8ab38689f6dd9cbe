// tests/property — independent reference computations: plain loops and whole LAPACK drivers (dsyevd for the full
// spectrum, dposv for the kernel system), none of the library's code paths.
#pragma once
#include "property.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <string>
#include <cmath>
#include <vector>

namespace prop {

using vec = std::vector<double>;

// K(1,2)[μ,ν] = Σ_i Σ_{π,π'} ξ1[μ,i,π] U[π,π'] ξ2[ν,i,π'] by loops (ξ: P × N0 × H, P fastest; K: P1 × P2).
inline vec kernel_loops(const vec &xi1, size_t P1, const vec &xi2, size_t P2, size_t N0, size_t H, const double *U) {
  vec K(P1 * P2, 0.0), z(H);
  for (size_t mu = 0; mu < P1; ++mu)
    for (size_t i = 0; i < N0; ++i) {
      for (size_t b = 0; b < H; ++b) {  // z = ξ1[μ,i,:] U
        double s = 0;
        for (size_t a = 0; a < H; ++a) s += xi1[mu + P1 * (i + N0 * a)] * U[a + b * H];
        z[b] = s;
      }
      for (size_t nu = 0; nu < P2; ++nu) {
        double s = 0;
        for (size_t b = 0; b < H; ++b) s += z[b] * xi2[nu + P2 * (i + N0 * b)];
        K[mu + nu * P1] += s;
      }
    }
  return K;
}

// Entrywise bound on the magnitudes a kernel entry sums: Σ_i (Σ_a |ξ1_μia| √U_aa)(Σ_b |ξ2_νib| √U_bb) dominates
// Σ |ξ1||U||ξ2| and the Cholesky route's |ξ1 L||ξ2 L|, so a few (N0·H + H)·ε of it bound the rounding of either.
inline vec kernel_bound(const vec &xi1, size_t P1, const vec &xi2, size_t P2, size_t N0, size_t H, const double *U) {
  vec a1(P1 * N0, 0.0), a2(P2 * N0, 0.0), B(P1 * P2, 0.0);
  for (size_t i = 0; i < N0; ++i)
    for (size_t p = 0; p < H; ++p) {
      const double s = std::sqrt(std::fabs(U[p + p * H]));
      for (size_t mu = 0; mu < P1; ++mu) a1[mu + P1 * i] += std::fabs(xi1[mu + P1 * (i + N0 * p)]) * s;
      for (size_t nu = 0; nu < P2; ++nu) a2[nu + P2 * i] += std::fabs(xi2[nu + P2 * (i + N0 * p)]) * s;
    }
  for (size_t nu = 0; nu < P2; ++nu)
    for (size_t mu = 0; mu < P1; ++mu)
      for (size_t i = 0; i < N0; ++i) B[mu + nu * P1] += a1[mu + P1 * i] * a2[nu + P2 * i];
  return B;
}

// Full spectrum of a symmetric matrix by dsyevd (ascending); vectors into V when given.
inline bool eigh(const vec &A, size_t n, vec *w, vec *V = nullptr) {
  vec B = A;
  w->assign(n, 0.0);
  if (n == 0) return true;
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, V ? 'V' : 'N', 'L', (lapack_int)n, B.data(), (lapack_int)n, w->data()) == 0 &&
         (!V || (*V = B, true));
}

// Solves A X = B (A symmetric positive definite, n × n; B n × nrhs) by dposv; false if A is not PD numerically.
inline bool posv(vec A, size_t n, vec *B, size_t nrhs) {
  return LAPACKE_dposv(LAPACK_COL_MAJOR, 'L', (lapack_int)n, (lapack_int)nrhs, A.data(), (lapack_int)n, B->data(),
                       (lapack_int)n) == 0;
}

inline bool positive_definite(const double *U, size_t d) {
  vec A(U, U + d * d);
  return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)d, A.data(), (lapack_int)d) == 0;
}

// The library's top-k against dsyevd: eigenvalues, and Σ overlap² over every cluster of (numerically) equal
// eigenvalues that lies wholly inside the top k — the one quantity a basis choice inside a cluster leaves fixed.
inline std::string compare_alignment(const vec &K, size_t P, const vec &y, size_t k, const vec &ov, const vec &ev) {
  vec w, V;
  if (!eigh(K, P, &w, &V)) return "reference dsyevd failed";
  const double top = std::max(std::fabs(w.front()), std::fabs(w.back()));
  // dsyevr and dsyevd are both backward stable: each eigenvalue within a few P·ε·‖K‖ of the other's.
  const double etol = 64.0 * (double)P * 2.2e-16 * top + 1e-300;
  double ny2 = 0;
  for (double v : y) ny2 += v * v;
  double sum2 = 0;
  for (size_t i = 0; i < k; ++i) {
    if (!std::isfinite(ov[i]) || !std::isfinite(ev[i])) return format("non-finite result at %zu", i);
    if (std::fabs(ev[i] - w[P - 1 - i]) > etol)
      return format("eigenvalue %zu: %.17g, dsyevd %.17g (tolerance %.3g)", i, ev[i], w[P - 1 - i], etol);
    if (ov[i] < 0 || ov[i] > 1 + 1e-12) return format("overlap %zu = %.17g outside [0, 1]", i, ov[i]);
    sum2 += ov[i] * ov[i];
  }
  if (sum2 > 1 + 1e-10) return format("Σ overlap² = %.17g > 1", sum2);
  if (ny2 == 0) return sum2 == 0 ? "" : "y = 0 but overlaps are not 0";
  // Clusters by descending index; a gap above 1e-7·‖K‖ separates them, so the subspaces of both solvers agree to
  // ~ε‖K‖/gap ≈ 1e-9·P and Σ overlap² over a cluster to twice that: 1e-5 leaves room.
  const double gap = 1e-7 * top;
  for (size_t a = 0; a < k;) {
    size_t b = a + 1;
    while (b < P && w[P - 1 - (b - 1)] - w[P - 1 - b] <= gap) ++b;
    if (b > k) break;  // straddles the cut: its share inside the top k depends on the basis
    double lib = 0, ref = 0;
    for (size_t i = a; i < b; ++i) {
      lib += ov[i] * ov[i];
      const double d = cblas_ddot((int)P, V.data() + (P - 1 - i) * P, 1, y.data(), 1);
      ref += d * d / ny2;
    }
    if (std::fabs(lib - ref) > 1e-5) return format("Σ overlap² over eigenvalues %zu..%zu: %.12g, dsyevd %.12g", a, b - 1, lib, ref);
    a = b;
  }
  return "";
}

}  // namespace prop
