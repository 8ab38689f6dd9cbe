// attnmech — the action S(U) of the attention-path theory, its gradient, exact Hessian and the Newton
// solve, and predictor statistics (docs/design.md "Equations → code").
//
// Notation follows the spec: Γ = K_{U_1} + T I, α = Γ⁻¹Y, ξ_i the P × H slice of ξ for feature i,
// M_ij = ξ_iᵀ Γ⁻¹ ξ_j, b_i = ξ_iᵀ α. With Γ = L Lᵀ and B̃ = L⁻¹ Ξ_w (P × N0·H):
//   Σ_i M_ii = B̃_tᵀ B̃_t (one SYRK over the tall view), b = Ξ_wᵀ α,
//   Tr(Γ⁻¹K[A]Γ⁻¹K[B]) = Σ A_pq B_rs ⟨Q_qr, Q_ps⟩_F with Q_pq = B̃_pᵀ B̃_q (N0×N0 blocks of B̃ᵀB̃),
//   α ᵀK[A]Γ⁻¹K[B]α = (L⁻¹K[A]α)·(L⁻¹K[B]α), K[e_p e_qᵀ]α = X_p b_q.
// So the energy Hessian costs two SYRKs (B̃ᵀB̃ and the Gram matrix of the Q blocks) and no P×P work
// per direction.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnmech/theory.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"
#include "theory.hpp"

using am::la::vec;

