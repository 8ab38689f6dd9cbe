// tests/plugins/common/potts — the objective of msa_model.h written the slow, obvious way: the couplings J built
// element by element from θ, every conditional from its own logits, the gradient by the chain rule through J.
// The oracle the fast MsaModel is tested against (test_msa_model.cpp); itself checked against central finite
// differences. Conventions (θ layout, penalty, normalisation) are msa_model.h's, to the letter.
#ifndef ATTNMECH_TESTS_POTTS_MSA_REFERENCE_HPP
#define ATTNMECH_TESTS_POTTS_MSA_REFERENCE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace msa_ref {

struct Shape {
  bool factored = true;  // false: the symmetric Potts parametrisation
  int L = 2, C = 2, H = 1;
  bool fields = true;
  bool symmetric = false;    // factored: the conditionals and penalty use (J_ij(a,b) + J_ji(b,a))/2
  double logit_scale = 1.0;  // factored: A = softmax(logit_scale · W)
};

inline size_t fields_size(const Shape &s) { return s.fields ? (size_t)s.L * s.C : 0; }

inline size_t n_params(const Shape &s) {
  const size_t L = s.L, C = s.C;
  return fields_size(s) + (s.factored ? (size_t)s.H * (L * L + C * C) : L * (L - 1) / 2 * C * C);
}

inline size_t jidx(const Shape &s, int i, int j, int a, int b) {
  return (((size_t)i * s.L + j) * s.C + a) * s.C + b;
}

// Offset in θ of the Potts block e_ij (i < j): pairs in the order (0,1), (0,2), …, (1,2), …
inline size_t pair_offset(const Shape &s, int i, int j) {
  size_t k = 0;
  for (int p = 0; p < s.L; ++p)
    for (int q = p + 1; q < s.L; ++q) {
      if (p == i && q == j) return fields_size(s) + k * s.C * s.C;
      ++k;
    }
  return (size_t)-1;
}

inline size_t w_offset(const Shape &s, int h) { return fields_size(s) + (size_t)h * s.L * s.L; }
inline size_t v_offset(const Shape &s, int h) {
  return fields_size(s) + (size_t)s.H * s.L * s.L + (size_t)h * s.C * s.C;
}

// A^h_ij = exp(s·W^h_ij) / Σ_{k≠i} exp(s·W^h_ik) (s = logit_scale), A^h_ii = 0; A[(h·L + i)·L + j].
inline std::vector<double> attention(const Shape &s, const double *th) {
  std::vector<double> A((size_t)s.H * s.L * s.L, 0.0);
  for (int h = 0; h < s.H; ++h)
    for (int i = 0; i < s.L; ++i) {
      std::vector<double> W(th + w_offset(s, h) + (size_t)i * s.L, th + w_offset(s, h) + (size_t)(i + 1) * s.L);
      for (double &x : W) x *= s.logit_scale;
      double mx = -INFINITY;
      for (int j = 0; j < s.L; ++j)
        if (j != i) mx = std::max(mx, W[j]);
      double z = 0.0;
      for (int j = 0; j < s.L; ++j)
        if (j != i) z += std::exp(W[j] - mx);
      for (int j = 0; j < s.L; ++j)
        if (j != i) A[((size_t)h * s.L + i) * s.L + j] = std::exp(W[j] - mx) / z;
    }
  return A;
}

// (X_ij(a, b) + X_ji(b, a)) / 2 for every i, j, a, b.
inline std::vector<double> symmetrised(const Shape &s, const std::vector<double> &X) {
  std::vector<double> Y(X.size());
  for (int i = 0; i < s.L; ++i)
    for (int j = 0; j < s.L; ++j)
      for (int a = 0; a < s.C; ++a)
        for (int b = 0; b < s.C; ++b) Y[jidx(s, i, j, a, b)] = 0.5 * (X[jidx(s, i, j, a, b)] + X[jidx(s, j, i, b, a)]);
  return Y;
}

// J[((i·L + j)·C + a)·C + b] = J_ij(a, b), J_ii = 0 (symmetric factored: the symmetrised couplings).
inline std::vector<double> couplings(const Shape &s, const double *th) {
  std::vector<double> J((size_t)s.L * s.L * s.C * s.C, 0.0);
  if (s.factored) {
    const std::vector<double> A = attention(s, th);
    for (int h = 0; h < s.H; ++h)
      for (int i = 0; i < s.L; ++i)
        for (int j = 0; j < s.L; ++j)
          for (int a = 0; a < s.C; ++a)
            for (int b = 0; b < s.C; ++b)
              J[jidx(s, i, j, a, b)] += A[((size_t)h * s.L + i) * s.L + j] * th[v_offset(s, h) + (size_t)a * s.C + b];
    return s.symmetric ? symmetrised(s, J) : J;
  }
  for (int i = 0; i < s.L; ++i)
    for (int j = i + 1; j < s.L; ++j)
      for (int a = 0; a < s.C; ++a)
        for (int b = 0; b < s.C; ++b) {
          const double e = th[pair_offset(s, i, j) + (size_t)a * s.C + b];
          J[jidx(s, i, j, a, b)] = e;
          J[jidx(s, j, i, b, a)] = e;
        }
  return J;
}

inline double field(const Shape &s, const double *th, int i, int a) { return s.fields ? th[(size_t)i * s.C + a] : 0.0; }

