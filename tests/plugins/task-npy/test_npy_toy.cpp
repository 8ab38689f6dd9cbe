// The npy task reproduces the deterministic toy problem of spec §8.0 read back from .npy files.
#include <doctest/doctest.h>

#include "npy_test_util.h"
#include "../../newton_distance.hpp"
#include "estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

using namespace npy_test;

namespace {

// §8.0 numbers are quoted to 10 significant digits: compare to 1e-8 relative. Values at the optimum that move to
// first order with U are compared at the solve's point polished by one Newton step (newton_distance.hpp): where a
// solve stops within its stopping rule depends on the float path, the polished point does not.
constexpr double kRel = 1e-8;

struct FreeDel {
  double *p = nullptr;
  ~FreeDel() { am_free(p); }
};

am_head head_of(const am_record *ds, const char *key, std::vector<double> &store) {
  am_array_view v;
  REQUIRE(am_record_get_array(am_record_get(ds, "attention"), key, &v) == AM_OK);
  REQUIRE(am_array_view_count(&v) == kN0 * kN0);
  store.resize(kN0 * kN0);
  REQUIRE(am_array_to_f64_fortran(nullptr, &v, store.data(), store.size()) == AM_OK);  // W(i,j) at i + N0 j
  am_head h{};
  h.struct_size = sizeof h;
  h.form = AM_HEAD_BILINEAR;
  h.W = store.data();
  return h;
}

}  // namespace

