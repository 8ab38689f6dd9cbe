// The executors of the theory estimator (plugins/common/attention/executor.hpp) in one process: the serial
// executor's kernels phase against libcore's own calls (the same bits: it is those calls), the host's setting
// choosing it (AM_DISTRIBUTE_OFF, and AUTO outside an MPI job), and the estimator's records the same bits under
// either setting here. The distributed executor against the serial one: tests/plugins/common/scalapack.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "estimate.hpp"
#include "executor.hpp"
#include "random_dataset.hpp"

namespace {

struct Context {
  am_context *c = nullptr;
  explicit Context(int distribute) {
    am_context_settings s;
    am_context_default_settings(&s);
    s.distribute = distribute;
    am_context_create(&c, &s);
  }
  ~Context() { am_context_destroy(&c); }
};

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("serial executor: the kernels phase is libcore's kernel, block, minimum and alignment") {
  // The alignment is am_theory_alignment's (from the kernel's factor when N0·H_tot < P): the same bits whether
  // the executor also builds the kernel (blocks asked) or not.
  am_record *ds = am_test::random_dataset(70, 0, 20, 5);
  REQUIRE(ds);
  am::attention::PathInputs xi;
  REQUIRE(am::attention::load_path_inputs(nullptr, ds, &xi) == AM_OK);
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  am_record *none = nullptr;
  REQUIRE(am_record_create(&none) == AM_OK);
  REQUIRE(am_dataset_arch_for(nullptr, ds, none, &arch, &T) == AM_OK);
  const size_t P = xi.P, N0 = xi.N0, H = am_arch_paths(&arch), k = 4;
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(nullptr, &th, &arch, P, N0, xi.train.xi.get(), xi.train.y.get(), T) == AM_OK);
  const std::unique_ptr<am::attention::Executor> ex = am::attention::serial_executor();
  REQUIRE(ex->attach(nullptr, th, P, N0, H, xi.train.xi.get(), xi.train.y.get(), true) == AM_OK);
  CHECK(ex->share().empty());
  CHECK(ex->makes_kernels(true));
  CHECK(ex->makes_kernels(false));
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  U[1] += 0.25;  // off the GP point: an asymmetric U_1 would not do, so perturb one pair symmetrically
  U[H] += 0.25;

  std::vector<double> K(P * P), o(k), e(k), o_ref(k), e_ref(k), o_whole(k), e_whole(k);
  REQUIRE(am_theory_kernel(nullptr, th, U.data(), K.data()) == AM_OK);
  REQUIRE(am_theory_alignment(nullptr, th, U.data(), nullptr, k, o_ref.data(), e_ref.data()) == AM_OK);
  // libcore's two routes agree to rounding (tests/libcore/test_metrics.cpp derives the bound); here a loose check
  // that the executor's numbers are the kernel's: 1e-10 relative, far above rounding at this size.
  REQUIRE(am_kernel_alignment(nullptr, K.data(), P, P, xi.train.y.get(), k, o_whole.data(), e_whole.data()) == AM_OK);
  for (size_t i = 0; i < k; ++i) {
    CHECK(e_ref[i] == doctest::Approx(e_whole[i]).epsilon(1e-10));
    CHECK(o_ref[i] == doctest::Approx(o_whole[i]).epsilon(1e-10));
  }
  const std::vector<size_t> examples{0, 3, 4, 69};
  std::vector<double> block(16), whole(P * P);
  am::attention::KernelOut out;
  out.block = block.data();
  out.overlaps = o.data();
  out.eigenvalues = e.data();
  REQUIRE(ex->kernel(nullptr, U.data(), examples, k, &out) == AM_OK);
  CHECK(same_bits(o, o_ref));
  CHECK(same_bits(e, e_ref));
  CHECK(e[0] >= e[1]);
  double lo = INFINITY;
  for (double x : K) lo = std::min(lo, x);
  CHECK(out.min == lo);
  for (size_t b = 0; b < 4; ++b)
    for (size_t a = 0; a < 4; ++a) CHECK(block[a + 4 * b] == K[examples[a] + P * examples[b]]);
  out.whole = whole.data();  // the caller's storage: the kernel itself
  REQUIRE(ex->kernel(nullptr, U.data(), {}, 0, &out) == AM_OK);
  CHECK(same_bits(whole, K));
  out.whole = nullptr;  // the alignment alone (no kernel stored, no block): the same numbers
  std::fill(o.begin(), o.end(), -1.0);
  REQUIRE(ex->kernel(nullptr, U.data(), {}, k, &out) == AM_OK);
  CHECK(same_bits(o, o_ref));
  out.whole = whole.data();

  std::vector<double> C(P * P);
  for (size_t p : {size_t(0), H - 1}) {
    REQUIRE(am_prekernel(nullptr, N0, H, P, xi.train.xi.get(), p, p, C.data(), P) == AM_OK);
    REQUIRE(ex->prekernel(nullptr, p, {}, &out) == AM_OK);
    CHECK(same_bits(whole, C));
    out.whole = nullptr;
    REQUIRE(ex->prekernel(nullptr, p, examples, &out) == AM_OK);
    CHECK(block[1 + 4 * 2] == C[3 + P * 4]);
    out.whole = whole.data();
  }
  am_theory_destroy(&th);
  am_record_destroy(&none);
  am_record_destroy(&ds);
}

