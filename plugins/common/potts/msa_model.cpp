// potts_core — TEMPORARY stand-in for MsaModel (msa_model.h) on the slow reference of the tests, so that the
// driver builds before the fast implementation lands; replaced by it at the merge.
#include "msa_model.h"

#include <cmath>

#include "../../../tests/plugins/common/potts/msa_reference.hpp"

namespace am::potts {

struct MsaModel::Impl {
  msa_ref::Shape s;
  ParallelFor pf;
};

MsaModel::MsaModel(MsaKind kind, int L, int C, int heads, bool fields)
    : impl_(new Impl), kind_(kind), L_(L), C_(C), H_(kind == MsaKind::Factored ? heads : 0), fields_(fields) {
  impl_->s = {kind == MsaKind::Factored, L, C, H_, fields};
}
MsaModel::~MsaModel() = default;
size_t MsaModel::n_params() const { return msa_ref::n_params(impl_->s); }
void MsaModel::set_parallel(ParallelFor pf) { impl_->pf = std::move(pf); }
double MsaModel::objective(const double *theta, const MsaBatch &b, double lambda_h, double lambda_e, double *grad) {
  return msa_ref::objective(impl_->s, theta, b.M, b.tokens, b.weights, lambda_h, lambda_e, grad);
}
double MsaModel::mean_nll(const double *theta, const MsaBatch &b) {
  return msa_ref::mean_nll(impl_->s, theta, b.M, b.tokens, b.weights);
}
void MsaModel::couplings(const double *theta, double *J) const {
  const auto v = msa_ref::couplings(impl_->s, theta);
  std::copy(v.begin(), v.end(), J);
}
void MsaModel::attention(const double *theta, double *A) const {
  const auto v = msa_ref::attention(impl_->s, theta);
  std::copy(v.begin(), v.end(), A);
}
void MsaModel::init(double *theta, const MsaBatch &b, const am_rng &rng_in, double init_scale) const {
  std::fill(theta, theta + n_params(), 0.0);
  if (fields_) {
    std::vector<double> n((size_t)L_ * C_, 0.0);
    for (size_t mu = 0; mu < b.M; ++mu)
      for (int i = 0; i < L_; ++i)
        if (b.tokens[mu * L_ + i] >= 0) n[(size_t)i * C_ + b.tokens[mu * L_ + i]] += b.weights ? b.weights[mu] : 1.0;
    for (int i = 0; i < L_; ++i) {
      double m = 0.0;
      for (int a = 0; a < C_; ++a) m += (theta[(size_t)i * C_ + a] = std::log(n[(size_t)i * C_ + a] + 1.0));
      for (int a = 0; a < C_; ++a) theta[(size_t)i * C_ + a] -= m / C_;
    }
  }
  if (kind_ != MsaKind::Factored) return;
  am_rng rng = rng_in;
  double *V = theta + msa_ref::v_offset(impl_->s, 0);
  am_rng_fill_normal(&rng, V, (size_t)H_ * C_ * C_);
  for (size_t k = 0; k < (size_t)H_ * C_ * C_; ++k) V[k] *= init_scale;
}
double MsaModel::flops(size_t M) const { return 4.0 * M * L_ * L_ * C_ + 6.0 * L_ * L_ * C_ * C_ * H_; }

}  // namespace am::potts
