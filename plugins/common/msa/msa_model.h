// msa_core — weighted pseudo-likelihood of a sequence alignment with single-site fields, for two
// parametrisations of the couplings (docs/msa.md):
//   factored:  J_ij(a, b) = Σ_h A^h_ij V^h_ab,  A^h = softmax_{j≠i}(W^h_ij)   (factored attention, directional:
//              J_ij is what site j contributes to site i's conditional; J_ii = 0)
//   potts:     J_ij(a, b) free with J_ji(b, a) = J_ij(a, b)   (the symmetric Potts model plmc fits)
// Conditional of site i in sequence μ (missing tokens, < 0, are neither scored nor context):
//   p(s_i = a | s_\i) = softmax_a( h_i(a) + Σ_{j≠i, s_j ≥ 0} J_ij(a, s_j) )
// Objective (plmc's, divided by the weight of the scored tokens N = Σ_μ w_μ · #{i : s^μ_i ≥ 0}):
//   f = [ −Σ_μ w_μ Σ_{i: s_i ≥ 0} log p(s^μ_i | s^μ_\i) + λ_h Σ_ia h_i(a)² + (λ_e/2) Σ_{i≠j} Σ_ab J_ij(a,b)² ] / N
// (for a symmetric J the coupling penalty is plmc's λ_e Σ_{i<j} ‖e_ij‖²; λ_h = 0.01, λ_e = 16 are plmc's test
// settings). The penalty is on the couplings the model makes, for both parametrisations.
// The loss and gradient cost that of a Potts model (2·M·L²·C additions for the conditionals and as many for the
// gradient) plus, for the factored model, three products of H-sized matrices (6·L²·C²·H flops) — nearly independent
// of the number of heads. The Potts model goes through its dense couplings J (L·L·C·C); the factored model streams
// them: per block of sites I, J_I = Σ_h A^h_I ⊗ V^h, the block's conditionals, its gradient dJ_I and the scatter
// back into dA and dV (msa_model.cpp), so it holds O(H·(L² + C²)) doubles plus O(|I|·L·C²) per worker (3.9).
#ifndef ATTNMECH_MSA_MODEL_H
#define ATTNMECH_MSA_MODEL_H

#include <attnmech/rng.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "potts_model.h"

namespace am::msa {

using potts::ParallelFor;  // the host's loop, and run_parallel over it (potts_model.h)

// The order in which a batch's sequences are visited, and between consecutive ones the sites whose token
// changes. Sequences of an alignment share most tokens with a near neighbour (on DHFR consecutive sequences of
// the greedy chain differ at 20 % of the sites), so a sequence's conditionals are the previous one's plus the
// rows that changed, and the gradient is scattered at the changes only (prefix sums of the residuals): the work
// falls to about that fraction. A full gather and flush every `block` visits bounds the round-off.
struct MsaPlan {
  std::vector<size_t> order;       // visiting order (a permutation of 0..M−1)
  std::vector<size_t> diff_begin;  // M + 1 entries: visit k's changed sites are diff_site[diff_begin[k] .. [k+1])
  std::vector<int> diff_site;
};

// (sequences placed, M) about every quarter of a second; true stops the planning (an empty plan is returned).
using PlanProgress = std::function<bool(double done, double total)>;

// Greedy nearest-neighbour chain (Hamming distance over the sites, missing = its own letter) within windows of
// `window` sequences of the input order (O(M·window·L) work, on the loop `pf`; ties go to the lower index, so the
// plan does not depend on the thread count). An empty plan (order.size() != M) when `progress` stopped it.
MsaPlan make_msa_plan(const int32_t *tokens, size_t M, int L, const ParallelFor &pf, size_t window = 4096,
                      const PlanProgress &progress = {});

// Sequences to score: tokens row-major int32 [M, L], colours 0..C−1, −1 = missing (a gap with gaps=missing);
// weights [M] (NULL = all 1); plan (NULL = visit in order, a full gather per sequence) made for these tokens.
struct MsaBatch {
  size_t M = 0;
  const int32_t *tokens = nullptr;
  const double *weights = nullptr;
  const MsaPlan *plan = nullptr;
};

enum class MsaKind { Factored, Potts };

class MsaModel {
 public:
  // fields = false: h ≡ 0 (not in θ).
  MsaModel(MsaKind kind, int L, int C, int heads, bool fields);
  ~MsaModel();
  MsaKind kind() const { return kind_; }
  int L() const { return L_; }
  int C() const { return C_; }
  int heads() const { return H_; }
  bool has_fields() const { return fields_; }
  // θ = [h (L×C, h[i·C + a]) if fields] then
  //   factored: W^1..W^H (each L×L, W[i·L + j], row i = site i's attention logits), V^1..V^H (each C×C, V[a·C + b])
  //   potts:    e_ij for i < j in the order (0,1), (0,2), …, (1,2), …, each C×C e[a·C + b] = J_ij(a, b)
  size_t n_params() const;
  size_t fields_size() const { return fields_ ? (size_t)L_ * C_ : 0; }