namespace {

size_t vech_len(size_t d) { return d * (d + 1) / 2; }

// Entries of the basis direction with vech index k in a d×d block: (i,j) pairs whose sum is E_k.
struct entry {
  size_t p, q;
};
int basis_entries(size_t k, entry e[2], size_t *diag_index = nullptr) {
  // k enumerates j = 0.., i = 0..j
  size_t j = (size_t)((std::sqrt(8.0 * (double)k + 1.0) - 1.0) / 2.0);
  while (j * (j + 1) / 2 > k) --j;
  while ((j + 1) * (j + 2) / 2 <= k) ++j;
  size_t i = k - j * (j + 1) / 2;
  if (diag_index) *diag_index = (i == j) ? i : (size_t)-1;
  e[0] = {i, j};
  if (i == j) return 1;
  e[1] = {j, i};
  return 2;
}

// All evaluation state at one U.
struct eval_state {
  std::vector<vec> chol, inv, trU;  // per layer (index l = 1..L)
  std::vector<double> logdet;
  double Ua = 0, trUL = 0;
  vec bmat;     // b = Ξ_wᵀ α, as N0 × H (derivatives only)
  double E = 0, Sent = 0;  // energy and entropy before the 1/W_max scale
  // Which factor of Γ is this point's: the handle's (th.gamma_id; its L and α are th.gamma_L, th.gamma_alpha) or,
  // with an engine, the engine's (th.engine_factor), and what the engine returned for the energy.
  unsigned long long factor_id = 0;
  double logdet_gamma = 0, y_alpha = 0;
};

double trace(const double *A, size_t n) {
  double t = 0;
  for (size_t i = 0; i < n; ++i) t += A[i + i * n];
  return t;
}

// Partial trace over the leading head index: Σ_h U[(h,·),(h,·)].
vec partial_trace(const double *U, size_t D, size_t Dn) {
  vec t(Dn * Dn, 0.0);
  const size_t Hl = D / Dn;
  for (size_t h = 0; h < Hl; ++h)
    for (size_t b = 0; b < Dn; ++b)
      for (size_t a = 0; a < Dn; ++a) t[a + b * Dn] += U[(h * Dn + a) + (h * Dn + b) * D];
  return t;
}

double readout_u_a(const am_theory &th, double trUL) {
  const uint32_t L = th.L;
  const double sL = th.arch.variances[L], sa = th.arch.variances[L + 1];
  const double WLm1 = th.arch.widths[L - 1], WL = th.arch.widths[L];
  const double HL = th.arch.heads[L - 1];
  const double beta = sa * (HL * WLm1 / WL - 1.0);
  const double gamma = trUL * WLm1 * sa / (WL * sL);
  const double disc = std::sqrt(beta * beta + 4.0 * gamma);
  // the root (−β + √(β²+4γ))/2, written without cancellation when β > 0
  return beta > 0 ? 2.0 * gamma / (beta + disc) : 0.5 * (-beta + disc);
}

// Cholesky factors and log-determinants of every U_l, their partial traces, tr U_L and the readout U_a.
// `quiet` (inside the line search) reports a point outside the domain as AM_ERR_DOMAIN without a message.
am_status factor_layers(am_context *ctx, const am_theory &th, const double *U, eval_state &es, bool quiet) {
  const uint32_t L = th.L;
  es.chol.resize(L + 2);
  es.inv.resize(L + 2);
  es.trU.resize(L + 2);
  es.logdet.assign(L + 2, 0.0);
  for (uint32_t l = 1; l <= L; ++l) {
    const size_t d = th.D[l];
    const double *Ul = U + th.uoff[l];
    if (!am::all_finite(Ul, d * d))
      return quiet ? AM_ERR_DOMAIN : am::fail(ctx, AM_ERR_NONFINITE, "U_%u has non-finite entries", l);
    es.chol[l].assign(Ul, Ul + d * d);
    if (!am::la::chol(es.chol[l].data(), d, d))
      return quiet ? AM_ERR_DOMAIN : am::fail(ctx, AM_ERR_DOMAIN, "U_%u is not positive definite", l);
    es.logdet[l] = am::la::chol_logdet(es.chol[l].data(), d, d);
    es.trU[l] = partial_trace(Ul, d, th.D[l + 1]);
  }
  es.trUL = trace(U + th.uoff[L], th.D[L]);
  es.Ua = readout_u_a(th, es.trUL);
  if (!(es.Ua > 0) || !std::isfinite(es.Ua))
    return quiet ? AM_ERR_DOMAIN : am::fail(ctx, AM_ERR_DOMAIN, "readout order parameter U_a = %g is not positive", es.Ua);
  return AM_OK;
}

// Whether the handle holds the factor of Γ at U_1 (H×H) and its temperature (am_theory::gamma_L).
bool holds_gamma(const am_theory &th, const double *U1) {
  return th.gamma_id != 0 && th.gamma_T == th.T &&
         std::memcmp(th.gamma_U1.data(), U1, th.H * th.H * sizeof(double)) == 0;
}

// th.gamma_L and th.gamma_alpha ← Γ = K_{U_1} + T·I factored and α = Γ⁻¹y, unless the handle holds them already; the
// previous factor is freed before the new Γ is allocated. `predict`: am_theory_predict's checks and messages (a
// non-finite kernel is AM_ERR_NONFINITE), else the action's.
am_status keep_gamma(am_context *ctx, const am_theory &th, const double *U1, bool predict) {
  if (holds_gamma(th, U1)) return AM_OK;
  th.release_gamma();
  const size_t P = th.P;
  vec L(P * P, 0.0);
  am::kernel_u_sym(th.N0, th.H, U1, P, th.xi, L.data(), P);
  for (size_t i = 0; i < P; ++i) L[i + i * P] += th.T;
  ++th.gamma_factorizations;
  if (predict)
    if (am_status st = am::check_result(ctx, L.data(), P, P, P, "the training kernel K_U")) return st;
  if (!am::la::chol(L.data(), P, P))
    return predict ? am::fail(ctx, AM_ERR_SINGULAR, "K_U + T·I is not positive definite at T = %g", th.T)
                   : am::fail(ctx, AM_ERR_SINGULAR, "K_U + T·I is not positive definite at T = %g (the kernel is "
                              "numerically singular; raise T)", th.T);
  vec alpha(th.y, th.y + P);
  am::la::chol_solve(L.data(), P, P, alpha.data(), 1, P);
  th.gamma_L = std::move(L);
  th.gamma_alpha = std::move(alpha);
  th.gamma_U1.assign(U1, U1 + th.H * th.H);
  th.gamma_T = th.T;
  th.gamma_id = th.gamma_factorizations;
  return AM_OK;
}

// Γ = K_{U_1} + T I, its Cholesky factor and α = Γ⁻¹ y (the handle's, or the engine's).
am_status factor_gamma(am_context *ctx, const am_theory &th, const double *U, eval_state &es) {
  if (th.has_engine) {
    ++th.gamma_factorizations;
    th.engine_factor = 0;  // the engine's previous factor is gone once it starts on this one
    AM_TRY(th.engine.factor(th.engine.user, ctx, U + th.uoff[1], th.T, &es.logdet_gamma, &es.y_alpha));
    es.factor_id = th.engine_factor = th.gamma_factorizations;
    return AM_OK;
  }
  AM_TRY(keep_gamma(ctx, th, U + th.uoff[1], false));
  es.factor_id = th.gamma_id;
  return AM_OK;
}

// Energy log det Γ + yᵀα (before the 1/W_max scale).
double energy_value(const am_theory &th, const eval_state &es) {
  if (th.has_engine) return es.logdet_gamma + es.y_alpha;
  const size_t P = th.P;
  return am::la::chol_logdet(th.gamma_L.data(), P, P) + cblas_ddot((int)P, th.y, 1, th.gamma_alpha.data(), 1);
}

// Entropy: the readout term, then every layer's trace and log-determinant terms (before the 1/W_max scale).
double entropy_value(const am_theory &th, const eval_state &es) {
  const uint32_t L = th.L;
  const auto &A = th.arch;
  const double sa = A.variances[L + 1];
  double Sent = A.widths[L] * (es.Ua / sa - std::log(es.Ua));
  for (uint32_t l = 1; l <= L; ++l) {
    const size_t dn = th.D[l + 1];
    double tr, logdet_next;
    if (l < L) {
      vec X = es.trU[l];
      am::la::chol_solve(es.chol[l + 1].data(), dn, dn, X.data(), dn, dn);
      tr = trace(X.data(), dn);
      logdet_next = es.logdet[l + 1];
    } else {
      tr = es.trUL / es.Ua;
      logdet_next = std::log(es.Ua);
    }
    Sent += A.widths[l - 1] * (tr / A.variances[l] - es.logdet[l] + (double)A.heads[l - 1] * logdet_next);
  }
  return Sent;
}

// With an engine: b and M = B̃ᵀB̃ (into th.ws_mfull) from the engine's factor of this point.
am_status engine_whiten(am_context *ctx, const am_theory &th, eval_state &es) {
  if (es.factor_id == 0 || es.factor_id != th.engine_factor)
    return am::fail(ctx, AM_ERR_INTERNAL, "the theory engine no longer holds the factor of this point");
  const size_t NH = th.N0 * th.H;
  es.bmat.assign(NH, 0.0);
  th.ws_mfull.resize(NH * NH);
  return th.engine.whiten(th.engine.user, ctx, es.bmat.data(), th.ws_mfull.data());
}

// What gradient and Hessian share: the inverses U_l⁻¹, B̃ = L⁻¹ Ξ_w (in th.ws_bt) and b = Ξ_wᵀ α (with an
// engine: b and M = B̃ᵀB̃ instead of B̃).
am_status prepare_derivatives(am_context *ctx, const am_theory &th, eval_state &es) {
  for (uint32_t l = 1; l <= th.L; ++l) {
    es.inv[l] = es.chol[l];
    am::la::chol_inverse(es.inv[l].data(), th.D[l], th.D[l]);
  }
  if (th.has_engine) return engine_whiten(ctx, th, es);
  if (es.factor_id == 0 || es.factor_id != th.gamma_id)
    return am::fail(ctx, AM_ERR_INTERNAL, "the theory handle no longer holds the factor of this point");
  const size_t P = th.P, NH = th.N0 * th.H;
  vec &Bt = th.ws_bt;
  Bt.assign(th.xi, th.xi + P * NH);
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)P, (int)NH, 1.0, th.gamma_L.data(),
              (int)P, Bt.data(), (int)P);
  es.bmat.assign(NH, 0.0);
  cblas_dgemv(CblasColMajor, CblasTrans, (int)P, (int)NH, 1.0, th.xi, (int)P, th.gamma_alpha.data(), 1, 0.0,
              es.bmat.data(), 1);
  return AM_OK;
}

