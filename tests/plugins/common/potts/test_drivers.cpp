// Task and estimator drivers through records: the dataset the task writes is what the pseudolikelihood estimator
// reads, and the run record carries the documented keys (docs/potts.md) with consistent numbers (the vanilla
// estimator's driver on the same dataset: tests/plugins/estimator-vanilla).
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../../handles.hpp"  // num, vec
#include "potts_estimators.h"
#include "potts_data.h"
#include "test_host.hpp"

using namespace am::potts;

using am_test::num;

namespace {
// The length of the vector at `key` (0 when absent).
size_t vec_len(const am_record *r, const char *key) { return am_test::vec(r, key).size(); }
}  // namespace

TEST_CASE("task potts -> dataset -> pseudolikelihood run record") {
  am_record *ds = nullptr, *ex = nullptr, *run = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  REQUIRE(am_record_create(&ex) == AM_OK);
  REQUIRE(am_record_create(&run) == AM_OK);
  TaskOptions o;
  o.L = 6;
  o.C = 4;
  o.M = 800;
  o.M_test = 1000;
  o.beta = 1.0;  // small L at β=2 often orders (top colour frequency 0.7); β=1 stays paramagnetic
  o.burnin = 60;
  o.equil_chains = 400;
  o.parallel = potts_test::host_threads(2);
  am_rng rng;
  am_rng_init(&rng, 4, 1);
  REQUIRE(make_dataset(nullptr, o, rng, ds, ex) == AM_OK);
  am_array_view v{};
  REQUIRE(am_record_get_array(ds, "tokens", &v) == AM_OK);
  CHECK(v.dtype == AM_I32);
  CHECK(v.shape[0] == 800);
  CHECK(v.shape[1] == 6);
  CHECK(num(ds, "C") == 4);
  const am_record *eq = am_record_get(ex, "equilibration");
  REQUIRE(eq != nullptr);
  CHECK(vec_len(eq, "cond_entropy") == vec_len(eq, "sweeps"));
  CHECK(num(eq, "tau_int_energy") > 0);
  CHECK(am_record_get(ex, "equilibrated") != nullptr);

  SeqData d;
  REQUIRE(read_sequence_dataset(nullptr, ds, 0, &d) == AM_OK);
  CHECK(d.M == 800);
  CHECK(d.M_test == 1000);
  REQUIRE(d.has_truth);
  // ε* recomputed by the estimator equals the task's (same sequences, same conditionals)
  CHECK(d.eps_star == doctest::Approx(num(am_record_get(ds, "truth"), "epsilon_star")).epsilon(1e-12));

  PLOptions po;
  po.curve_every = 5;
  REQUIRE(run_pseudolikelihood(nullptr, po, d, rng, run) == AM_OK);
  for (const char *k : {"epsilon_star", "train_loss", "test_loss", "excess", "recon_error", "v_corr", "M", "L", "C",
                        "beta"})
    CHECK_MESSAGE(am_record_get(run, k) != nullptr, k);
  const double excess = num(run, "excess");
  // test loss ≥ ε* up to the test-set noise; excess of order (L²+C²)/(2ML) = 52/9600 ≈ 5e-3
  CHECK(excess > -0.01);
  CHECK(excess < 0.05);
  CHECK(num(run, "v_corr") > 0.8);
  const am_record *cv = am_record_get(run, "curves");
  REQUIRE(cv != nullptr);
  const size_t nc = vec_len(cv, "epoch");
  CHECK(nc >= 2);
  CHECK(vec_len(cv, "train_loss") == nc);
  CHECK(vec_len(cv, "test_loss") == nc);
  CHECK(vec_len(cv, "recon_error") == nc);
  REQUIRE(am_record_get_array(run, "A", &v) == AM_OK);
  CHECK(v.shape[0] == 6);

  am_record_destroy(&ds);
  am_record_destroy(&ex);
  am_record_destroy(&run);
}