  // Factored only: use the symmetric couplings (J_ij(a,b) + J_ji(b,a))/2 in the conditionals and the penalty —
  // a Potts model made of attention heads (default off: the directional model above).
  void set_symmetric(bool on) { symmetric_ = on && kind_ == MsaKind::Factored; }
  bool symmetric() const { return symmetric_; }
  // Factored only: A^h = softmax_{j≠i}(s · W^h_ij) (default s = 1). The scale is a preconditioner for the optimiser:
  // from W = 0 the attention logits' gradients are 1/L of the values' and L-BFGS moves them too slowly; s ≈ L/8
  // balances the two (docs/msa.md gives the measurements).
  void set_logit_scale(double s) { logit_scale_ = s; }
  double logit_scale() const { return logit_scale_; }

  // The loop over blocks of sequences (the host's); empty = serial. Partial sums are added in block order:
  // the same bits for every thread count.
  void set_parallel(ParallelFor pf);
  // Factored: sites per block of the streamed couplings (0 = automatic: the block's couplings and their gradient
  // within about 1 MB, at least one site). The sums do not depend on it beyond round-off. (3.9)
  void set_site_block(size_t sites);
  size_t site_block() const;

  // f(θ) as above (λ in plmc's units); gradient into grad (n_params) when non-null.
  double objective(const double *theta, const MsaBatch &b, double lambda_h, double lambda_e, double *grad);
  // Weighted mean −log p over the scored tokens (no penalty): the train/test loss reported.
  double mean_nll(const double *theta, const MsaBatch &b);

  // The couplings the model makes: J[((i·L + j)·C + a)·C + b] = J_ij(a, b), J_ii = 0 (L·L·C·C doubles).
  void couplings(const double *theta, double *J) const;
  // Factored: the symmetrised couplings row by row without the L·L·C·C table (3.9): the returned function, valid
  // while the model lives and until its next call, writes J̃_ij(a, b) = (J_ij(a, b) + J_ji(b, a))/2 at
  // out[((j − i − 1)·C + a)·C + b] for j = i + 1 .. L − 1 (one (L − i − 1) × 2H by 2H × C² product per row).
  std::function<void(int i, double *out)> pair_rows(const double *theta);
  // Attention maps A^h (H·L·L, A[(h·L + i)·L + j]); factored only.
  void attention(const double *theta, double *A) const;

  // Starting point: h from the weighted single-site frequencies (log(f_i(a)·Neff + 1), zero-sum over a, as plmc
  // starts), W = 0, V ~ N(0, init_scale²) from `rng`, e = 0.
  void init(double *theta, const MsaBatch &b, const am_rng &rng, double init_scale) const;

  // Floating-point work of one objective+gradient call on M sequences (the count the benchmark divides by).
  double flops(size_t M) const;

  // Bytes the model holds once it has scored batches of up to M_max sequences (Potts: the coupling tables Jt and
  // Gt; factored: the heads' attention and its gradient, the values and the groups' partial value gradients; the
  // batch's row offsets) — what the constructor and the first call allocate, from the sizes alone (fit_memory.h
  // adds the rest of a fit). symmetric: the factored model with set_symmetric (twice the heads in the product).
  static double work_bytes(MsaKind kind, int L, int C, int heads, size_t M_max, bool symmetric = false);
  // Bytes one objective or mean_nll call allocates and frees again: the visits of a batch of M sequences whose plan
  // has D changed sites in all (D ≤ (M − 1)·L) and every worker's logits (factored: and its block's couplings and
  // their gradient).
  static double call_bytes(MsaKind kind, int L, int C, size_t M, double D, int workers);
  // Parameters of a model of these sizes (n_params() without building one).
  static double params(MsaKind kind, int L, int C, int heads, bool fields);

  struct Impl;  // the work arrays (msa_model.cpp)

 private:
  double pass(const double *theta, const MsaBatch &b, double N, double lam, bool grad, double *norm2);
  std::unique_ptr<Impl> impl_;
  MsaKind kind_;
  int L_, C_, H_;
  bool fields_;
  bool symmetric_ = false;
  double logit_scale_ = 1.0;
};

}  // namespace am::msa
#endif