// Energy gradient G^E = B̃_tᵀ B̃_t − bᵀb (H×H), written over U_1's block of G (two SYRKs).
void energy_gradient(const am_theory &th, const eval_state &es, double *G) {
  const size_t P = th.P, N0 = th.N0, H = th.H;
  double *G1 = G + th.uoff[1];
  if (th.has_engine) {  // B̃_tᵀB̃_t = Σ_i of M's (i, i) entries in each N0×N0 block
    const size_t NH = N0 * H;
    for (size_t r = 0; r < H; ++r)
      for (size_t p = r; p < H; ++p) {
        double t = 0;
        for (size_t i = 0; i < N0; ++i)
          t += th.ws_mfull[(i + N0 * p) + (i + N0 * r) * NH] - es.bmat[i + N0 * p] * es.bmat[i + N0 * r];
        G1[p + r * H] = t;
      }
    am::la::symmetrize_from_lower(G1, H, H);
    return;
  }
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)H, (int)(P * N0), 1.0, th.ws_bt.data(), (int)(P * N0), 0.0,
              G1, (int)H);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)H, (int)N0, -1.0, es.bmat.data(), (int)N0, 1.0, G1, (int)H);
  am::la::symmetrize_from_lower(G1, H, H);
}

// Entropy gradient, added to G layer by layer: w R_{l+1}/s on the head-diagonal blocks − w U_l⁻¹, and from
// layer l−1's term w' (H' U_l⁻¹ − U_l⁻¹ (tr U_{l−1}) U_l⁻¹ / s').
void entropy_gradient(const am_theory &th, const eval_state &es, double *G) {
  const uint32_t L = th.L;
  const auto &A = th.arch;
  for (uint32_t l = 1; l <= L; ++l) {
    const size_t d = th.D[l], dn = th.D[l + 1];
    double *Gl = G + th.uoff[l];
    const vec R = l < L ? es.inv[l + 1] : vec{1.0 / es.Ua};  // R_{l+1}; 1×1 holding 1/U_a for l = L
    const double w = A.widths[l - 1], s = A.variances[l];
    for (size_t h = 0; h < d / dn; ++h)
      for (size_t b = 0; b < dn; ++b)
        for (size_t a = 0; a < dn; ++a) Gl[(h * dn + a) + (h * dn + b) * d] += w * R[a + b * dn] / s;
    for (size_t k = 0; k < d * d; ++k) Gl[k] -= w * es.inv[l][k];
    if (l >= 2) {
      const double wp = A.widths[l - 2], sp = A.variances[l - 1], Hp = A.heads[l - 2];
      // U_l⁻¹ (tr U_{l−1}) U_l⁻¹
      vec tmp(d * d), trip(d * d);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, es.inv[l].data(), (int)d,
                  es.trU[l - 1].data(), (int)d, 0.0, tmp.data(), (int)d);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)d, (int)d, 1.0, tmp.data(), (int)d,
                  es.inv[l].data(), (int)d, 0.0, trip.data(), (int)d);
      for (size_t k = 0; k < d * d; ++k) Gl[k] += wp * (Hp * es.inv[l][k] - trip[k] / sp);
    }
  }
}

// The Hessian in vech coordinates: entry (r, c) of the n×n column-major Hs.
struct vech_hessian {
  double *Hs;
  size_t n;
  double &operator()(size_t r, size_t c) const { return Hs[r + c * n]; }
};

// Gram matrix G2 of the N0×N0 blocks Q_xy of B̃ᵀB̃ (H²×H², column x·H + y = vec(Q_xy)): the first energy term
// Tr(Γ⁻¹K[A]Γ⁻¹K[B]) of every direction pair is one of its entries.
vec block_gram(const am_theory &th) {
  const size_t P = th.P, N0 = th.N0, H = th.H, NH = N0 * H;
  vec &Mfull = th.ws_mfull;  // fully overwritten below (SYRK with β = 0, then mirrored), or the engine's M
  if (!th.has_engine) {
    Mfull.resize(NH * NH);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)NH, (int)P, 1.0, th.ws_bt.data(), (int)P, 0.0,
                Mfull.data(), (int)NH);
    am::la::symmetrize_from_lower(Mfull.data(), NH, NH);
  }
  // Qv: column (x·H + y) = vec(Q_xy), Q_xy = rows x·N0.., cols y·N0.. of Mfull
  const size_t H2 = H * H, NN = N0 * N0;
  vec &Qv = th.ws_qv;  // every column is copied in below
  Qv.resize(NN * H2);
  for (size_t x = 0; x < H; ++x)
    for (size_t yy = 0; yy < H; ++yy) {
      double *dst = Qv.data() + (x * H + yy) * NN;
      for (size_t j = 0; j < N0; ++j)
        std::memcpy(dst + j * N0, Mfull.data() + (x * N0) + (yy * N0 + j) * NH, N0 * sizeof(double));
    }
  vec G2(H2 * H2);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)H2, (int)NN, 1.0, Qv.data(), (int)NN, 0.0, G2.data(), (int)H2);
  am::la::symmetrize_from_lower(G2.data(), H2, H2);
  return G2;
}

// With an engine: L⁻¹K[E_k]α = B̃ C_k, C_k the coefficients of ξ's columns in K[E_k]α, so the Gram is 2 CᵀMC.
vec whitened_direction_gram_from_m(const am_theory &th, const eval_state &es) {
  const size_t N0 = th.N0, H = th.H, NH = N0 * H, m1 = vech_len(H);
  vec C(NH * m1, 0.0);
  entry e[2];
  for (size_t k = 0; k < m1; ++k) {
    const int ne = basis_entries(k, e);
    for (int a = 0; a < ne; ++a)
      for (size_t i = 0; i < N0; ++i) C[(i + N0 * e[a].p) + k * NH] += es.bmat[i + N0 * e[a].q];
  }
  vec MC(NH * m1), UU(m1 * m1);
  cblas_dsymm(CblasColMajor, CblasLeft, CblasLower, (int)NH, (int)m1, 1.0, th.ws_mfull.data(), (int)NH, C.data(),
              (int)NH, 0.0, MC.data(), (int)NH);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)m1, (int)m1, (int)NH, 2.0, C.data(), (int)NH, MC.data(),
              (int)NH, 0.0, UU.data(), (int)m1);
  am::la::symmetrize_from_lower(UU.data(), m1, m1);
  return UU;
}