TEST_CASE("the host's setting: AM_DISTRIBUTE_OFF keeps a run serial; outside an MPI job AUTO is serial too") {
  const Context off(AM_DISTRIBUTE_OFF), aut(AM_DISTRIBUTE_AUTO);
  REQUIRE(am_context_distribute(off.c) == AM_DISTRIBUTE_OFF);
  for (am_context *c : {off.c, aut.c, static_cast<am_context *>(nullptr)}) {
    const std::unique_ptr<am::attention::Executor> ex = am::attention::make_executor(c);
    CHECK(ex->share().empty());  // the serial executor: no rank's share in its memory message
    CHECK(ex->makes_kernels(true));
  }
  // the estimator's records under either setting: the same bits (one process, the same serial work)
  am_record *ds = am_test::random_dataset(60, 30, 30, 9), *inputs = nullptr, *a = nullptr, *b = nullptr;
  REQUIRE(am_record_create(&inputs) == AM_OK);
  REQUIRE(am_record_create(&a) == AM_OK);
  REQUIRE(am_record_create(&b) == AM_OK);
  am::attention::Options opt;
  opt.store_kernels = true;
  opt.alignment_k = 5;
  REQUIRE(am::attention::estimate(off.c, ds, inputs, opt, a) == AM_OK);
  REQUIRE(am::attention::estimate(aut.c, ds, inputs, opt, b) == AM_OK);
  std::vector<std::string> diffs;
  am_test::compare_records(a, b, "run", "", am_test::Tolerance{true, 0}, &diffs);
  for (const auto &d : diffs) FAIL_CHECK(d);
  CHECK(diffs.empty());
  CHECK(am_record_get(a, "kernels") != nullptr);
  CHECK(am_record_get(a, "temperature_scan") != nullptr);
  am_record_destroy(&a);
  am_record_destroy(&b);
  am_record_destroy(&inputs);
  am_record_destroy(&ds);
}

// The run's predictions are made with the factor of Γ its handle keeps — the solve's last one at the solution, then
// the GP point's for the GP predictions on every split and the GP action — not a factor built for each: they must
// be the bits a fresh handle gives with a factor of its own, at the run's U_1 and temperature.
TEST_CASE("the run's predictions with the solve's kept factor of Γ are a fresh handle's bits") {
  am_record *ds = am_test::random_dataset(60, 30, 30, 9), *inputs = nullptr, *run = nullptr, *none = nullptr;
  REQUIRE(ds);
  REQUIRE(am_record_create(&inputs) == AM_OK);
  REQUIRE(am_record_create(&run) == AM_OK);
  REQUIRE(am_record_create(&none) == AM_OK);
  am::attention::PathInputs xi;
  REQUIRE(am::attention::load_path_inputs(nullptr, ds, &xi) == AM_OK);
  am::attention::Options opt;
  REQUIRE(am::attention::estimate(nullptr, ds, inputs, xi, opt, run) == AM_OK);
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE(am_dataset_arch_for(nullptr, ds, none, &arch, &T) == AM_OK);
  REQUIRE(am_record_get_number(run, "temperature", &T) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(nullptr, &th, &arch, xi.P, xi.N0, xi.train.xi.get(), xi.train.y.get(), T) == AM_OK);
  const size_t H = am_arch_paths(&arch);
  std::vector<double> U1(H * H), Ugp(am_theory_u_size(th));
  am_array_view v;
  REQUIRE(am_record_array(am_record_at(am_record_get(run, "U"), 0), &v) == AM_OK);
  REQUIRE((v.dtype == AM_F64 && v.ndim == 2 && v.shape[0] == H && v.shape[1] == H));
  std::memcpy(U1.data(), v.data, H * H * sizeof(double));  // symmetric to the bit (the solve's U_l are)
  am_theory_gp_point(th, Ugp.data());
  const am_record *gp = am_record_get(run, "gp");
  size_t checked = 0;
  for (const am::attention::Split *s : {&xi.test, &xi.val}) {
    REQUIRE(s->n > 0);
    for (const am_record *obj : {am_record_get(run, s->name), am_record_get(gp, s->name)}) {
      std::vector<double> mean(s->n), var(s->n), rmean(s->n), rvar(s->n);
      const double *at = obj == am_record_get(run, s->name) ? U1.data() : Ugp.data();
      am_theory_release(th);  // a factor of its own for each
      REQUIRE(am_theory_predict(nullptr, th, at, s->n, s->xi.get(), mean.data(), var.data()) == AM_OK);
      size_t n = 0;
      REQUIRE(am_record_get_vector(obj, "mean", rmean.data(), s->n, &n) == AM_OK);
      REQUIRE(am_record_get_vector(obj, "var", rvar.data(), s->n, &n) == AM_OK);
      CHECK(same_bits(mean, rmean));
      CHECK(same_bits(var, rvar));
      ++checked;
    }
  }
  CHECK(checked == 4);
  am_action a{};
  a.struct_size = sizeof a;
  am_theory_release(th);
  REQUIRE(am_theory_action(nullptr, th, Ugp.data(), &a, nullptr, nullptr) == AM_OK);
  double gp_action = 0;
  REQUIRE(am_record_get_number(gp, "action", &gp_action) == AM_OK);
  CHECK(std::memcmp(&gp_action, &a.S_code, sizeof(double)) == 0);
  am_theory_destroy(&th);
  for (am_record **r : {&none, &run, &inputs, &ds}) am_record_destroy(r);
}