TEST_CASE("npy task: spec §8.0 toy problem from files (attention, kernels, GP point, optimum, predictions)") {
  TempDir dir("toy");
  write_toy(dir.path);
  Ctx ctx;
  Rec ds, ex;
  REQUIRE_MESSAGE(am::npy_task::load_problem(ctx, dir.path.string().c_str(), ds, ex) == AM_OK, ctx.err());
  CHECK(ctx.warnings.empty());

  // X example 0 as N0×S column-major
  am_array_view xv;
  REQUIRE(am_record_get_array(ds, "X_train", &xv) == AM_OK);
  REQUIRE(xv.ndim == 3);
  CHECK(xv.shape[0] == kP);
  CHECK(xv.shape[1] == kS);
  CHECK(xv.shape[2] == kN0);
  std::vector<double> X(kP * kS * kN0);
  REQUIRE(am_array_to_f64_c(ctx, &xv, X.data(), X.size()) == AM_OK);

  // attention
  std::vector<double> w12, w22, Om(kS * kS);
  const am_head h12 = head_of(ds, "l1_h2", w12), h22 = head_of(ds, "l2_h2", w22);
  REQUIRE(am_attention(ctx, &h12, kN0, kS, X.data(), Om.data()) == AM_OK);
  const double om12[4] = {0.1946691263, 0.2213198741, 0.2622642466, 0.3217467529};
  for (size_t s = 0; s < 4; ++s) CHECK(Om[s + kS * 3] == doctest::Approx(om12[s]).epsilon(kRel));
  REQUIRE(am_attention(ctx, &h22, kN0, kS, X.data(), Om.data()) == AM_OK);
  const double om22[4] = {0.2388781910, 0.2564094002, 0.2589000510, 0.2458123579};
  for (size_t s = 0; s < 4; ++s) CHECK(Om[s + kS * 3] == doctest::Approx(om22[s]).epsilon(kRel));

  // ξ, pre-kernels, GP kernel
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE_MESSAGE(am_dataset_arch(ctx, ds, &arch, &T) == AM_OK, ctx.err());
  CHECK(T == 0.1);
  CHECK(arch.widths[2] == 5.0);
  CHECK(arch.variances[3] == 1.5);
  FreeDel xi, y, xit, yt;
  size_t P = 0, N0 = 0, Pt = 0, N0t = 0;
  REQUIRE_MESSAGE(am_dataset_xi(ctx, ds, "train", &xi.p, &P, &N0, &y.p) == AM_OK, ctx.err());
  REQUIRE_MESSAGE(am_dataset_xi(ctx, ds, "test", &xit.p, &Pt, &N0t, &yt.p) == AM_OK, ctx.err());
  REQUIRE(P == kP);
  REQUIRE(Pt == 2);
  const double c01[16] = {0.7371729952, 0.7418392108, 0.6524568142, 0.6496618229, 0.7371670400, 0.7418331765,
                          0.6524522812, 0.6496573364, 0.7256883954, 0.7302142831, 0.6434970746, 0.6407846116,
                          0.7256827851, 0.7302086022, 0.6434927347, 0.6407803131};
  std::vector<double> C(P * P), K(P * P);
  for (size_t pi = 0; pi < 4; ++pi)
    for (size_t pj = 0; pj < 4; ++pj) {
      REQUIRE(am_prekernel(ctx, N0, 4, P, xi.p, pi, pj, C.data(), P) == AM_OK);
      CHECK(C[0 + P * 1] == doctest::Approx(c01[pi * 4 + pj]).epsilon(kRel));
    }
  REQUIRE(am_kernel_gp(ctx, &arch, N0, P, xi.p, K.data(), P) == AM_OK);
  CHECK(K[0] == doctest::Approx(1.5685379487).epsilon(kRel));
  CHECK(K[0 + P * 1] == doctest::Approx(0.9947820814).epsilon(kRel));
  CHECK(K[7 + P * 7] == doctest::Approx(0.9281642090).epsilon(kRel));

  // theory at the GP point and at the optimum
  am_theory *th = nullptr;
  REQUIRE_MESSAGE(am_theory_create(ctx, &th, &arch, P, N0, xi.p, y.p, T) == AM_OK, ctx.err());
  std::vector<double> U(am_theory_u_size(th));
  REQUIRE(U.size() == 16 + 4);
  am_theory_gp_point(th, U.data());
  CHECK(U[0] == doctest::Approx(1.44).epsilon(1e-14));
  CHECK(U[am_theory_u_offset(th, 2)] == doctest::Approx(1.8).epsilon(1e-14));
  am_action act{sizeof(am_action)};
  REQUIRE(am_theory_action(ctx, th, U.data(), &act, nullptr, nullptr) == AM_OK);
  CHECK(act.U_a == doctest::Approx(1.5).epsilon(kRel));
  CHECK(act.energy == doctest::Approx(13.5053894435).epsilon(kRel));
  CHECK(act.entropy == doctest::Approx(4.8383649242).epsilon(kRel));
  double mean[2], var[2];
  REQUIRE(am_theory_predict(ctx, th, U.data(), 2, xit.p, mean, var) == AM_OK);
  CHECK(mean[0] == doctest::Approx(0.0304151423).epsilon(kRel));
  CHECK(mean[1] == doctest::Approx(0.0461470535).epsilon(kRel));
  CHECK(var[0] == doctest::Approx(0.0444232627).epsilon(kRel));
  CHECK(var[1] == doctest::Approx(0.0281440447).epsilon(kRel));

  am_solve_settings ss;
  am_solve_default_settings(&ss);
  am_solve_report rep{sizeof(am_solve_report)};
  const am_status st = am_theory_solve(ctx, th, &ss, U.data(), &rep);
  REQUIRE_MESSAGE((st == AM_OK || st == AM_CONVERGED_ROUNDOFF), ctx.err());
  CHECK(rep.S_code == doctest::Approx(18.0688248255).epsilon(kRel));  // second order in the solve's distance
  const double dist = newton_test::distance(th, arch, U.data());
  // the stopping rule's promise on the distance: |g|₂ ≤ 2√n·grad_tol·|S| over λ_min, for the gradient test
  if (st == AM_OK) CHECK(dist <= 2 * 2 * std::sqrt(13.0) * 1e-10 * std::max(1.0, rep.S_code) / rep.hessian_min_eig);
  const std::vector<double> Up = newton_test::polished(th, arch, U.data());
  for (size_t k = 0; k < U.size(); ++k) CHECK(std::fabs(U[k] - Up[k]) <= dist);
  U = Up;
  REQUIRE(am_theory_action(ctx, th, U.data(), &act, nullptr, nullptr) == AM_OK);
  CHECK(act.energy == doctest::Approx(12.9676230395).epsilon(kRel));
  CHECK(act.entropy == doctest::Approx(5.1012017860).epsilon(kRel));
  CHECK(act.U_a == doctest::Approx(1.0475780679).epsilon(kRel));
  const double U1[4][4] = {{0.7318460984, -0.2725306110, -0.0830667920, -0.0839248157},
                           {-0.2725306110, 0.7350104702, -0.0839158764, -0.0850046155},
                           {-0.0830667920, -0.0839158764, 0.7397422973, -0.2645758283},
                           {-0.0839248157, -0.0850046155, -0.2645758283, 0.7430133959}};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) CHECK(U[i + 4 * j] == doctest::Approx(U1[i][j]).epsilon(kRel));
  const double *U2 = &U[am_theory_u_offset(th, 2)];
  CHECK(U2[0] == doctest::Approx(1.0186990960).epsilon(kRel));
  CHECK(U2[1] == doctest::Approx(-0.2371839952).epsilon(kRel));
  CHECK(U2[3] == doctest::Approx(1.0215409733).epsilon(kRel));
  REQUIRE(am_theory_predict(ctx, th, U.data(), 2, xit.p, mean, var) == AM_OK);
  CHECK(mean[0] == doctest::Approx(0.0252733611).epsilon(kRel));
  CHECK(mean[1] == doctest::Approx(0.0410944365).epsilon(kRel));
  CHECK(var[0] == doctest::Approx(0.0396383702).epsilon(kRel));
  CHECK(var[1] == doctest::Approx(0.0253947502).epsilon(kRel));
  am_theory_destroy(&th);

  // the whole estimator on the loaded dataset
  const am::attention::Options opt;
  Rec run, inputs;
  const am_status est = am::attention::estimate(ctx, ds, inputs, opt, run);
  REQUIRE_MESSAGE(est == AM_OK, ctx.err());
  double S_code = 0, U_a = 0;
  REQUIRE(am_record_get_number(run, "action", &S_code) == AM_OK);
  REQUIRE(am_record_get_number(run, "U_a", &U_a) == AM_OK);
  CHECK(S_code == doctest::Approx(18.0688248255).epsilon(kRel));
  // U_a is first order in the run's distance to the optimum (its report's bound) times |∂U_a/∂v|
  {
    REQUIRE_MESSAGE(am_theory_create(ctx, &th, &arch, P, N0, xi.p, y.p, T) == AM_OK, ctx.err());
    const double d = newton_test::report_distance(run);
    const auto ua = [&](const double *V) {
      am_action a{sizeof a};
      return am_theory_action(nullptr, th, V, &a, nullptr, nullptr) == AM_OK ? a.U_a : NAN;
    };
    CHECK(std::fabs(U_a - 1.0475780679) <= kRel * 1.0475780679 + newton_test::drift(th, arch, U.data(), ua, d));
    am_theory_destroy(&th);
  }

  // extras summary
  double n0 = 0;
  REQUIRE(am_record_get_number(ex, "N0", &n0) == AM_OK);
  CHECK(n0 == 5.0);
}

TEST_CASE("npy task: float32 and Fortran-order inputs are converted; labels may be integers") {
  TempDir dir("f4");
  write_toy(dir.path);
  // X_train as float32: the loaded values are the float-rounded formula values
  std::vector<double> mus(kP);
  for (size_t m = 0; m < kP; ++m) mus[m] = double(m);
  const std::vector<double> X = toy_X(mus);
  REQUIRE(write_npy(dir.path / "X_train.npy", {kP, kS, kN0}, X, AM_F32) == AM_OK);
  Ctx ctx;
  Rec ds;
  REQUIRE_MESSAGE(am::npy_task::load_problem(ctx, dir.path.string().c_str(), ds, nullptr) == AM_OK, ctx.err());
  am_array_view v;
  REQUIRE(am_record_get_array(ds, "X_train", &v) == AM_OK);
  std::vector<double> got(X.size());
  REQUIRE(am_array_to_f64_c(ctx, &v, got.data(), got.size()) == AM_OK);
  for (size_t k = 0; k < X.size(); ++k) CHECK(got[k] == double(float(X[k])));
}
