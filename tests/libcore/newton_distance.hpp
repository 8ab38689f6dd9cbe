// How far a stopped Newton solve may be from the action's minimum: the tolerance of any comparison of a solve's
// result with a value at the minimum (the spec's, another path's solve), derived from what the solver promises
// rather than from where one float path happened to stop. The solver works in vech coordinates v; at a point U
// with vech gradient g and Hessian H (am_theory_action), the Newton step δ = H⁻¹g bounds the distance by
// Newton–Kantorovich: |v − v*|₂ ≤ 2|δ|₂ once ‖H⁻¹‖·L·|δ| ≤ ½ (L: a Lipschitz constant of H near v*), which holds
// with orders of magnitude to spare for stopped solves (|δ| ≲ 1e-6, ‖H⁻¹‖ ≲ 100, L = O(1)–O(100) on the tests'
// problems). Unlike grad_tol·max(1, |S|), it holds for every way a solve stops (converged_roundoff too).
#pragma once
#include <cmath>
#include <vector>

#include "attnmech/attnmech.h"
#include "linalg.hpp"
#include "theory.hpp"

namespace newton_test {

// The Newton step δ = H⁻¹g at U (vech coordinates); empty when the Hessian there is not positive definite.
inline std::vector<double> newton_step(am_theory *th, const double *U) {
  const size_t nu = th->usize, n = th->vsize;
  std::vector<double> G(nu), H(n * n), g(n);
  am_action a{sizeof a};
  if (am_theory_action(nullptr, th, U, &a, G.data(), H.data()) != AM_OK) return {};
  size_t k = 0;
  for (uint32_t l = 1; l <= th->L; ++l) {
    const size_t d = th->D[l];
    const double *Gl = G.data() + th->uoff[l];
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) g[k] = (i == j ? 1.0 : 2.0) * Gl[i + j * d];
  }
  if (!am::la::chol(H.data(), n, n)) return {};
  am::la::chol_solve(H.data(), n, n, g.data(), 1, n);
  return g;
}

// 2|δ|₂: the bound on |v − v*|₂ (so on every entry of every U_l) at U; infinite when H is not positive definite.
inline double distance(am_theory *th, const double *U) {
  const std::vector<double> d = newton_step(th, U);
  if (d.empty()) return INFINITY;
  double s = 0;
  for (double x : d) s += x * x;
  return 2.0 * std::sqrt(s);
}

// U moved by one Newton step, U − δ: within O(|δ|²) of the minimum (quadratic convergence; |δ|² ≲ 1e-20 for a
// stopped solve), so values there are the minimum's to round-off, wherever the solve stopped.
inline std::vector<double> polished(am_theory *th, const double *U) {
  std::vector<double> v(th->vsize), out(th->usize);
  am::theory_u_to_vech(*th, U, v.data());
  const std::vector<double> d = newton_step(th, U);
  for (size_t k = 0; k < v.size() && k < d.size(); ++k) v[k] -= d[k];
  am::theory_vech_to_u(*th, v.data(), out.data());
  return out;
}

}  // namespace newton_test
