// The whole task on a tiny configuration: two real Hershey fonts in tests/data/oneshot/fonts (futural = the
// latin family, background; greek = evaluation), a few training steps, a 2 × 2 theory grid. Checks the dataset
// against dataset.h (the core can build ξ from it), the extras keys, the selection logic and the cache round trip.
#include <doctest/doctest.h>

#include "oneshot_core.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace oneshot;

namespace {

Options tiny_options(const std::string &cache) {
  Options o;
  o.hershey_dir = std::string(AM_ONESHOT_DATA) + "/fonts";
  o.ood = "none";
  o.cache = cache;
  o.drawers = 3;
  o.P = 16;
  o.P_val = 10;
  o.P_test = 12;
  o.shape.H = 2;   // 4 paths: the core's Hessian work is (N0·H_tot)², keep it small
  o.shape.G = 4;
  o.shape.W = 8;
  o.train.steps = 4;
  o.train.batch = 8;
  o.widths_scan = {10, 1000};
  o.temperatures = {0.1, 1.0};
  o.random_orders = 3;
  return o;
}

double num(const am_record *r, const char *dotted) {
  std::string path = dotted;
  const am_record *cur = r;
  size_t pos;
  while ((pos = path.find('.')) != std::string::npos) {
    cur = am_record_get(cur, path.substr(0, pos).c_str());
    if (!cur) return NAN;
    path = path.substr(pos + 1);
  }
  return am_record_number(am_record_get(cur, path.c_str()));
}

}  // namespace

TEST_CASE("oneshot task end to end on two Hershey fonts: dataset, extras, cache") {
  char tmpl[] = "/tmp/oneshot-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string cache = tmpl;
  const Options o = tiny_options(cache);
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am_rng rng;
  am_rng_init(&rng, 9, 1);
  am_record *ds = nullptr, *ex = nullptr;
  am_record_create(&ds);
  am_record_create(&ex);
  am_status st = make_dataset(ctx, o, rng, 2, ds, ex);
  INFO(am_context_last_error(ctx));
  REQUIRE(st == AM_OK);

  // dataset.h: architecture, temperature, ξ from the Q/K heads
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE(am_dataset_arch(ctx, ds, &arch, &T) == AM_OK);
  CHECK(arch.layers == 2);
  CHECK(arch.heads[0] == 2);
  CHECK(arch.widths[0] == 10);
  CHECK((T == 0.1 || T == 1.0));
  CHECK(T == num(ex, "selected_temperature"));
  double *xi = nullptr, *y = nullptr;
  size_t P = 0, N0 = 0;
  REQUIRE(am_dataset_xi(ctx, ds, "test", &xi, &P, &N0, &y) == AM_OK);
  CHECK(P == 12);
  CHECK(N0 == 192);
  std::free(xi);
  std::free(y);

  // extras
  CHECK(num(ex, "data.background_classes") > 20);   // futural letters/digits/symbols with ink
  CHECK(num(ex, "data.evaluation_classes") > 20);   // greek letters
  CHECK(num(ex, "data.P") == 16);
  const double gd_test = num(ex, "gd.accuracy.test");
  CHECK(gd_test == num(ex, "pruning.base_accuracy"));   // the same episodes, the same network
  am_array_view v;
  REQUIRE(am_record_get_array(am_record_get(ex, "theory_grid"), "accuracy_test", &v) == AM_OK);
  CHECK(v.shape[0] == 2);
  CHECK(v.shape[1] == 2);
  std::vector<double> acc(4), accv(4);
  REQUIRE(am_array_to_f64_c(ctx, &v, acc.data(), 4) == AM_OK);
  REQUIRE(am_record_get_array(am_record_get(ex, "theory_grid"), "accuracy_val", &v) == AM_OK);
  REQUIRE(am_array_to_f64_c(ctx, &v, accv.data(), 4) == AM_OK);
  for (double a : acc) CHECK((a >= 0 && a <= 1));
  // validation selection at N = 10 picks the T of the better validation accuracy, and reports that T's test accuracy
  std::vector<double> selT(2), selA(2);
  const am_record *bv = am_record_get(am_record_get(ex, "selection"), "by_validation");
  REQUIRE(am_record_get_vector(bv, "temperature", selT.data(), 2, nullptr) == AM_OK);
  REQUIRE(am_record_get_vector(bv, "accuracy_test", selA.data(), 2, nullptr) == AM_OK);
  const size_t best = accv[1] > accv[0] ? 1 : 0;
  CHECK(selT[0] == (best ? 1.0 : 0.1));
  CHECK(selA[0] == acc[best]);
  std::vector<double> sc(4);
  REQUIRE(am_record_get_vector(am_record_get(ex, "head_scores"), "scores", sc.data(), 4, nullptr) == AM_OK);
  double mx = 0;
  for (double s : sc) mx = std::max(mx, s);
  CHECK(mx == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(am_record_get(am_record_get(ex, "pruning"), "random_order_accuracy_mean") != nullptr);

  // second run: images and model come from the cache and give the same heads
  am_record *ds2 = nullptr, *ex2 = nullptr;
  am_record_create(&ds2);
  am_record_create(&ex2);
  REQUIRE(make_dataset(ctx, o, rng, 1, ds2, ex2) == AM_OK);
  CHECK(am_record_bool(am_record_get(am_record_get(ex2, "gd"), "from_cache")) == 1);
  CHECK(am_record_bool(am_record_get(am_record_get(ex2, "data"), "images_from_cache")) == 1);
  am_array_view q1, q2;
  REQUIRE(am_record_get_array(am_record_get(am_record_get(ds, "attention"), "l2_h2"), "Q", &q1) == AM_OK);
  REQUIRE(am_record_get_array(am_record_get(am_record_get(ds2, "attention"), "l2_h2"), "Q", &q2) == AM_OK);
  REQUIRE(am_array_view_count(&q1) == am_array_view_count(&q2));
  CHECK(std::memcmp(q1.data, q2.data, am_array_view_count(&q1) * sizeof(double)) == 0);
  CHECK(num(ex2, "gd.accuracy.test") == gd_test);

  am_record_destroy(&ds);
  am_record_destroy(&ex);
  am_record_destroy(&ds2);
  am_record_destroy(&ex2);
  am_context_destroy(&ctx);
  std::system(("rm -rf '" + cache + "'").c_str());
}

TEST_CASE("oneshot options: bad sources and sizes are usage errors with the parameter named") {
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  Options o = tiny_options("none");
  o.source = "mnist";
  CHECK(validate(ctx, o) == AM_ERR_USAGE);
  CHECK(std::string(am_context_last_error(ctx)).find("source") != std::string::npos);
  o = tiny_options("none");
  o.shape.H = 20;   // 400 paths with L = 2
  CHECK(validate(ctx, o) == AM_ERR_USAGE);
  o = tiny_options("none");
  o.hershey_dir = "/nonexistent";
  am_rng rng;
  am_rng_init(&rng, 1, 1);
  am_record *ds = nullptr;
  am_record_create(&ds);
  CHECK(make_dataset(ctx, o, rng, 1, ds, nullptr) == AM_ERR_NOT_FOUND);
  CHECK(std::string(am_context_last_error(ctx)).find("hershey") != std::string::npos);
  am_record_destroy(&ds);
  am_context_destroy(&ctx);
}
