// The vanilla estimator's driver (run_vanilla) on the potts task's dataset: the documented run keys (docs/potts.md),
// every layer's attention map when layers > 1, the training stream of train_seed, SGD with momentum.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../handles.hpp"  // num, vec
#include "../common/potts/test_host.hpp"
#include "potts_data.h"
#include "vanilla_driver.h"

using namespace am::vanilla;
using am::potts::SeqData;

using am_test::num;

namespace {
// The length of the vector at `key` (0 when absent).
size_t vec_len(const am_record *r, const char *key) { return am_test::vec(r, key).size(); }
}  // namespace

TEST_CASE("task potts -> dataset -> vanilla run records") {
  am_record *ds = nullptr, *ex = nullptr, *run2 = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  REQUIRE(am_record_create(&ex) == AM_OK);
  REQUIRE(am_record_create(&run2) == AM_OK);
  am::potts::TaskOptions o;  // the dataset of tests/plugins/common/potts/test_drivers.cpp
  o.L = 6;
  o.C = 4;
  o.M = 800;
  o.M_test = 1000;
  o.beta = 1.0;
  o.burnin = 60;
  o.equil_chains = 400;
  o.parallel = potts_test::host_threads(2);
  am_rng rng;
  am_rng_init(&rng, 4, 1);
  REQUIRE(am::potts::make_dataset(nullptr, o, rng, ds, ex) == AM_OK);
  SeqData d;
  REQUIRE(am::potts::read_sequence_dataset(nullptr, ds, 0, &d) == AM_OK);

  VanillaOptions vo;
  vo.epochs = 3;
  vo.eval_every = 1;
  vo.d = 8;
  REQUIRE(run_vanilla(nullptr, vo, d, rng, run2) == AM_OK);
  CHECK(num(run2, "test_loss") > num(run2, "epsilon_star") - 0.05);
  CHECK(vec_len(am_record_get(run2, "curves"), "epoch") == 4);

  // layers > 1: every layer's averaged attention map. M_test = 1000 ≤ 2000, so layer 0 is the very map `A` (same
  // sequences, same sums: exact), the last is `A_last_layer`, `A_last_two` is the mean of the last two; each row
  // is a mean of softmax rows, so it sums to 1 (to rounding, 1e-12).
  am_record *run3 = nullptr, *run4 = nullptr, *run5 = nullptr;
  REQUIRE(am_record_create(&run3) == AM_OK);
  REQUIRE(am_record_create(&run4) == AM_OK);
  REQUIRE(am_record_create(&run5) == AM_OK);
  vo.layers = 3;
  vo.norm = "pre";
  vo.epochs = 2;
  REQUIRE(run_vanilla(nullptr, vo, d, rng, run3) == AM_OK);
  am_array_view a0{}, al{}, a2{}, lt{};
  REQUIRE(am_record_get_array(run3, "A_layers", &al) == AM_OK);
  REQUIRE(am_record_get_array(run3, "A", &a0) == AM_OK);
  REQUIRE(am_record_get_array(run3, "A_last_layer", &a2) == AM_OK);
  REQUIRE(am_record_get_array(run3, "A_last_two", &lt) == AM_OK);
  REQUIRE(al.ndim == 3);
  CHECK(al.shape[0] == 3);
  CHECK(al.shape[1] == 6);
  CHECK(al.shape[2] == 6);
  REQUIRE(al.dtype == AM_F64);
  REQUIRE(a0.dtype == AM_F64);
  const auto *pl = static_cast<const double *>(al.data), *p0 = static_cast<const double *>(a0.data),
             *p2 = static_cast<const double *>(a2.data), *pt = static_cast<const double *>(lt.data);
  double d0 = 0, d2 = 0, dt = 0, drow = 0;
  for (int l = 0; l < 3; ++l)
    for (int i = 0; i < 6; ++i) {
      double row = 0;
      for (int j = 0; j < 6; ++j) row += pl[36 * l + 6 * i + j];
      drow = std::max(drow, std::fabs(row - 1.0));
    }
  for (int k = 0; k < 36; ++k) {
    d0 = std::max(d0, std::fabs(pl[k] - p0[k]));
    d2 = std::max(d2, std::fabs(pl[72 + k] - p2[k]));
    dt = std::max(dt, std::fabs(0.5 * (pl[36 + k] + pl[72 + k]) - pt[k]));
  }
  CHECK(d0 == 0.0);
  CHECK(d2 == 0.0);
  CHECK(dt < 1e-15);
  CHECK(drow < 1e-12);
  std::vector<double> rl(3);
  size_t nrl = 0;
  REQUIRE(am_record_get_vector(run3, "recon_error_layers", rl.data(), 3, &nrl) == AM_OK);
  CHECK(nrl == 3);
  CHECK(rl[0] == num(run3, "recon_error"));
  CHECK(num(run3, "recon_error_last_two") >= 0);
  // train_seed: the same data (same ε*), another training stream (another result); SGD with momentum trains
  vo.train_seed = 1;
  REQUIRE(run_vanilla(nullptr, vo, d, rng, run4) == AM_OK);
  CHECK(num(run4, "epsilon_star") == num(run3, "epsilon_star"));
  CHECK(num(run4, "train_loss") != num(run3, "train_loss"));
  vo.train_seed = 0;
  vo.optimizer = "sgd";
  vo.lr = 0.1;
  vo.momentum = 0.9;
  REQUIRE(run_vanilla(nullptr, vo, d, rng, run5) == AM_OK);
  const char *oname = nullptr;
  REQUIRE(am_record_get_string(am_record_get(run5, "optimizer"), "name", &oname) == AM_OK);
  CHECK(std::string(oname) == "sgd");
  std::vector<double> tl(3);
  size_t ntl = 0;
  REQUIRE(am_record_get_vector(am_record_get(run5, "curves"), "train_loss", tl.data(), 3, &ntl) == AM_OK);
  REQUIRE(ntl == 3);
  CHECK(tl[2] < tl[0] - 0.05);  // from the initial ≈ log C + O(1) down by more than the epoch-to-epoch noise
  am_record_destroy(&run3);
  am_record_destroy(&run4);
  am_record_destroy(&run5);
  am_record_destroy(&ds);
  am_record_destroy(&ex);
  am_record_destroy(&run2);
}
