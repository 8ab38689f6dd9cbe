// attnmech — the ScaLAPACK engine of the theory (engine.hpp). Γ, ξ, B̃ = L⁻¹Ξ_w and the test kernel are
// block-cyclic over a BLACS grid of all ranks (the squarest nprow × npcol = K); the small results the Newton solve
// needs (log det Γ, yᵀα, b = Ξ_wᵀα, M = B̃ᵀB̃, the predictions) are summed on rank 0 and broadcast, so every rank
// holds the same bits and takes the same Newton steps.
#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "dist.hpp"

namespace am::scalapack {

namespace {

// The engine's user pointer: a shared_ptr to the run's state, which the estimator may hold too (distribute's share).
Shared &state(void *user) { return **static_cast<std::shared_ptr<Shared> *>(user); }

// Γ = K_{U1} + T·I into e.gamma (lower triangle), factored; log det Γ. AM_ERR_SINGULAR as the serial path says it.
am_status factor_gamma(am_context *ctx, Shared &e, const double *U1, double T, double *logdet) {
  e.factored = false;
  build_kernel(e, U1, e.gamma);
  Dist &G = e.gamma;
  for_diagonal(e.g, G, [&](int i, int j) { G.a[i + size_t(j) * G.lld] += T; });
  int info = 0;
  pdpotrf_("L", &e.P, G.a.data(), &kOne, &kOne, G.desc, &info, 1);
  int worst = info;  // pdpotrf's INFO, made the same on every rank
  MPI_Allreduce(&info, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != 0)
    return worst > 0 ? am_context_fail(ctx, AM_ERR_SINGULAR, "K_U + T·I is not positive definite at T = %g (the kernel "
                                       "is numerically singular; raise T)", T)
                     : am_context_fail(ctx, AM_ERR_INTERNAL, "ScaLAPACK pdpotrf refused argument %d", -worst);
  double s = 0;
  for_diagonal(e.g, G, [&](int i, int j) { s += std::log(G.a[i + size_t(j) * G.lld]); });
  sum_all(&s, 1);
  *logdet = 2 * s;
  e.factored = true;
  return AM_OK;
}

// α = Γ⁻¹y from the factor, and yᵀα.
void solve_alpha(Shared &e, double *y_alpha) {
  dist_init(e.g, e.alpha, e.P, 1);
  e.alpha.a = e.y.a;
  int info = 0;
  pdpotrs_("L", &e.P, &kOne, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, e.alpha.a.data(), &kOne, &kOne,
           e.alpha.desc, &info, 1);
  double s = 0;
  for (int i = 0; i < e.alpha.mloc && e.alpha.nloc > 0; ++i) s += e.y.a[i] * e.alpha.a[i];
  sum_all(&s, 1);
  *y_alpha = s;
}

// Γ factored at (U1, T) and α, unless the engine holds them already (the solve's solution, when the predictions
// ask for it): the same operations would give the same bits. Every rank takes the same branch (the same U1 and T).
am_status factor_at(am_context *ctx, Shared &e, const double *U1, double T) {
  const size_t HH = size_t(e.H) * size_t(e.H);
  if (e.factored && e.at_T == T && e.at_U1.size() == HH && std::memcmp(U1, e.at_U1.data(), HH * sizeof(double)) == 0)
    return AM_OK;
  if (am_status st = factor_gamma(ctx, e, U1, T, &e.logdet)) return st;
  solve_alpha(e, &e.y_alpha);
  e.at_U1.assign(U1, U1 + HH);
  e.at_T = T;
  return AM_OK;
}

am_status engine_factor(void *user, am_context *ctx, const double *U1, double T, double *logdet, double *y_alpha) {
  return guarded([&]() -> am_status {
    Shared &e = state(user);
    if (am_status st = factor_at(ctx, e, U1, T)) return st;
    *logdet = e.logdet;
    *y_alpha = e.y_alpha;
    return AM_OK;
  });
}

am_status engine_whiten(void *user, am_context *ctx, double *b, double *M) {
  return guarded([&]() -> am_status {
    Shared &e = state(user);
    if (!e.factored)
      return am_context_fail(ctx, AM_ERR_INTERNAL, "the distributed engine no longer holds the factor of this point");
    const double one = 1.0, zero = 0.0;
    {
      Dist Bt = e.xi, Md;  // B̃ = L⁻¹Ξ_w, then M = B̃ᵀB̃
      pdtrsm_("L", "L", "N", "N", &e.P, &e.NH, &one, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, Bt.a.data(), &kOne,
              &kOne, Bt.desc);
      dist_init(e.g, Md, e.NH, e.NH);
      pdsyrk_("L", "T", &e.NH, &e.P, &one, Bt.a.data(), &kOne, &kOne, Bt.desc, &zero, Md.a.data(), &kOne, &kOne,
              Md.desc);
      Bt = Dist();
      gather(e.g, Md, M, true);
    }
    Dist bd;
    dist_init(e.g, bd, e.NH, 1);
    pdgemm_("T", "N", &e.NH, &kOne, &e.P, &one, e.xi.a.data(), &kOne, &kOne, e.xi.desc, e.alpha.a.data(), &kOne, &kOne,
            e.alpha.desc, &zero, bd.a.data(), &kOne, &kOne, bd.desc);
    gather(e.g, bd, b, false);
    return AM_OK;
  });
}

// mean = kᵀα and quad_t = |L⁻¹k_t|², k = Z_w Ξtest_wᵀ with Z_w = Ξ_w (U1 ⊗ I) (P × Pt, block-cyclic).
void predict_from_factor(Shared &e, const double *U1, int Pt, const double *xi_test, double *mean, double *quad) {
  const double one = 1.0, zero = 0.0;
  Dist k;
  dist_init(e.g, k, e.P, Pt);
  {
    Dist Z, Xt;
    combine_paths(e, U1, false, Z);
    dist_init(e.g, Xt, Pt, e.NH);
    scatter(e.g, Xt, xi_test, size_t(Pt));
    pdgemm_("N", "T", &e.P, &Pt, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, Xt.a.data(), &kOne, &kOne, Xt.desc,
            &zero, k.a.data(), &kOne, &kOne, k.desc);
  }
  Dist md;
  dist_init(e.g, md, Pt, 1);
  pdgemm_("T", "N", &Pt, &kOne, &e.P, &one, k.a.data(), &kOne, &kOne, k.desc, e.alpha.a.data(), &kOne, &kOne,
          e.alpha.desc, &zero, md.a.data(), &kOne, &kOne, md.desc);
  gather(e.g, md, mean, false);
  pdtrsm_("L", "L", "N", "N", &e.P, &Pt, &one, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, k.a.data(), &kOne, &kOne,
          k.desc);
  std::fill(quad, quad + Pt, 0.0);
  for (int j = 0; j < k.nloc; ++j) {
    double s = 0;
    for (int i = 0; i < k.mloc; ++i) s += k.a[i + size_t(j) * k.lld] * k.a[i + size_t(j) * k.lld];
    quad[global_of(j, e.g.nb, e.g.mycol, e.g.npcol)] = s;
  }
  sum_all(quad, size_t(Pt));
}

am_status engine_predict(void *user, am_context *ctx, const double *U1, double T, size_t Pt, const double *xi_test,
                         double *mean, double *quad) {
  return guarded([&]() -> am_status {
    Shared &e = state(user);
    if (Pt > size_t(1) << 30)
      return am_context_fail(ctx, AM_ERR_SHAPE, "%zu test inputs: the distributed predictor takes at most 2^30", Pt);
    if (am_status st = factor_at(ctx, e, U1, T)) return st;
    predict_from_factor(e, U1, int(Pt), xi_test, mean, quad);
    return AM_OK;
  });
}

void engine_release(void *user) { delete static_cast<std::shared_ptr<Shared> *>(user); }

}  // namespace

int rank() {
  int r = 0;
  if (distributing()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int ranks() {
  int k = 1;
  if (distributing()) MPI_Comm_size(MPI_COMM_WORLD, &k);
  return k;
}

bool distributing() {
  int init = 0, fin = 0, size = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return false;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

am_status distribute(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *y,
                     std::shared_ptr<Shared> *share) {
  if (share) share->reset();
  if (!distributing()) return AM_OK;
  const size_t kMax = 0x7fffffff;
  if (P > kMax || N0 * H > kMax)
    return am_context_fail(ctx, AM_ERR_SHAPE, "P = %zu or N0·H = %zu exceeds ScaLAPACK's 32-bit dimensions", P, N0 * H);
  auto *holder = new std::shared_ptr<Shared>();
  guarded([&]() -> am_status {
    *holder = std::make_shared<Shared>();
    Shared &e = **holder;
    e.g = make_grid(am_context_scalapack_block(ctx));
    e.P = int(P);
    e.N0 = int(N0);
    e.H = int(H);
    e.NH = int(N0 * H);
    dist_init(e.g, e.xi, e.P, e.NH);
    scatter(e.g, e.xi, xi, P);
    dist_init(e.g, e.y, e.P, 1);
    scatter(e.g, e.y, y, P);
    return AM_OK;
  });
  am_theory_engine eng{};
  eng.struct_size = sizeof eng;
  eng.user = holder;
  eng.factor = &engine_factor;
  eng.whiten = &engine_whiten;
  eng.predict = &engine_predict;
  eng.release = &engine_release;
  if (share) *share = *holder;
  const am_status st = am_theory_set_engine(ctx, th, &eng);
  if (st) {
    if (share) share->reset();
    engine_release(holder);
  }
  return st;
}

}  // namespace am::scalapack