// 2 (L⁻¹K[E_k]α)·(L⁻¹K[E_k']α) for every pair of U_1's vech directions (m1×m1), with K[e_p e_qᵀ]α = X_p b_q.
vec whitened_direction_gram(const am_theory &th, const eval_state &es) {
  if (th.has_engine) return whitened_direction_gram_from_m(th, es);
  const size_t P = th.P, N0 = th.N0, H = th.H, H2 = H * H, m1 = vech_len(H);
  vec V(P * H2);
  for (size_t p = 0; p < H; ++p)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)P, (int)H, (int)N0, 1.0, th.xi + P * N0 * p,
                (int)P, es.bmat.data(), (int)N0, 0.0, V.data() + P * H * p, (int)P);
  vec Uk(P * m1, 0.0);
  entry e[2];
  for (size_t k = 0; k < m1; ++k) {
    int ne = basis_entries(k, e);
    for (int a = 0; a < ne; ++a)
      cblas_daxpy((int)P, 1.0, V.data() + P * (e[a].p * H + e[a].q), 1, Uk.data() + P * k, 1);
  }
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)P, (int)m1, 1.0,
              th.gamma_L.data(), (int)P, Uk.data(), (int)P);
  vec UU(m1 * m1);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)m1, (int)P, 2.0, Uk.data(), (int)P, 0.0, UU.data(), (int)m1);
  am::la::symmetrize_from_lower(UU.data(), m1, m1);
  return UU;
}

// Energy Hessian, written over the (U_1, U_1) block: −Tr(Γ⁻¹K[A]Γ⁻¹K[B]) + 2αᵀK[A]Γ⁻¹K[B]α.
void energy_hessian(const am_theory &th, const eval_state &es, const vech_hessian &Hat) {
  const size_t H = th.H, H2 = H * H, m1 = vech_len(H);
  const vec G2 = block_gram(th);
  const vec UU = whitened_direction_gram(th, es);
  entry e[2], f[2];
  for (size_t k = 0; k < m1; ++k) {
    int ne = basis_entries(k, e);
    for (size_t k2 = 0; k2 <= k; ++k2) {
      int nf = basis_entries(k2, f);
      double t1 = 0;
      for (int a = 0; a < ne; ++a)
        for (int b = 0; b < nf; ++b) {
          // A = e_p e_qᵀ, B = e_r e_sᵀ: Tr(A M B M) summed over features = ⟨Q_qr, Q_ps⟩
          const size_t p = e[a].p, q = e[a].q, r = f[b].p, s = f[b].q;
          t1 += G2[(q * H + r) + (p * H + s) * H2];
        }
      const double v = -t1 + UU[k + k2 * m1];
      Hat(th.voff[1] + k, th.voff[1] + k2) = v;
      Hat(th.voff[1] + k2, th.voff[1] + k) = v;
    }
  }
}

// Entropy Hessian of −w log det U_l: w Tr(U_l⁻¹ A U_l⁻¹ B), added to each (U_l, U_l) block.
void entropy_hessian_logdet(const am_theory &th, const eval_state &es, const vech_hessian &Hat) {
  entry e[2], f[2];
  for (uint32_t l = 1; l <= th.L; ++l) {
    const size_t d = th.D[l], m = vech_len(d);
    const vec &Ui = es.inv[l];
    const double w = th.arch.widths[l - 1];
    for (size_t k = 0; k < m; ++k) {
      int ne = basis_entries(k, e);
      for (size_t k2 = 0; k2 < m; ++k2) {
        int nf = basis_entries(k2, f);
        double t = 0;
        for (int a = 0; a < ne; ++a)
          for (int b = 0; b < nf; ++b) t += Ui[f[b].q + e[a].p * d] * Ui[e[a].q + f[b].p * d];
        Hat(th.voff[l] + k, th.voff[l] + k2) += w * t;
      }
    }
  }
}

// Entropy Hessian through layer l's trace term w (Tr(U_{l+1}⁻¹ tr_{h_l} U_l)/s + H_l log det U_{l+1}), l < L:
// the (l+1, l+1) block and the (l, l+1) coupling with its mirror. R = U_{l+1}⁻¹, S3 = R (tr_{h_l} U_l) R.
void entropy_hessian_coupling(const am_theory &th, const eval_state &es, uint32_t l, const vech_hessian &Hat) {
  const size_t d = th.D[l], dn = th.D[l + 1], m = vech_len(d), mn = vech_len(dn);
  const vec &R = es.inv[l + 1];
  const vec &Tl = es.trU[l];
  vec tmp(dn * dn), S3(dn * dn);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)dn, (int)dn, (int)dn, 1.0, R.data(), (int)dn, Tl.data(),
              (int)dn, 0.0, tmp.data(), (int)dn);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)dn, (int)dn, (int)dn, 1.0, tmp.data(), (int)dn, R.data(),
              (int)dn, 0.0, S3.data(), (int)dn);
  const double w = th.arch.widths[l - 1], s = th.arch.variances[l], Hl = th.arch.heads[l - 1];
  entry e[2], f[2];
  // (l+1, l+1)
  for (size_t k = 0; k < mn; ++k) {
    int ne = basis_entries(k, e);
    for (size_t k2 = 0; k2 < mn; ++k2) {
      int nf = basis_entries(k2, f);
      double t = 0;
      for (int a = 0; a < ne; ++a)
        for (int b = 0; b < nf; ++b) {
          const size_t p = e[a].p, q = e[a].q, r = f[b].p, ss = f[b].q;
          t += (R[q + r * dn] * S3[ss + p * dn] + R[ss + p * dn] * S3[q + r * dn]) / s -
               Hl * R[ss + p * dn] * R[q + r * dn];
        }
      Hat(th.voff[l + 1] + k, th.voff[l + 1] + k2) += w * t;
    }
  }
  // (l, l+1) and its mirror: −(1/s) Tr(R B R tr_{h_l} A)
  for (size_t k = 0; k < m; ++k) {
    int ne = basis_entries(k, e);
    for (size_t k2 = 0; k2 < mn; ++k2) {
      int nf = basis_entries(k2, f);
      double t = 0;
      for (int a = 0; a < ne; ++a) {
        const size_t hp = e[a].p / dn, x = e[a].p % dn, hq = e[a].q / dn, y = e[a].q % dn;
        if (hp != hq) continue;
        for (int b = 0; b < nf; ++b) t += R[y + f[b].p * dn] * R[f[b].q + x * dn];
      }
      const double v = -w * t / s;
      Hat(th.voff[l] + k, th.voff[l + 1] + k2) += v;
      Hat(th.voff[l + 1] + k2, th.voff[l] + k) += v;
    }
  }
}