// Σ_μ w_μ Σ_{i: s_i ≥ 0} −log p(s_i | s_\i) and N = Σ_μ w_μ #{i : s_i ≥ 0}; with gJ/gh non-null also the
// derivatives of the sum with respect to J (L·L·C·C) and h (L·C).
inline double weighted_nll(const Shape &s, const double *th, const std::vector<double> &J, size_t M,
                           const int32_t *tok, const double *w, double *N, double *gJ, double *gh) {
  double sum = 0.0;
  *N = 0.0;
  std::vector<double> z(s.C);
  for (size_t mu = 0; mu < M; ++mu) {
    const int32_t *x = tok + mu * s.L;
    const double wm = w ? w[mu] : 1.0;
    for (int i = 0; i < s.L; ++i) {
      if (x[i] < 0) continue;
      for (int a = 0; a < s.C; ++a) {
        z[a] = field(s, th, i, a);
        for (int j = 0; j < s.L; ++j)
          if (j != i && x[j] >= 0) z[a] += J[jidx(s, i, j, a, x[j])];
      }
      const double mx = *std::max_element(z.begin(), z.end());
      double Z = 0.0;
      for (int a = 0; a < s.C; ++a) Z += std::exp(z[a] - mx);
      sum += wm * (mx + std::log(Z) - z[x[i]]);
      *N += wm;
      if (!gJ) continue;
      for (int a = 0; a < s.C; ++a) {
        const double d = wm * (std::exp(z[a] - mx) / Z - (a == x[i] ? 1.0 : 0.0));
        if (gh) gh[(size_t)i * s.C + a] += d;
        for (int j = 0; j < s.L; ++j)
          if (j != i && x[j] >= 0) gJ[jidx(s, i, j, a, x[j])] += d;
      }
    }
  }
  return sum;
}

// Gradient with respect to θ from the derivative G with respect to J (and gh with respect to h).
inline void theta_gradient(const Shape &s, const double *th, const std::vector<double> &G_eff,
                           const std::vector<double> &gh, double *grad) {
  // symmetric: J_eff = sym(J_dir), so ∂f/∂J_dir = sym(∂f/∂J_eff)
  const std::vector<double> G = s.factored && s.symmetric ? symmetrised(s, G_eff) : G_eff;
  std::fill(grad, grad + n_params(s), 0.0);
  for (size_t k = 0; k < fields_size(s); ++k) grad[k] = gh[k];
  if (!s.factored) {
    for (int i = 0; i < s.L; ++i)
      for (int j = i + 1; j < s.L; ++j)
        for (int a = 0; a < s.C; ++a)
          for (int b = 0; b < s.C; ++b)
            grad[pair_offset(s, i, j) + (size_t)a * s.C + b] = G[jidx(s, i, j, a, b)] + G[jidx(s, j, i, b, a)];
    return;
  }
  const std::vector<double> A = attention(s, th);
  for (int h = 0; h < s.H; ++h)
    for (int i = 0; i < s.L; ++i) {
      std::vector<double> dA(s.L, 0.0);
      for (int j = 0; j < s.L; ++j)
        for (int a = 0; a < s.C; ++a)
          for (int b = 0; b < s.C; ++b) {
            const double Aij = A[((size_t)h * s.L + i) * s.L + j];
            grad[v_offset(s, h) + (size_t)a * s.C + b] += Aij * G[jidx(s, i, j, a, b)];
            dA[j] += th[v_offset(s, h) + (size_t)a * s.C + b] * G[jidx(s, i, j, a, b)];
          }
      double mean = 0.0;  // Σ_k A_ik dA_ik (softmax Jacobian)
      for (int j = 0; j < s.L; ++j) mean += A[((size_t)h * s.L + i) * s.L + j] * dA[j];
      for (int j = 0; j < s.L; ++j)
        if (j != i)
          grad[w_offset(s, h) + (size_t)i * s.L + j] = s.logit_scale * A[((size_t)h * s.L + i) * s.L + j] * (dA[j] - mean);
    }
}

// msa_model.h's objective: [Σ w (−log p) + λ_h Σ h² + (λ_e/2) Σ_{i≠j} Σ_ab J_ij(a,b)²] / N; gradient when grad.
inline double objective(const Shape &s, const double *th, size_t M, const int32_t *tok, const double *w,
                        double lambda_h, double lambda_e, double *grad) {
  const std::vector<double> J = couplings(s, th);
  std::vector<double> G(grad ? J.size() : 0, 0.0), gh(grad ? (size_t)s.L * s.C : 0, 0.0);
  double N = 0.0;
  double f = weighted_nll(s, th, J, M, tok, w, &N, grad ? G.data() : nullptr, grad ? gh.data() : nullptr);
  for (size_t k = 0; k < fields_size(s); ++k) {
    f += lambda_h * th[k] * th[k];
    if (grad) gh[k] += 2.0 * lambda_h * th[k];
  }
  for (size_t k = 0; k < J.size(); ++k) {
    f += 0.5 * lambda_e * J[k] * J[k];
    if (grad) G[k] += lambda_e * J[k];
  }
  if (grad) {
    theta_gradient(s, th, G, gh, grad);
    for (size_t k = 0; k < n_params(s); ++k) grad[k] /= N;
  }
  return f / N;
}

// Weighted mean −log p over the scored tokens (no penalty).
inline double mean_nll(const Shape &s, const double *th, size_t M, const int32_t *tok, const double *w) {
  double N = 0.0;
  const double sum = weighted_nll(s, th, couplings(s, th), M, tok, w, &N, nullptr, nullptr);
  return sum / N;
}

}  // namespace msa_ref

#endif
