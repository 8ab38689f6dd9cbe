// attnmech posterior — the network posterior with the input projection V_0 integrated out.
//
// Given the value layers and the readout (everything but V_0), f = Ξ̃ vec(V_0) is linear in V_0 and V_0 has an
// isotropic Gaussian prior, so the train outputs are Gaussian with the kernel of the theory:
//   f ~ N(0, K_U),  K_U = Σ_{ππ'} U_{ππ'} C^{ππ'},  C^{ππ'}_{μν} = ξ^μ_π · ξ^ν_{π'},  U = wᵀw/W_0,
// and y ~ N(0, K_U + T I). The marginal log posterior of θ' = (V^(1..L), a) is
//   log p(θ' | y) = −½ yᵀ(K_U + T I)⁻¹ y − ½ log det(K_U + T I) + log prior(θ') + const,
// which no longer has the O(√T) thin directions of V_0 that force NUTS to its maximum tree depth at small T.
// The path-pair matrices C^{ππ'} are data (computed once, shared read-only by the chains, their lower triangles
// packed); one evaluation builds K's lower triangle (one pass over the H(H+1)/2 stacked packed kernels), factors it
// by Cholesky and back-propagates
//   ∂/∂U_{ππ'} = ½ ⟨α αᵀ − (K_U + T I)⁻¹, C^{ππ'}⟩,  α = (K_U + T I)⁻¹ y
// (the inverse from the factor, spd.h; the inner products over the packed lower triangles, off-diagonal entries
// counted twice) through U = wᵀw/W_0 and the value layers (Network::backward_layers).
// V_0 is drawn from its Gaussian conditional per kept draw (Matheron's rule, no P × (W_0 N_0) factorisation):
//   V_0 = V_0' + s_0 (s_0 W_0)^{−1/2} w Bᵀ,  B_{nπ} = Σ_μ ξ^μ_{πn} β_μ,  β = (K_U + T I)⁻¹ (y − f(V_0') − ε),
// with V_0' a prior draw and ε ~ N(0, T I): so U, predictions and the joint log posterior stay available.
#ifndef ATTNMECH_POSTERIOR_MARGINAL_H
#define ATTNMECH_POSTERIOR_MARGINAL_H

#include "network.h"
#include "simd/spd_kernels.h"

#include <cstddef>
#include <vector>

namespace am::posterior {

// The data part of the marginal model: the path-pair kernels of the training inputs.
class PairKernels {
 public:
  explicit PairKernels(const Network &net);
  // Bytes the pair kernels of a network with P inputs and H paths take (H(H+1)/2 · P(P+1)/2 doubles).
  static double bytes(size_t P, size_t H);
  size_t pairs() const { return pi_.size(); }
  size_t pi(size_t k) const { return pi_[k]; }
  size_t pj(size_t k) const { return pj_[k]; }
  // Entries of one packed lower triangle: P(P+1)/2, column j holding rows j..P−1 (LAPACK's 'L' packed order).
  size_t packed_size() const { return np_; }
  // S_k = C^{ππ} (π = π') or C^{ππ'} + C^{π'π} (π < π'): P × P, symmetric; its packed lower triangle. The
  // triangles of consecutive pairs follow each other (a packed_size() × pairs() matrix, column-major).
  const double *S(size_t k) const { return S_.data() + k * np_; }

 private:
  size_t P_, np_;
  std::vector<size_t> pi_, pj_;
  std::vector<double> S_;
};

class MarginalDensity : public LogDensity {
 public:
  // spd: the small SPD kernels' variant (tests); nullptr = the one in use (simd::spd_kernels()).
  MarginalDensity(const Network &net, const PairKernels &kernels, const simd::SpdKernels *spd = nullptr);
  MarginalDensity(const MarginalDensity &) = delete;  // k_ points into K_
  MarginalDensity &operator=(const MarginalDensity &) = delete;
  // Sampled coordinates: θ without the V_0 block.
  size_t dim() const override { return net_.dim() - v0_size_; }
  double log_density(const double *q, double *grad) override;
  // Full θ for a sampler position q with V_0 drawn from its conditional given q (uses rng). Returns
  // nullptr when K_U + T I is not positive definite at q (cannot happen at a finite accepted point).
  const double *complete(const double *q, am_rng &rng);
  Network::Work &work() { return wk_; }
  // U = wᵀw/W_0 at the last point evaluated (tests).
  const std::vector<double> &U() const { return U_; }

 private:
  // Builds U, K = K_U + T I and its Cholesky factor (lower triangle of K_) for θ_ (q already copied); false if
  // not PD.
  bool factor();
  // L⁻ᵀ L⁻¹ v in place (v: P values), from the factor in K_.
  void solve(double *v) const;
  // g_k = ½ ⟨α αᵀ − K⁻¹, S_k⟩ into u_, given α and K⁻¹'s lower triangle in K_.
  void trace_terms();

  const Network &net_;
  const PairKernels &C_;
  const simd::SpdKernels &spd_;
  size_t v0_size_, P_, H_;
  size_t ldk_;  // K_'s leading dimension: P rounded up for the SPD kernels (simd/spd_kernels.h), padding rows zero
  std::vector<double> theta_, grad_, U_, K_, spd_work_, alpha_, G_, beta_, B_, f_, u_;
  double *k_ = nullptr;  // K (its factor, its inverse) in K_, 64-byte aligned
  Network::Work wk_;
};

}  // namespace am::posterior

#endif