// U_a is eliminated in closed form: the Schur complement −c²/S_aa on U_L's diagonal coordinates.
void schur_complement_u_a(const am_theory &th, const eval_state &es, const vech_hessian &Hat) {
  const uint32_t L = th.L;
  const auto &A = th.arch;
  const double sL = A.variances[L], WLm1 = A.widths[L - 1], WL = A.widths[L], HL = A.heads[L - 1], Ua = es.Ua;
  const double c = WLm1 / (sL * Ua * Ua);
  const double Saa = WLm1 * (2.0 * es.trUL / (sL * Ua * Ua * Ua) - HL / (Ua * Ua)) + WL / (Ua * Ua);
  const size_t d = th.D[L];
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < d; ++j) {
      const size_t ki = th.voff[L] + i * (i + 1) / 2 + i, kj = th.voff[L] + j * (j + 1) / 2 + j;
      Hat(ki, kj) -= c * c / Saa;
    }
}

// The symmetric gradient of S_code in U-set layout (scaled by 1/W_max).
void gradient(const am_theory &th, const eval_state &es, double *G) {
  std::memset(G, 0, th.usize * sizeof(double));
  energy_gradient(th, es, G);
  entropy_gradient(th, es, G);
  const double inv_w = 1.0 / th.Wmax;
  for (size_t k = 0; k < th.usize; ++k) G[k] *= inv_w;
}

// The exact Hessian of S_code in vech coordinates (scaled by 1/W_max).
void hessian(const am_theory &th, const eval_state &es, double *Hs) {
  const size_t n = th.vsize;
  std::memset(Hs, 0, n * n * sizeof(double));
  const vech_hessian Hat{Hs, n};
  energy_hessian(th, es, Hat);
  entropy_hessian_logdet(th, es, Hat);
  for (uint32_t l = 1; l < th.L; ++l) entropy_hessian_coupling(th, es, l, Hat);
  schur_complement_u_a(th, es, Hat);
  const double inv_w = 1.0 / th.Wmax;
  for (size_t k = 0; k < n * n; ++k) Hs[k] *= inv_w;
}

// The action at U: fills es (the factors the derivatives need) and, if given, *act.
am_status evaluate_value(am_context *ctx, const am_theory &th, const double *U, eval_state &es, am_action *act,
                         bool quiet) {
  AM_TRY(factor_layers(ctx, th, U, es, quiet));
  AM_TRY(factor_gamma(ctx, th, U, es));
  es.E = energy_value(th, es);
  es.Sent = entropy_value(th, es);
  if (!std::isfinite(es.E) || !std::isfinite(es.Sent))
    return quiet ? AM_ERR_DOMAIN
                 : am::fail(ctx, AM_ERR_NONFINITE, "action is not finite (energy %g, entropy %g)", es.E, es.Sent);
  const double inv_w = 1.0 / th.Wmax;
  if (act) {
    act->energy = es.E * inv_w;
    act->entropy = es.Sent * inv_w;
    act->S_code = (es.E + es.Sent) * inv_w;
    act->U_a = es.Ua;
  }
  return AM_OK;
}

// The symmetric gradient G (U-set layout) and/or the vech Hessian from the factors evaluate_value left in es.
am_status evaluate_derivatives(am_context *ctx, const am_theory &th, eval_state &es, double *G, double *Hs) {
  if (!G && !Hs) return AM_OK;
  ++th.derivative_evaluations;
  AM_TRY(prepare_derivatives(ctx, th, es));
  if (G) {
    gradient(th, es, G);
    if (!am::all_finite(G, th.usize))
      return am::fail(ctx, AM_ERR_NONFINITE, "the action's gradient is not finite (energy %g, entropy %g: the inputs' or "
                      "labels' scale overflows float64)", es.E, es.Sent);
  }
  if (Hs) {
    hessian(th, es, Hs);
    if (!am::all_finite(Hs, th.vsize * th.vsize))
      return am::fail(ctx, AM_ERR_NONFINITE, "the action's Hessian is not finite (energy %g, entropy %g: the inputs' or "
                      "labels' scale overflows float64)", es.E, es.Sent);
  }
  return AM_OK;
}

// Value (and optionally symmetric gradient G in U-set layout and vech Hessian) of S_code.
am_status evaluate(am_context *ctx, const am_theory &th, const double *U, am_action *act, double *G, double *Hs,
                   bool quiet) {
  eval_state es;
  AM_TRY(evaluate_value(ctx, th, U, es, act, quiet));
  return evaluate_derivatives(ctx, th, es, G, Hs);
}

// The action as the Newton solver's objective. The solver evaluates a trial point's value in its line search and,
// once it accepts the point, asks for value, gradient and Hessian there: the adaptor keeps the factors of the
// last point it evaluated, so an accepted point's Γ is built and factored once. They are overwritten in place by
// the next point, so the solve holds one P×P factor at a time, as before.
struct newton_adaptor {
  am_context *ctx;
  am_theory *th;
  vec U, G;
  eval_state es;  // factors at x_last when have_last
  vec x_last;
  am_action act{};
  bool have_last = false;

  bool holds(const double *x) const {
    return have_last && std::memcmp(x, x_last.data(), th->vsize * sizeof(double)) == 0;
  }
  void release() {
    have_last = false;
    es = eval_state();
  }
};

