// How far a stopped Newton solve may be from the action's minimum: the tolerance of any comparison of a solve's
// result with a value at the minimum (the spec's, another path's solve), derived from what the solver promises
// rather than from where one float path happened to stop. The solver works in vech coordinates v; at a point U
// with vech gradient g and Hessian H (am_theory_action), the Newton step δ = H⁻¹g bounds the distance by
// Newton–Kantorovich: |v − v*|₂ ≤ 2|δ|₂ once ‖H⁻¹‖·L·|δ| ≤ ½ (L: a Lipschitz constant of H near v*), which holds
// with orders of magnitude to spare for stopped solves (|δ| ≲ 1e-6, ‖H⁻¹‖ ≲ 100, L = O(1)–O(100) on the tests'
// problems). Unlike grad_tol·max(1, |S|), it holds for every way a solve stops (converged_roundoff too).
// Public API only (any test may include it); the n × n system (n = Σ D_l(D_l+1)/2, small) by a plain Cholesky.
#pragma once
#include <cmath>
#include <vector>

#include "attnmech/attnmech.h"

namespace newton_test {

// The Newton step δ = H⁻¹g at U (vech coordinates, layer by layer, j-major: v = U_l[i, j], i ≤ j); empty when
// the action cannot be evaluated there or its Hessian is not positive definite.
inline std::vector<double> newton_step(am_theory *th, const am_arch &arch, const double *U) {
  const size_t nu = am_theory_u_size(th), n = am_theory_vech_size(th);
  std::vector<double> G(nu), H(n * n), g(n);
  am_action a{sizeof a};
  if (am_theory_action(nullptr, th, U, &a, G.data(), H.data()) != AM_OK) return {};
  size_t k = 0;
  for (uint32_t l = 1; l <= arch.layers; ++l) {
    const size_t d = am_arch_dim(&arch, l);
    const double *Gl = G.data() + am_theory_u_offset(th, l);
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) g[k] = (i == j ? 1.0 : 2.0) * Gl[i + j * d];
  }
  for (size_t j = 0; j < n; ++j) {  // H = L Lᵀ in the lower triangle
    for (size_t p = 0; p < j; ++p) H[j + j * n] -= H[j + p * n] * H[j + p * n];
    if (!(H[j + j * n] > 0)) return {};
    H[j + j * n] = std::sqrt(H[j + j * n]);
    for (size_t i = j + 1; i < n; ++i) {
      for (size_t p = 0; p < j; ++p) H[i + j * n] -= H[i + p * n] * H[j + p * n];
      H[i + j * n] /= H[j + j * n];
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L z = g, then Lᵀ δ = z
    for (size_t p = 0; p < i; ++p) g[i] -= H[i + p * n] * g[p];
    g[i] /= H[i + i * n];
  }
  for (size_t i = n; i-- > 0;) {
    for (size_t p = i + 1; p < n; ++p) g[i] -= H[p + i * n] * g[p];
    g[i] /= H[i + i * n];
  }
  return g;
}

// 2|δ|₂: the bound on |v − v*|₂ (so on every entry of every U_l) at U; infinite where δ is not defined.
inline double distance(am_theory *th, const am_arch &arch, const double *U) {
  const std::vector<double> d = newton_step(th, arch, U);
  if (d.empty()) return INFINITY;
  double s = 0;
  for (double x : d) s += x * x;
  return 2.0 * std::sqrt(s);
}

// U moved by one Newton step, U − δ: within O(|δ|²) of the minimum (quadratic convergence; |δ|² ≲ 1e-20 for a
// stopped solve), so values there are the minimum's to round-off, wherever the solve stopped. U itself where δ
// is not defined.
inline std::vector<double> polished(am_theory *th, const am_arch &arch, const double *U) {
  std::vector<double> out(U, U + am_theory_u_size(th));
  const std::vector<double> d = newton_step(th, arch, U);
  size_t k = 0;
  for (uint32_t l = 1; l <= arch.layers && !d.empty(); ++l) {
    const size_t dim = am_arch_dim(&arch, l);
    double *Ul = out.data() + am_theory_u_offset(th, l);
    for (size_t j = 0; j < dim; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) Ul[i + j * dim] = Ul[j + i * dim] = Ul[i + j * dim] - d[k];
  }
  return out;
}

// |∇_v f|₂ at U: f a function of a U set (const double *) to a number, by central differences with step h over the
// vech coordinates (an off-diagonal coordinate moves U_l[i, j] and U_l[j, i] together). Their error, O(h²·f‴)
// + O(ε|f|/h) ≈ 1e-10 relative, is covered by the factor 2 of drift().
template <class F>
double sensitivity(am_theory *th, const am_arch &arch, const double *U, F f, double h = 1e-6) {
  std::vector<double> V(U, U + am_theory_u_size(th));
  double sq = 0;
  for (uint32_t l = 1; l <= arch.layers; ++l) {
    const size_t d = am_arch_dim(&arch, l), off = am_theory_u_offset(th, l);
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i) {
        const double keep = V[off + i + j * d];
        V[off + i + j * d] = V[off + j + i * d] = keep + h;
        const double up = f(V.data());
        V[off + i + j * d] = V[off + j + i * d] = keep - h;
        const double down = f(V.data());
        V[off + i + j * d] = V[off + j + i * d] = keep;
        sq += std::pow((up - down) / (2 * h), 2);
      }
  }
  return std::sqrt(sq);
}

// How far f may move when U moves by `dist` (|Δv|₂): |∇f|·dist to first order, doubled for the finite
// differences' error and the second-order term (O(dist²) ≲ 1e-12 here).
template <class F>
double drift(am_theory *th, const am_arch &arch, const double *U, F f, double dist) {
  return 2 * sensitivity(th, arch, U, f) * dist;
}

// A run record's own bound on its solve's distance to the minimum: |v − v*|₂ ≤ |g|₂/μ with μ ≥ λ_min(H)/2 on the
// segment to v* (H moves by O(|v − v*|), far less than λ_min/2), from its solver report.
inline double report_distance(const am_record *run) {
  const am_record *sv = am_record_get(run, "solver");
  return 2 * am_record_number(am_record_get(sv, "grad_vech_norm")) /
         am_record_number(am_record_get(sv, "hessian_min_eig"));
}

// The U set of a run record's "U" list (U_1, ..., U_L), in theory th's layout.
inline std::vector<double> record_u(am_theory *th, const am_arch &arch, const am_record *run) {
  std::vector<double> U(am_theory_u_size(th));
  const am_record *list = am_record_get(run, "U");
  for (uint32_t l = 1; l <= arch.layers && list; ++l) {
    am_array_view v;
    const size_t d = am_arch_dim(&arch, l);
    if (am_record_array(am_record_at(list, l - 1), &v) == AM_OK)
      am_array_to_f64_c(nullptr, &v, U.data() + am_theory_u_offset(th, l), d * d);  // symmetric: either order
  }
  return U;
}

}  // namespace newton_test