TEST_CASE("FASTA writer uses the 20-letter alphabet") {
  const std::string path = "potts_test_fasta.fasta";
  const int32_t tok[6] = {0, 1, 19, 5, 4, 3};
  REQUIRE(write_fasta(nullptr, path, tok, 2, 3, 20) == AM_OK);
  FILE *f = std::fopen(path.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[256] = {0};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::remove(path.c_str());
  CHECK(std::string(buf, n) == ">seq1\nACY\n>seq2\nGFE\n");
  CHECK(write_fasta(nullptr, path, tok, 2, 3, 21) == AM_ERR_DOMAIN);
}

TEST_CASE("task: a draw that fails the equilibration test is recorded, warned about, and redrawn") {
  am_record *ds = nullptr, *ex = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  REQUIRE(am_record_create(&ex) == AM_OK);
  TaskOptions o;
  o.L = 5;
  o.C = 3;
  o.M = 50;
  o.M_test = 50;
  o.burnin = 20;
  o.equil_chains = 100;
  o.entropy_tol = 1e-15;  // no finite ensemble passes: every draw fails
  o.redraw = true;
  o.max_redraws = 2;
  am_rng rng;
  am_rng_init(&rng, 9, 1);
  REQUIRE(make_dataset(nullptr, o, rng, ds, ex) == AM_OK);
  const am_record *tried = am_record_get(ex, "draws_tried");
  REQUIRE(tried != nullptr);
  CHECK(am_record_size(tried) == 3);  // draw 0 and two redraws
  CHECK(am_record_get(ex, "warning") != nullptr);
  CHECK(am_record_bool(am_record_get(ex, "equilibrated")) == 0);
  CHECK(num(am_record_get(ds, "truth"), "draw") == 2);
  // the draws differ: (J, U) of draw 2 is not that of draw 0
  Model m0, m2;
  REQUIRE(draw_model(nullptr, o, rng, 0, &m0) == AM_OK);
  REQUIRE(draw_model(nullptr, o, rng, 2, &m2) == AM_OK);
  CHECK(m0.J != m2.J);
  am_record_destroy(&ds);
  am_record_destroy(&ex);
}

TEST_CASE("task: user-given J and U from .npy (J symmetrised, diagonal zeroed)") {
  const double J[16] = {5, 1, 2, 0, 3, 5, 0, 1, 0, 0, 5, 2, 0, 1, 2, 5};  // column-major, not symmetric
  const double U[9] = {1, -1, 0, -1, 1, 0.5, 0, 0.5, 1};
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = 4;
  v.shape[1] = 4;
  v.fortran_order = 1;
  v.data = J;
  REQUIRE(am_npy_write(nullptr, "potts_test_J.npy", &v) == AM_OK);
  v.shape[0] = v.shape[1] = 3;
  v.data = U;
  REQUIRE(am_npy_write(nullptr, "potts_test_U.npy", &v) == AM_OK);
  TaskOptions o;
  o.couplings = "file";
  o.J_file = "potts_test_J.npy";
  o.U_file = "potts_test_U.npy";
  Model m;
  am_rng rng;
  am_rng_init(&rng, 1, 1);
  REQUIRE(draw_model(nullptr, o, rng, 0, &m) == AM_OK);
  std::remove("potts_test_J.npy");
  std::remove("potts_test_U.npy");
  CHECK(m.L == 4);
  CHECK(m.C == 3);
  for (int i = 0; i < 4; ++i) {
    CHECK(m.J[i + 4 * i] == 0.0);
    for (int j = 0; j < 4; ++j)
      if (j != i) CHECK(m.J[i + 4 * j] == doctest::Approx(0.5 * (J[i + 4 * j] + J[j + 4 * i])));
  }
  for (int k = 0; k < 9; ++k) CHECK(m.U[k] == U[k]);
  o.J_file = "does_not_exist.npy";
  CHECK(draw_model(nullptr, o, rng, 0, &m) != AM_OK);
}

TEST_CASE("sequence dataset: int32 in either order, int64 and whole floats give the same tokens; a value outside the "
          "colours or between them is named") {
  const size_t M = 3;
  const int L = 4, C = 5;
  std::vector<int32_t> c_order(M * L), f_order(M * L);
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i) c_order[mu * L + i] = f_order[mu + M * i] = int32_t((3 * mu + 2 * i) % C);
  const std::vector<int64_t> wide(c_order.begin(), c_order.end());
  const std::vector<double> whole(c_order.begin(), c_order.end());
  const size_t shape[2] = {M, (size_t)L};
  const auto read = [&](am_dtype t, int fortran, const void *data, SeqData *d, am_context *ctx = nullptr) {
    am_record *ds = nullptr;
    am_record_create(&ds);
    am_record_set_string(ds, "kind", "sequence");
    am_record_set_number(ds, "C", C);
    const am_array_view v = am_array_view_make(t, 2, shape, fortran, data);
    am_record_set_array(ds, "tokens", &v);
    const am_status st = read_sequence_dataset(ctx, ds, 0, d);
    am_record_destroy(&ds);
    return st;
  };
  SeqData a, b, c, e;
  REQUIRE(read(AM_I32, 0, c_order.data(), &a) == AM_OK);
  REQUIRE(read(AM_I32, 1, f_order.data(), &b) == AM_OK);
  REQUIRE(read(AM_I64, 0, wide.data(), &c) == AM_OK);
  REQUIRE(read(AM_F64, 0, whole.data(), &e) == AM_OK);
  CHECK(a.train == c_order);
  CHECK(b.train == c_order);
  CHECK(c.train == c_order);
  CHECK(e.train == c_order);
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  std::vector<int64_t> big(wide);
  big[5] = int64_t(1) << 40;  // outside int32 too: refused before any narrowing
  CHECK(read(AM_I64, 0, big.data(), &c, ctx) == AM_ERR_DOMAIN);
  CHECK(std::string(am_context_last_error(ctx)).find("outside the colours 0..4") != std::string::npos);
  std::vector<int32_t> neg(f_order);
  neg[M * 2 + 1] = -1;  // element (1, 2) in Fortran order
  CHECK(read(AM_I32, 1, neg.data(), &b, ctx) == AM_ERR_DOMAIN);
  CHECK(std::string(am_context_last_error(ctx)).find("holds -1") != std::string::npos);
  std::vector<double> half(whole);
  half[2] = 1.5;
  CHECK(read(AM_F64, 0, half.data(), &e, ctx) == AM_ERR_DOMAIN);
  CHECK(std::string(am_context_last_error(ctx)).find("holds 1.5") != std::string::npos);
  am_context_destroy(&ctx);
}