am_status adaptor_eval(void *user, const double *x, double *f, double *g, double *Hs) {
  auto *a = static_cast<newton_adaptor *>(user);
  if (!a->holds(x)) {
    a->have_last = false;
    am::theory_vech_to_u(*a->th, x, a->U.data());
    if (am_status st = evaluate_value(a->ctx, *a->th, a->U.data(), a->es, &a->act, true)) return st;
    a->x_last.assign(x, x + a->th->vsize);
    a->have_last = true;
  }
  am_status st = evaluate_derivatives(a->ctx, *a->th, a->es, g ? a->G.data() : nullptr, Hs);
  if (st) return st;
  *f = a->act.S_code;
  if (g) {
    // vech gradient g_k = Tr(G E_k): G_ii on the diagonal, 2 G_ij off it
    size_t k = 0;
    for (uint32_t l = 1; l <= a->th->L; ++l) {
      const size_t d = a->th->D[l];
      const double *Gl = a->G.data() + a->th->uoff[l];
      for (size_t j = 0; j < d; ++j)
        for (size_t i = 0; i <= j; ++i, ++k) g[k] = (i == j ? 1.0 : 2.0) * Gl[i + j * d];
    }
  }
  return AM_OK;
}

double adaptor_measure(void *user, const double *, const double *g) {
  return am::theory_grad_max_vech(*static_cast<newton_adaptor *>(user)->th, g);
}

// am_theory_predict by the engine: var = k_* − |L⁻¹k|², k_* serial (Pt·N0·H_tot², no P-sized work).
am_status engine_predict(am_context *ctx, const am_theory &th, const double *U1, size_t Pt, const double *xi_test,
                         double *mean, double *var) {
  ++th.gamma_factorizations;
  th.engine_factor = 0;  // predict builds its own factor over the solve's, or keeps it when that is at U1 and T
  vec quad(Pt);
  AM_TRY(th.engine.predict(th.engine.user, ctx, U1, th.T, Pt, xi_test, mean, quad.data()));
  AM_TRY(am_kernel_u_diag(ctx, th.N0, th.H, U1, Pt, xi_test, var));
  for (size_t t = 0; t < Pt; ++t) var[t] -= quad[t];
  if (am_status st = am::check_result(ctx, mean, Pt, 1, Pt, "the predictor's mean")) return st;
  return am::check_result(ctx, var, Pt, 1, Pt, "the predictor's variance");
}

am_status check_theory(am_context *ctx, const am_theory *th) {
  if (!th) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "theory handle is NULL");
  return AM_OK;
}

std::string theory_what(size_t P, size_t N0, size_t H) {
  return am::format("the theory (P = %zu, N0 = %zu, %zu path%s)", P, N0, H, H == 1 ? "" : "s");
}

// theory_memory_check for an operation on an existing handle (ops: am::kMem*).
// With an engine the handle counts only what it allocates itself (the engine's P-sized matrices are its own:
// a distributed engine holds a share of them on each process, checked by its caller, am_theory_memory_check_engine).
// am_theory_kernel, serial with or without an engine, passes whole = true.
am_status check_memory(am_context *ctx, const am_theory &th, unsigned ops, double Pt = 0, bool whole = false) {
  am::theory_sizes s = am::theory_sizes_of(th.arch, (double)th.P, (double)th.N0);
  s.Pt = Pt;
  s.engine = th.has_engine && !whole;
  return am::theory_memory_check(ctx, s, am::kMemHandle | ops, theory_what(th.P, th.N0, th.H).c_str());
}

}  // namespace

namespace am {
void theory_vech_to_u(const am_theory &th, const double *v, double *U) {
  size_t k = 0;
  for (uint32_t l = 1; l <= th.L; ++l) {
    const size_t d = th.D[l];
    double *Ul = U + th.uoff[l];
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) Ul[i + j * d] = Ul[j + i * d] = v[k];
  }
}
void theory_u_to_vech(const am_theory &th, const double *U, double *v) {
  size_t k = 0;
  for (uint32_t l = 1; l <= th.L; ++l) {
    const size_t d = th.D[l];
    const double *Ul = U + th.uoff[l];
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) v[k] = 0.5 * (Ul[i + j * d] + Ul[j + i * d]);
  }
}
double theory_grad_max_vech(const am_theory &th, const double *g) {
  double m = 0;
  size_t k = 0;
  for (uint32_t l = 1; l <= th.L; ++l) {
    const size_t d = th.D[l];
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i, ++k) m = std::max(m, std::fabs(i == j ? g[k] : 0.5 * g[k]));
  }
  return m;
}
}  // namespace am

extern "C" {

}  // extern "C"

namespace {

// U-set and vech offsets of every layer, their sizes and W_max (am_theory_create).
void theory_layout(am_theory &th) {
  size_t uo = 0, vo = 0;
  for (uint32_t l = 1; l <= th.L + 1; ++l) {
    th.D[l] = am_arch_dim(&th.arch, l);
    if (l <= th.L) {
      th.uoff[l] = uo;
      th.voff[l] = vo;
      uo += th.D[l] * th.D[l];
      vo += vech_len(th.D[l]);
    }
  }
  th.usize = uo;
  th.vsize = vo;
  th.Wmax = 0;
  for (uint32_t l = 0; l <= th.L; ++l) th.Wmax = std::max(th.Wmax, th.arch.widths[l]);
}

// am_theory_create (copy: ξ and y copied into the handle) and am_theory_create_view (read where they are).
am_status create(am_context *ctx, am_theory **out, const am_arch *arch_in, size_t P, size_t N0, const double *xi,
                 const double *y, double temperature, bool copy) {
  if (!out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "output pointer is NULL");
  *out = nullptr;
  am_arch arch;
  am_status st = am::arch_in(ctx, arch_in, &arch);
  if (st) return st;
  if (!xi || !y) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "xi or y is NULL");
  if (P == 0 || N0 == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty training set (P = %zu, N0 = %zu)", P, N0);
  if (!(temperature > 0) || !std::isfinite(temperature))
    return am::fail(ctx, AM_ERR_DOMAIN, "temperature T = %g must be positive and finite", temperature);
  const size_t H = am_arch_paths(&arch);
  // Before the first byte: the handle's copies and one evaluation's P×P kernel (every use of a handle builds
  // it); this also keeps P·N0·H below the size_t and BLAS limits for the products below.
  if ((st = am::theory_memory_check(ctx, am::theory_sizes_of(arch, (double)P, (double)N0),
                                    (copy ? am::kMemHandle : 0u) | am::kMemValue, theory_what(P, N0, H).c_str())))
    return st;
  if (!am::all_finite(xi, P * N0 * H)) return am::fail(ctx, AM_ERR_NONFINITE, "path-transformed input has non-finite entries");
  if (!am::all_finite(y, P)) return am::fail(ctx, AM_ERR_NONFINITE, "labels have non-finite entries");
  auto th = std::make_unique<am_theory>();
  th->arch = arch;
  th->P = P;
  th->N0 = N0;
  th->H = H;
  if (copy) {
    th->xi_own.assign(xi, xi + P * N0 * H);
    th->y_own.assign(y, y + P);
  }
  th->xi = copy ? th->xi_own.data() : xi;
  th->y = copy ? th->y_own.data() : y;
  th->T = temperature;
  th->L = arch.layers;
  theory_layout(*th);
  *out = th.release();
  return AM_OK;
}

}  // namespace

