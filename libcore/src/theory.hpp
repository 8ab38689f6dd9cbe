// attnmech — internal view of the theory handle (shared by theory.cpp, estimate.cpp and tests).
#pragma once
#include <vector>

#include "attnmech/theory.h"

struct am_theory {
  am_arch arch;
  size_t P = 0, N0 = 0, H = 0;  // H = H_tot
  std::vector<double> xi, y;
  double T = 0;
  uint32_t L = 0;
  size_t D[AM_MAX_LAYERS + 2] = {};     // D[l], l = 1..L+1 (D[L+1] = 1)
  size_t uoff[AM_MAX_LAYERS + 2] = {};  // offset of U_l in a U set
  size_t voff[AM_MAX_LAYERS + 2] = {};  // offset of U_l's coordinates in vech
  size_t usize = 0, vsize = 0;
  double Wmax = 0;
  // Workspaces of the Hessian, kept between calls: at N0·H_tot = 3072 they are ~75 MB each, and
  // allocating (and zero-filling) them on every evaluation cost ~30 % of a Newton iteration in
  // page faults. A handle is used by one thread at a time, like every attnmech handle.
  mutable std::vector<double> ws_mfull, ws_qv, ws_bt;
};

namespace am {
// U set ↔ vech coordinates (upper triangle, column by column).
void theory_vech_to_u(const am_theory &th, const double *v, double *U);
void theory_u_to_vech(const am_theory &th, const double *U, double *v);
// max_{l,ij} |G_l,ij| of a vech gradient.
double theory_grad_max_vech(const am_theory &th, const double *g);
}  // namespace am
