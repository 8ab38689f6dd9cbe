// potts_core — factored self-attention, collapsed form:
//   A^h = softmax_{j≠i}(W^h_ij),  z_i(a) = Σ_h Σ_{j≠i} A^h_ij V^h_{a s_j},  p(s_i=a|s_\i) = softmax(z_i)_a,
//   loss = -(1/(M L)) Σ_μ Σ_i log p(s^μ_i | s^μ_\i)   (every site scored in one pass)
// Parameters θ = [W^1 .. W^H (L×L col-major), V^1 .. V^H (C×C col-major)]. The diagonal of W is inert
// (its gradient is 0). Loss and analytic gradient are computed in chunks of sequences with three
// dgemm calls per head and chunk (6·M·C·L²·H flops in total; when L > C, through colour counts: 6·M·L·C²·H).
#ifndef ATTNMECH_POTTS_FACTORED_H
#define ATTNMECH_POTTS_FACTORED_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "potts_model.h"

namespace am::potts {

// Row softmax over j ≠ i (A_ii = 0). W, A: L×L column-major.
void attention_from_W(const double *W, int L, double *A);

class FactoredModel {
 public:
  // chunk: sequences per BLAS call (0 = automatic: about 16k doubles per work matrix, from L and C only).
  FactoredModel(int L, int C, int heads = 1, size_t chunk = 0);
  ~FactoredModel();
  size_t n_params() const { return (size_t)H_ * ((size_t)L_ * L_ + (size_t)C_ * C_); }
  int L() const { return L_; }
  int C() const { return C_; }
  int heads() const { return H_; }
  double *W(double *theta, int h) const { return theta + (size_t)h * L_ * L_; }
  double *V(double *theta, int h) const { return theta + (size_t)H_ * L_ * L_ + (size_t)h * C_ * C_; }
  const double *W(const double *theta, int h) const { return theta + (size_t)h * L_ * L_; }
  const double *V(const double *theta, int h) const { return theta + (size_t)H_ * L_ * L_ + (size_t)h * C_ * C_; }

  // The loop over blocks of sequences (the host's, see potts_model.h); empty = serial. Each block of
  // block_size() sequences writes its own partial sums, added in block order: the loss and gradient are the same
  // bits for every thread count and every split of the loop.
  void set_parallel(ParallelFor pf) { pf_ = std::move(pf); }
  size_t block_size() const { return block_; }

  // Mean negative log pseudo-likelihood on M sequences (row-major int32 [M, L]) plus
  // (l2/2)(‖W‖² + ‖V‖²) (off-diagonal W); gradient into grad (n_params) if non-null.
  double loss(const double *theta, const int32_t *tokens, size_t M, double *grad, double l2 = 0.0);
  // Per-site logits z (C values for each (μ, i), stored z[(μ L + i) C + a]) — for checks.
  void logits(const double *theta, const int32_t *tokens, size_t M, double *z);
  // Bytes the model holds after loss+gradient calls on up to M sequences with `workers` concurrent blocks: the
  // attention arrays, each worker's chunk matrices and the per-block partial gradients (memory of the sizes alone).
  static double work_bytes(int L, int C, int heads, size_t M, int workers, size_t chunk = 0);
  // Floating-point operations of one loss+gradient call on M sequences (the dgemm part).
  double flops(size_t M) const {
    return 6.0 * (double)M * C_ * (double)L_ * (counts_ ? (double)C_ : (double)L_) * H_;
  }

 private:
  struct Work;  // per-thread matrices of one chunk
  std::unique_ptr<Work> acquire();
  void release(std::unique_ptr<Work> w);
  void forward_chunk(Work &w, const double *theta, const int32_t *tokens, size_t B) const;
  // Loss (unscaled sum) of sequences [m0, m1) and, with grad, the block's dA (H L²) and dV (H C²) partials.
  double block(Work &w, const double *theta, const int32_t *tokens, size_t m0, size_t m1, double scale,
               double *dA, double *dV) const;
  // The same through colour counts (used when L > C): N^μ_i(b) = Σ_{j: s_j = b} A_ij (L² additions per
  // sequence), z^μ_i = V N^μ_i (one dgemm), dV = Gᵀ N, dN = G V, dA_ij = Σ_μ dN^μ_i(s^μ_j): 6·M·L·C² flops
  // instead of 6·M·C·L².
  double block_counts(Work &w, const double *theta, const int32_t *tokens, size_t m0, size_t m1, double scale,
                      double *dA, double *dV) const;
  // Cross-entropy of R rows of C logits (row r at z + r·C, target tok[r·tok_stride]), added to *part_io in row
  // order (unscaled); with grad the rows become (softmax − onehot)·scale.
  void xent_rows(Work &w, double *z, size_t R, const int32_t *tok, size_t tok_stride, double scale, bool grad,
                 double *part_io) const;
  int L_, C_, H_;
  size_t chunk_, block_;
  ParallelFor pf_;
  bool counts_;                        // colour-count form (L > C)
  std::vector<double> A_, At_, dA_, part_;  // At_: A row-major; part_: per-block partial gradients
  std::vector<double> part_loss_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Work>> pool_;
};

}  // namespace am::potts
#endif