extern "C" {

AM_API am_status am_theory_create(am_context *ctx, am_theory **out, const am_arch *arch, size_t P, size_t N0,
                                  const double *xi, const double *y, double temperature) {
  return am::guarded(ctx, [&] { return create(ctx, out, arch, P, N0, xi, y, temperature, true); });
}

AM_API am_status am_theory_create_view(am_context *ctx, am_theory **out, const am_arch *arch, size_t P, size_t N0,
                                       const double *xi, const double *y, double temperature) {
  return am::guarded(ctx, [&] { return create(ctx, out, arch, P, N0, xi, y, temperature, false); });
}

AM_API void am_theory_destroy(am_theory **th) {
  if (!th || !*th) return;
  delete *th;
  *th = nullptr;
}

AM_API am_status am_theory_set_temperature(am_context *ctx, am_theory *th, double temperature) {
  if (am_status st = check_theory(ctx, th)) return st;
  if (!(temperature > 0) || !std::isfinite(temperature))
    return am::fail(ctx, AM_ERR_DOMAIN, "temperature T = %g must be positive and finite", temperature);
  if (temperature != th->T) th->release_gamma();  // Γ's factor is of the old temperature
  th->T = temperature;
  return AM_OK;
}

AM_API void am_theory_release(am_theory *th) {
  if (!th) return;
  th->release_gamma();
  th->ws_mfull = vec();
  th->ws_qv = vec();
  th->ws_bt = vec();
}

AM_API am_status am_theory_set_arch(am_context *ctx, am_theory *th, const am_arch *arch_in) {
  if (am_status st = check_theory(ctx, th)) return st;
  am_arch copy;
  if (am_status st = am::arch_in(ctx, arch_in, &copy)) return st;
  const am_arch *arch = &copy;
  if (arch->layers != th->L) return am::fail(ctx, AM_ERR_SHAPE, "new architecture has %u layers, the theory %u", arch->layers, th->L);
  for (uint32_t l = 0; l < th->L; ++l)
    if (arch->heads[l] != th->arch.heads[l])
      return am::fail(ctx, AM_ERR_SHAPE, "new architecture changes the heads of layer %u", l + 1);
  th->arch = *arch;
  th->Wmax = 0;
  for (uint32_t l = 0; l <= th->L; ++l) th->Wmax = std::max(th->Wmax, arch->widths[l]);
  return AM_OK;
}

AM_API am_status am_theory_set_engine(am_context *ctx, am_theory *th, const am_theory_engine *engine) {
  if (am_status st = check_theory(ctx, th)) return st;
  am_theory_engine e{};
  if (engine) {
    // The growth rule: the 3.3 prefix is required, a later member is read only when struct_size covers it.
    if (am_status st = am::accept_struct(ctx, engine, e, am::kMinTheoryEngine, "am_theory_engine")) return st;
    if (!e.factor || !e.whiten || !e.predict)
      return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_theory_engine needs factor, whiten and predict");
  }
  if (th->has_engine && th->engine.release) th->engine.release(th->engine.user);
  th->engine = e;
  th->has_engine = engine != nullptr;
  th->engine_factor = 0;
  th->ws_bt = vec();  // the serial path's B̃ and Γ's factor are not used by an engine
  th->release_gamma();
  return AM_OK;
}

AM_API size_t am_theory_u_size(const am_theory *th) { return th ? th->usize : 0; }
AM_API size_t am_theory_vech_size(const am_theory *th) { return th ? th->vsize : 0; }
AM_API size_t am_theory_u_offset(const am_theory *th, uint32_t l) {
  return (th && l >= 1 && l <= th->L) ? th->uoff[l] : 0;
}

AM_API void am_theory_gp_point(const am_theory *th, double *U) {
  if (!th || !U) return;
  std::memset(U, 0, th->usize * sizeof(double));
  for (uint32_t l = 1; l <= th->L; ++l) {
    double c = th->arch.variances[th->L + 1];
    for (uint32_t k = l; k <= th->L; ++k) c *= th->arch.variances[k];
    const size_t d = th->D[l];
    for (size_t i = 0; i < d; ++i) U[th->uoff[l] + i + i * d] = c;
  }
}

AM_API am_status am_theory_action(am_context *ctx, am_theory *th, const double *U, am_action *out, double *grad,
                                  double *hess) {
  return am::guarded(ctx, [&]() -> am_status {
    if (am_status st = check_theory(ctx, th)) return st;
    if (!U) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "U is NULL");
    const unsigned ops = am::kMemValue | (grad ? am::kMemGradient : 0u) | (hess ? am::kMemHessian : 0u);
    if (am_status st = check_memory(ctx, *th, ops)) return st;
    // The action only sees the symmetric part, as in the reference parametrisation U = (M + Mᵀ)/2.
    vec Us(th->usize);
    am::theory_u_to_vech(*th, U, Us.data());
    vec Ufull(th->usize);
    am::theory_vech_to_u(*th, Us.data(), Ufull.data());
    am_action a{};
    a.struct_size = sizeof a;
    am_status st = evaluate(ctx, *th, Ufull.data(), &a, grad, hess, false);
    if (st) return st;
    return out ? am::emit_struct(ctx, out, a, "am_action") : AM_OK;
  });
}

AM_API void am_solve_settings_init(am_solve_settings *s, size_t size) {
  am_solve_settings d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.max_iter = 100;
  d.grad_tol = 1e-10;
  d.decrement_tol = 1e-20;
  d.warm_start = 0;
  am::init_struct(s, size, d);
}

