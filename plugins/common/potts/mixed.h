// potts_core — uncollapsed factored attention with the perturbation a (docs/potts.md):
//   query of the scored site i:  q_i = W_Q (p_i + a·E[MASK])          (never E[s_i]: the site is masked)
//   keys of j ≠ i:               k_j = W_K (p_j + a·E[s_j])
//   values of j ≠ i:             o_j = W_O W_V (E[s_j] + a·p_j)
//   A_ij = softmax_{j≠i}(q_i·k_j),  z_i = Σ_{j≠i} A_ij o_j,  p(s_i=a|s_\i) = softmax(z_i)_a.
// Learned: positional embeddings P (L×d), token embeddings E ((C+1)×d, row C = MASK), W_Q, W_K, W_V
// (d×d), W_O (C×d). At a = 0 this is the collapsed model with W_ij = q_i·k_j and V_{ab} = (o(b))_a.
// All sites are scored in one pass (z_i never sees s_i). Because keys and values depend on (j, s_j)
// only, the model precomputes the score table T[i, (j,c)] = q_i·k(j,c) and the value table o(j,c).
#ifndef ATTNMECH_POTTS_MIXED_H
#define ATTNMECH_POTTS_MIXED_H

#include <attnmech/rng.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace am::potts {

class MixedModel {
 public:
  MixedModel(int L, int C, int d, double a);
  size_t n_params() const { return off_end_; }
  int L() const { return L_; }
  int C() const { return C_; }
  int d() const { return d_; }
  double a() const { return a_; }
  // Bytes of the model's tables (queries, keys, values, scores and their gradients) from the sizes alone.
  static double work_bytes(int L, int C, int d) {
    const double LC = (double)L * C;
    return 8.0 * (2.0 * L * d + 4.0 * LC * d + 2.0 * LC * C + 2.0 * L * LC);
  }
  // Parameters of a model of these sizes (n_params() without building one).
  static double params(int L, int C, int d) { return (double)L * d + (C + 1.0) * d + 3.0 * d * d + (double)C * d; }
  // Small random initialisation (N(0, scale²) entries).
  void init(double *theta, am_rng *rng, double scale = 0.1) const;
  // Mean negative log pseudo-likelihood + (l2/2)‖θ‖²; gradient into grad if non-null.
  double loss(const double *theta, const int32_t *tokens, size_t M, double *grad, double l2 = 0.0);
  // Effective collapsed parameters at a = 0 (W: L×L col-major, V: C×C col-major); for a ≠ 0 the
  // attention depends on the tokens and this gives the a = 0 part only.
  void collapsed(const double *theta, double *W, double *V) const;
  // Mean attention matrix over a sample (row i = attention of the scored site i), L×L col-major.
  void mean_attention(const double *theta, const int32_t *tokens, size_t M, double *Abar);

 private:
  struct SiteScratch {
    std::vector<double> A, dA, z, p;  // L, L, C, C
  };
  void tables(const double *theta);
  double site_loss(const int32_t *s, int i, double scale, bool grad, SiteScratch &w);
  void query_gradients(const double *theta, double *grad) const;
  void key_gradients(const double *theta, int j, int c, double *grad, std::vector<double> &dk,
                     std::vector<double> &din) const;
  void value_gradients(const double *theta, int j, int c, double *grad, std::vector<double> &dv,
                       std::vector<double> &din) const;
  int L_, C_, d_;
  double a_;
  size_t oP_, oE_, oQ_, oK_, oV_, oO_, off_end_;
  std::vector<double> q_, k_, v_, o_, T_, dT_, dO_, qin_, kin_, vin_;
};

}  // namespace am::potts
#endif
