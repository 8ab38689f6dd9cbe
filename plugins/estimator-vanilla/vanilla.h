// estimator "vanilla" — the model: a standard transformer encoder for masked-token prediction:
//   x_i = E[t_i] + P_i  (t_i ∈ {0..C-1} ∪ {MASK = C}, learned positional vectors P_i ∈ R^d)
//   per block: Q = X W_q, K = X W_k, V = X W_v, A = softmax_j(Q Kᵀ/√d), h = LN₁(X + A V W_o + b_o),
//              X' = LN₂(h + GELU(h W₁ + b₁) W₂ + b₂)          (post-LN, single head, hidden 4d)
//   pre_ln: the LayerNorms move onto the branches, the residual stream is never normalised:
//              N = LN₁(X), Q = N W_q, K = N W_k, V = N W_v,  h = X + A V W_o + b_o,
//              X' = h + GELU(LN₂(h) W₁ + b₁) W₂ + b₂,  and a final LN_f before the read-out.
//   read-out at the masked site m: z = X'_m W_out + b_out (pre_ln: LN_f(X')_m),  p(s_m = a | ·) = softmax(z)_a.
// Row-vector convention, all matrices row-major [in × out]. Hand-written backward pass.
#ifndef ATTNMECH_VANILLA_H
#define ATTNMECH_VANILLA_H

#include <attnmech/rng.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace am::vanilla {

struct VanillaConfig {
  int L = 20, C = 20, d = 20, layers = 1, hidden = 0;  // hidden = 0 → 4d
  bool pre_ln = false;  // false: post-LN blocks (the default); true: pre-LN blocks + final LayerNorm
  // Dropout rate p of training passes (inverted dropout: kept units scaled by 1/(1 − p)) at the four places of
  // the common transformer-encoder layer: the attention weights, the attention branch's output, the MLP's hidden
  // units and the MLP branch's output (both branches before their residual sum). Evaluation never drops.
  double dropout = 0.0;
};

class VanillaModel {
 public:
  explicit VanillaModel(const VanillaConfig &cfg, size_t chunk = 128);
  size_t n_params() const { return n_; }
  // Parameters and buffer bytes of a model of this configuration, without building one (chunk as the constructor
  // takes it): the buffers are every layer's activations of one chunk, the backward scratch and the dropout masks.
  static double params(const VanillaConfig &cfg);
  static double work_bytes(const VanillaConfig &cfg, size_t chunk = 128);
  const VanillaConfig &config() const { return cfg_; }
  // Normal(0, 1/fan_in) weights, LayerNorm gains 1, biases 0, embeddings N(0, 1). The post-LN layout is
  // [E, P, layers..., W_out, b_out]; pre_ln appends the final LayerNorm's gain and bias.
  void init(double *theta, am_rng *rng) const;
  // Mean over n examples of −log p(s_m | input with site m masked); example e = (tokens + e*L, mask[e]).
  // Gradient into grad if non-null. If attn_rows is non-null it receives, for each example, row m of the
  // attention matrix of every layer: attn_rows[(e * layers + l) * L + j]. With dropout > 0 and dropout_rng
  // non-null this is a training pass: the dropout masks are drawn from a copy of *dropout_rng (the same state
  // gives the same masks, so a finite-difference check sees one fixed function); otherwise nothing is dropped.
  double loss(const double *theta, const int32_t *tokens, const int32_t *mask, size_t n, double *grad,
              double *attn_rows = nullptr, const am_rng *dropout_rng = nullptr);
  // Full pseudo-likelihood loss (every site masked in turn), like the factored models' loss. mean_attn (if
  // non-null) receives the mean over the M sequences of row i of layer attn_layer's attention when site i is
  // masked (column-major L×L); attn_layer < 0: every layer's map, layers consecutive column-major L×L blocks.
  double pseudo_loss(const double *theta, const int32_t *tokens, size_t M, double *mean_attn = nullptr,
                     int attn_layer = 0);
  // A check pseudo_loss makes between chunks (e.g. the context's cancel flag): once it says stop, pseudo_loss
  // returns NaN at once. Empty (the default): no check.
  void set_stop(std::function<bool()> stop) { stop_ = std::move(stop); }

 private:
  struct Layer {
    size_t Wq, Wk, Wv, Wo, bo, g1, be1, W1, b1, W2, b2, g2, be2;
  };
  void lay_out_parameters();
  void allocate_buffers();
  // Loss (and gradient, times scale) of B examples; the steps below, forward then backward.
  double chunk_loss(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B, double scale,
                    double *grad, double *attn_rows);
  int query_rows(int l) const;
  size_t source_row(int l, size_t e, int t, const int32_t *mask) const;
  void embed(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B);
  void attention_forward(const double *theta, int l, size_t B, const int32_t *mask, double *attn_rows);
  void block_forward(const double *theta, int l, size_t B);
  double readout(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B, double scale,
                 double *grad);
  void block_backward(const double *theta, int l, size_t B, double *grad);
  // The MLP of block l forwards from H_[l]: out = residual + MLP (mlp_backward is its reverse).
  void mlp_forward(const double *theta, int l, size_t nr, const double *residual, double *out);
  // The MLP of block l backwards from dOut (gradient w.r.t. its output, nr rows): grads of W1, b1, W2, b2 and
  // dH_ = beta·dH_ + the gradient w.r.t. its input (both LayerNorm placements share it).
  void mlp_backward(const double *theta, int l, size_t nr, const double *dOut, double beta, double *grad);
  void attention_backward(const double *theta, int l, size_t B, const int32_t *mask, double *grad);
  void attention_core_backward(int l, size_t B);  // dAV_ → dQ_, dK_, dV_
  void attention_branch_backward(const double *theta, int l, size_t nr, double *grad);  // dR_ → W_o, b_o, dAV_
  void block_backward_pre(const double *theta, int l, size_t B, double *grad);
  void attention_backward_pre(const double *theta, int l, size_t B, const int32_t *mask, double *grad);
  void embed_backward(const int32_t *tokens, const int32_t *mask, size_t B, double *grad);
  // Y[n×out] += (X W + b) ⊙ mask (mask null: no dropout, the historical operation order)
  void branch_add(size_t n, int in, int out, const double *X, const double *W, const double *b, double *mask,
                  double *Y);
  void draw_mask(double *m, size_t n);  // dropout factors: 0 with probability p, else 1/(1 − p)
  VanillaConfig cfg_;
  std::function<bool()> stop_;
  size_t chunk_, n_ = 0, oE_ = 0, oP_ = 0, oWout_ = 0, obout_ = 0, ogf_ = 0, obf_ = 0;
  std::vector<Layer> lay_;
  // caches, per layer, for one chunk
  std::vector<std::vector<double>> X_, Xq_, Q_, K_, V_, A_, AV_, R1_, H_, U1_, G1_, R2_, mu1_, rs1_, mu2_, rs2_;
  std::vector<std::vector<double>> Xn_, Xnq_;  // pre_ln: LN₁ of all rows, and of the query rows
  std::vector<double> Xf_, muf_, rsf_, dXn_;     // pre_ln: the final LayerNorm's output and statistics
  std::vector<double> Xout_, dX_, dH_, dU_, dAV_, dQ_, dK_, dV_, dR_, tmp_;
  // dropout (training passes): per layer the masks of the attention weights, the attention branch, the MLP's
  // hidden units and the MLP branch; dT_ = a branch's gradient after its mask
  bool drop_ = false;
  am_rng drng_{};
  std::vector<std::vector<double>> mA_, mO_, mH_, mM_;
  std::vector<double> dT_;
};

}  // namespace am::vanilla
#endif
