// attnmech posterior — the Bayesian attention network of the paper (docs/posterior.md) as a log density over all
// value weights and the readout, in the path form of the forward pass.
//
// Path form (derivation in docs/posterior.md). Unrolling the token-wise network,
//   x^(L) r = Σ_π [∏_l (H_l W_{l−1})^{−1/2}] V^(L)_{h_L}⋯V^(1)_{h_1} V_0 X Ω^(1)_{h_1}⋯Ω^(L)_{h_L} r / √N_0
// because each layer multiplies the values on the left and the attention on the right. With
// A_π = Ω^(1)_{h_1}⋯Ω^(L)_{h_L} r, ξ_π = √(s_0/(N_0 H_tot)) X A_π and ∏_l H_l = H_tot this is
//   f(X) = Σ_π w_πᵀ V_0 ξ_π / √(s_0 W_0),   w_π = V^(1)ᵀ_{h_1}⋯V^(L)ᵀ_{h_L} a / √(W_1⋯W_L).
// The effective weights come from the recursion w^(L+1) = a, w^(l)_{(h,π')} = V^(l)ᵀ_h w^(l+1)_{π'}/√W_l
// (h most significant: the packing order of paths), so w = w^(1) is W_0 × H_tot (columns = paths).
// Then Z = V_0ᵀ w (N_0 × H_tot) and f = Ξ vec(Z)/√(s_0 W_0) with Ξ the P × (N_0 H_tot) view of ξ.
//
// Parameter vector θ (one flat array): V_0 (W_0×N_0, col-major), then V^(l)_h for l = 1..L,
// h = 1..H_l (W_l×W_{l−1} each, col-major), then a (W_L).
#ifndef ATTNMECH_POSTERIOR_NETWORK_H
#define ATTNMECH_POSTERIOR_NETWORK_H

#include "nuts.h"

#include <cstddef>
#include <string>
#include <vector>

namespace am::posterior {

struct NetworkSpec {
  size_t L = 1;
  std::vector<size_t> heads;     // H_1..H_L
  std::vector<size_t> widths;    // W_0..W_L (whole numbers)
  std::vector<double> variances; // s_0..s_L, s_a
  double temperature = 1.0;
  size_t N0 = 0;
};

// Widths of the dataset are real numbers in am_arch; the sampler needs whole numbers. Returns an
// empty string on success, else a message naming the offending width.
std::string widths_to_integers(const double *widths, size_t count, std::vector<size_t> &out);

// Fixed data and the sizes of the parameter blocks. Holds ξ (P × N0 × H_tot, P fastest) and y.
class Network {
 public:
  Network(const NetworkSpec &spec, size_t P, const double *xi, const double *y);

  size_t dim() const { return dim_; }
  size_t paths() const { return H_; }
  size_t P() const { return P_; }
  const NetworkSpec &spec() const { return spec_; }
  // Offsets of the blocks in θ.
  size_t offset_v0() const { return 0; }
  size_t offset_v(size_t l, size_t h) const;  // l = 1..L, h = 0..H_l−1
  size_t offset_a() const { return off_a_; }
  size_t readout_dim() const { return spec_.widths[spec_.L]; }

  // Workspace for one thread (the network itself is read-only and shared between chains).
  struct Work {
    std::vector<std::vector<double>> w;   // w[l] = w^(l) (W_{l−1} × D_l), l = 1..L+1 (w[L+1] = a)
    std::vector<std::vector<double>> dw;  // gradients of the same
    std::vector<double> Z, dZ, f, r;
  };
  void init_work(Work &wk) const;

  // log posterior (up to a constant) and its gradient with respect to θ.
  double log_posterior(const double *theta, double *grad, Work &wk) const;
  // Effective weights w = w^(1) (W_0 × H_tot, col-major) into wk.w[1].
  void effective_weights(const double *theta, Work &wk) const;
  // f for Pt inputs given their ξ (Pt × N0 × H_tot); uses wk.
  void predict(const double *theta, size_t Pt, const double *xi, double *f, Work &wk) const;
  // Sampled U = w wᵀ/W_0 (H_tot × H_tot, col-major) for θ.
  void order_parameter(const double *theta, double *U, Work &wk) const;
  // Draw θ from the prior.
  void sample_prior(am_rng &rng, double *theta) const;
  // Back-propagation from dw^(1) (in wk.dw[1]) through the value layers to a: writes the gradients of
  // every V^(l)_h and of a into grad (same offsets as θ), prior terms −θ/s included; V_0's block of grad
  // is not touched. Needs wk.w from effective_weights(theta).
  void backward_layers(const double *theta, double *grad, Work &wk) const;
  // −Σ θ²/2s over the blocks V^(1..L) and a (the prior of everything but V_0, up to a constant).
  double log_prior_layers(const double *theta) const;

  const double *xi() const { return xi_.data(); }  // P × N0 × H_tot, P fastest
  const double *y() const { return y_.data(); }
  double fscale() const { return fscale_; }

 private:
  NetworkSpec spec_;
  size_t P_, H_, dim_ = 0, off_a_ = 0;
  std::vector<size_t> D_;        // D_l, l = 1..L+1
  std::vector<size_t> off_v_;    // start of layer l's blocks (index l)
  std::vector<double> xi_, y_;
  double fscale_;                // 1/√(s_0 W_0)
};

// The log density the sampler sees: either all of θ, or only the readout a with every other weight
// held at `fixed` (the test-only fix_all_but_readout mode).
class NetworkDensity : public LogDensity {
 public:
  NetworkDensity(const Network &net, bool readout_only, const double *fixed_theta);
  size_t dim() const override { return readout_only_ ? net_.readout_dim() : net_.dim(); }
  double log_density(const double *q, double *grad) override;
  // Full θ for a sampler position q.
  const double *full_theta(const double *q);
  Network::Work &work() { return wk_; }

 private:
  const Network &net_;
  bool readout_only_;
  std::vector<double> theta_, grad_;
  Network::Work wk_;
};

}  // namespace am::posterior

#endif