AM_API am_status am_theory_solve(am_context *ctx, am_theory *th, const am_solve_settings *s_in, double *U,
                                 am_solve_report *rep) {
  return am::guarded(ctx, [&]() -> am_status {
    if (am_status st = check_theory(ctx, th)) return st;
    if (!U) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "U is NULL");
    am_solve_settings s;
    am_solve_default_settings(&s);
    if (s_in)
      if (am_status st = am::accept_struct(ctx, s_in, s, am::kMinSolveSettings, "am_solve_settings")) return st;
    if (rep && rep->struct_size < am::kSizeFieldEnd)
      return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_solve_report.struct_size is %u: the caller sets it to "
                      "sizeof(am_solve_report)", rep->struct_size);
    if (am_status st = check_memory(ctx, *th, am::kMemValue | am::kMemGradient | am::kMemHessian | am::kMemNewton))
      return st;
    if (!s.warm_start) am_theory_gp_point(th, U);
    newton_adaptor ad{ctx, th, vec(th->usize), vec(th->usize)};
    vec x(th->vsize);
    am::theory_u_to_vech(*th, U, x.data());
    const vec start = x;
    am_objective obj = AM_OBJECTIVE(th->vsize, &ad, &adaptor_eval, &adaptor_measure);
    am_newton_settings ns;
    am_newton_default_settings(&ns);
    ns.max_iter = s.max_iter;
    ns.grad_tol = s.grad_tol;
    ns.decrement_tol = s.decrement_tol;
    am_newton_report nr{};
    nr.struct_size = sizeof nr;
    am_status st = am_newton_minimize(ctx, &obj, &ns, x.data(), &nr);
    if (st == AM_ERR_DOMAIN && x == start) {
      // The solver's evaluations are quiet ("outside the domain" covers every reason); say which one it was.
      ad.release();
      am::theory_vech_to_u(*th, start.data(), ad.U.data());
      const am_status why = evaluate(ctx, *th, ad.U.data(), nullptr, nullptr, nullptr, false);
      st = why != AM_OK ? why : am::fail(ctx, AM_ERR_DOMAIN, "the starting point is outside the action's domain");
    }
    am::theory_vech_to_u(*th, x.data(), U);
    if (st < 0 && st != AM_ERR_NOT_CONVERGED) return st;
    if (rep) {
      // The solution is the last point the solver evaluated, unless its line search failed.
      am_action act{};
      if (ad.holds(x.data())) {
        act = ad.act;
      } else {
        ad.release();
        evaluate(nullptr, *th, U, &act, nullptr, nullptr, true);
      }
      am_solve_report r;
      std::memset(&r, 0, sizeof r);
      r.struct_size = sizeof r;
      r.S_code = act.S_code;
      r.energy = act.energy;
      r.entropy = act.entropy;
      r.U_a = act.U_a;
      r.iterations = nr.iterations;
      r.grad_max = nr.grad_measure;
      r.grad_vech_norm = nr.grad_norm;
      r.decrement = nr.decrement;
      r.hessian_min_eig = nr.hessian_min_eig;
      r.status = nr.status;
      am::emit_struct(ctx, rep, r, "am_solve_report");
    }
    return st;
  });
}

AM_API am_status am_theory_kernel(am_context *ctx, am_theory *th, const double *U1, double *K) {
  return am::guarded(ctx, [&]() -> am_status {
    if (am_status st = check_theory(ctx, th)) return st;
    if (!U1 || !K) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "U1 or K is NULL");
    if (am_status st = check_memory(ctx, *th, am::kMemValue, 0, true)) return st;
    if (!am::all_finite(U1, th->H * th->H)) return am::fail(ctx, AM_ERR_NONFINITE, "U_1 has non-finite entries");
    th->release_gamma();  // the caller's P×P K takes the place of Γ's factor (the kernels come after the predictions)
    am::kernel_u_sym(th->N0, th->H, U1, th->P, th->xi, K, th->P);
    return am::check_result(ctx, K, th->P, th->P, th->P, "the kernel K_U");
  });
}

AM_API am_status am_theory_predict(am_context *ctx, am_theory *th, const double *U1, size_t Pt, const double *xi_test,
                                   double *mean, double *var) {
  return am::guarded(ctx, [&]() -> am_status {
    if (am_status st = check_theory(ctx, th)) return st;
    if (!U1 || !xi_test || !mean || !var) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_theory_predict");
    if (Pt == 0) return am::fail(ctx, AM_ERR_SHAPE, "no test inputs");
    if (am_status st = check_memory(ctx, *th, am::kMemPredict, (double)Pt)) return st;
    const size_t P = th->P, N0 = th->N0, H = th->H;
    if (!am::all_finite(U1, H * H)) return am::fail(ctx, AM_ERR_NONFINITE, "U_1 has non-finite entries");
    if (!am::all_finite(xi_test, Pt * N0 * H)) return am::fail(ctx, AM_ERR_NONFINITE, "test input has non-finite entries");
    if (th->has_engine) return engine_predict(ctx, *th, U1, Pt, xi_test, mean, var);
    // Γ's factor: the one the handle holds when it is at U1 and T (the solve's solution, an earlier prediction's).
    if (am_status st = keep_gamma(ctx, *th, U1, true)) return st;
    const double *Gm = th->gamma_L.data(), *alpha = th->gamma_alpha.data();
    vec k(P * Pt);  // train × test
    am_status st = am_kernel_u(ctx, N0, H, U1, P, th->xi, Pt, xi_test, k.data(), P);
    if (st) return st;
    cblas_dgemv(CblasColMajor, CblasTrans, (int)P, (int)Pt, 1.0, k.data(), (int)P, alpha, 1, 0.0, mean, 1);
    st = am_kernel_u_diag(ctx, N0, H, U1, Pt, xi_test, var);
    if (st) return st;
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)P, (int)Pt, 1.0, Gm, (int)P,
                k.data(), (int)P);
    for (size_t t = 0; t < Pt; ++t) var[t] -= cblas_ddot((int)P, k.data() + t * P, 1, k.data() + t * P, 1);
    if (am_status st2 = am::check_result(ctx, mean, Pt, 1, Pt, "the predictor's mean")) return st2;
    return am::check_result(ctx, var, Pt, 1, Pt, "the predictor's variance");
  });
}

}  // extern "C"
