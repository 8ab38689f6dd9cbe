// The whole task on a tiny configuration: two real Hershey fonts in tests/data/oneshot/fonts (futural = the
// latin family, background; greek = evaluation), a few training steps, a 2-temperature grid. Checks the dataset
// against dataset.h (the core can build ξ from it; validation split, temperatures_scan, the trained network),
// the extras keys, the theory estimator's temperature selection on it and the cache round trip.
#include <doctest/doctest.h>

#include "oneshot_core.h"
#include "estimate.hpp"

#include <attnmech/plugin.hpp>

#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace am::oneshot;

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
  am_status st = make_dataset(ctx, o, rng, am::sdk::threads_loop(2), ds, ex);
  INFO(am_context_last_error(ctx));
  REQUIRE(st == AM_OK);

  // dataset.h: architecture, temperature, ξ from the Q/K heads, the splits, the grid, the trained network
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE(am_dataset_arch(ctx, ds, &arch, &T) == AM_OK);
  CHECK(arch.layers == 2);
  CHECK(arch.heads[0] == 2);
  CHECK(arch.widths[0] == 10);
  CHECK(T == 0.5);   // the task's `temperature` (estimators that do not scan)
  double *xi = nullptr, *y = nullptr;
  size_t P = 0, N0 = 0;
  REQUIRE(am_dataset_xi(ctx, ds, "test", &xi, &P, &N0, &y) == AM_OK);
  CHECK(P == 12);
  CHECK(N0 == 192);
  am_free(xi);
  am_free(y);
  REQUIRE(am_dataset_xi(ctx, ds, "val", &xi, &P, &N0, &y) == AM_OK);
  CHECK(P == 10);
  am_free(xi);
  am_free(y);
  CHECK(am_record_get(ds, "X_ood") == nullptr);   // ood = none
  std::vector<double> temps(2);
  REQUIRE(am_record_get_vector(ds, "temperatures_scan", temps.data(), 2, nullptr) == AM_OK);
  CHECK(temps == std::vector<double>{0.1, 1.0});
  am_array_view v;
  REQUIRE(am_record_get_array(am_record_get(ds, "network"), "path_weights", &v) == AM_OK);
  CHECK(v.ndim == 2);
  CHECK(v.shape[0] == 4);
  CHECK(v.shape[1] == 192);

  // extras: data summary and the GD network only (the theory study is the estimator's)
  CHECK(num(ex, "data.background_classes") > 20);   // futural letters/digits/symbols with ink
  CHECK(num(ex, "data.evaluation_classes") > 20);   // greek letters
  CHECK(num(ex, "data.P") == 16);
  const double gd_test = num(ex, "gd.accuracy.test");
  CHECK((gd_test >= 0 && gd_test <= 1));
  for (const char *gone : {"theory_grid", "selection", "gp", "head_scores", "pruning", "selected_temperature"})
    CHECK(am_record_get(ex, gone) == nullptr);

  // the theory estimator on it: the temperature scan, validation selection, head scores
  am_record *run = nullptr;
  am_record_create(&run);
  REQUIRE(am::attention::estimate(ctx, ds, am::sdk::make_record().get(), am::attention::Options(), run) >= 0);
  const am_record *ts = am_record_get(run, "temperature_scan");
  REQUIRE(ts);
  std::vector<double> acc(2), accv(2);
  REQUIRE(am_record_get_vector(ts, "accuracy_test", acc.data(), 2, nullptr) == AM_OK);
  REQUIRE(am_record_get_vector(ts, "accuracy_val", accv.data(), 2, nullptr) == AM_OK);
  for (double a : acc) CHECK((a >= 0 && a <= 1));
  // validation selection picks the T of the better validation accuracy and reports that T's test accuracy
  const size_t best = accv[1] > accv[0] ? 1 : 0;
  CHECK(num(run, "temperature_scan.by_validation.temperature") == (best ? 1.0 : 0.1));
  CHECK(num(run, "temperature_scan.by_validation.accuracy_test") == acc[best]);
  CHECK(num(run, "temperature") == (best ? 1.0 : 0.1));
  CHECK(num(run, "test.accuracy") == acc[best]);
  CHECK(num(run, "val.accuracy") == accv[best]);
  std::vector<double> sc(4);
  REQUIRE(am_record_get_vector(run, "head_scores", sc.data(), 4, nullptr) == AM_OK);
  double mx = 0;
  for (double s : sc) mx = std::max(mx, s);
  CHECK(mx == doctest::Approx(1.0).epsilon(1e-12));
  am_record_destroy(&run);

  // second run: images and model come from the cache and give the same heads
  am_record *ds2 = nullptr, *ex2 = nullptr;
  am_record_create(&ds2);
  am_record_create(&ex2);
  REQUIRE(make_dataset(ctx, o, rng, am::sdk::serial_loop(), ds2, ex2) == AM_OK);
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
  CHECK(make_dataset(ctx, o, rng, am::sdk::serial_loop(), ds, nullptr) == AM_ERR_NOT_FOUND);
  CHECK(std::string(am_context_last_error(ctx)).find("hershey") != std::string::npos);
  am_record_destroy(&ds);
  am_context_destroy(&ctx);
}

namespace {
// A progress sink that cancels once the GD training has reached `at` steps.
struct CancelAt {
  double at;
  static int fn(void *u, double done, double, const char *label) {
    return label && std::strstr(label, "training the GD network") && done >= static_cast<CancelAt *>(u)->at;
  }
};

bool same_model(const Model &a, const Model &b) {
  Model &ma = const_cast<Model &>(a), &mb = const_cast<Model &>(b);
  const auto ba = ma.blocks(), bb = mb.blocks();
  const auto sz = a.block_sizes();
  if (ba.size() != bb.size() || sz != b.block_sizes()) return false;
  for (size_t k = 0; k < ba.size(); ++k)
    if (std::memcmp(ba[k], bb[k], sz[k] * sizeof(double)) != 0) return false;
  return true;
}
}  // namespace

TEST_CASE("oneshot GD training: cancelled, checkpointed, resumed — the same bits as a training that never stopped") {
  char ta[] = "/tmp/oneshot-ck-a-XXXXXX", tb[] = "/tmp/oneshot-ck-b-XXXXXX";
  REQUIRE(mkdtemp(ta) != nullptr);
  REQUIRE(mkdtemp(tb) != nullptr);
  Options o = tiny_options(ta);
  o.train.steps = 9;
  am_rng rng;
  am_rng_init(&rng, 4, 1);
  am_context *plain = nullptr;
  am_context_create(&plain, nullptr);
  Prepared whole;
  REQUIRE(prepare(plain, o, rng, am::sdk::serial_loop(), &whole) == AM_OK);
  CHECK(whole.steps_done == 9);

  // The same training stopped at step 4: the heads so far are kept and a checkpoint names the state.
  o.cache = tb;
  CancelAt c{4};
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.progress = &CancelAt::fn;
  cs.progress_user = &c;
  am_context *stopping = nullptr;
  am_context_create(&stopping, &cs);
  Prepared part;
  REQUIRE(prepare(stopping, o, rng, am::sdk::serial_loop(), &part) == AM_CANCELLED);
  CHECK(part.trained);
  CHECK(part.steps_done == 4);
  REQUIRE(!part.checkpoint.empty());
  CHECK(access((part.checkpoint + "/adam_v.npy").c_str(), R_OK) == 0);
  // make_dataset on a cancel records the partial training (no accuracies: the stop is not delayed)
  am_context *stopping2 = nullptr;
  CancelAt c2{2};
  cs.progress_user = &c2;
  am_context_create(&stopping2, &cs);
  am_record *ds = nullptr, *ex = nullptr;
  am_record_create(&ds);
  am_record_create(&ex);
  // resumes at 4, stops again at its first progress report (step 5): recorded as steps_done 5, resumed_from 4
  CHECK(make_dataset(stopping2, o, rng, am::sdk::serial_loop(), ds, ex) == AM_CANCELLED);
  CHECK(num(ex, "gd.steps_done") == 5);
  CHECK(num(ex, "gd.resumed_from") == 4);
  CHECK(am_record_bool(am_record_get(am_record_get(ex, "gd"), "completed")) == 0);
  am_array_view q;
  REQUIRE(am_record_get_array(am_record_get(am_record_get(am_record_get(ex, "gd"), "heads"), "l2_h1"), "Q", &q) ==
          AM_OK);
  CHECK(q.shape[0] == 4);    // G
  CHECK(q.shape[1] == 192);  // N0
  CHECK(am_record_get(am_record_get(ex, "gd"), "accuracy") == nullptr);

  // The same command again resumes from step 5 and ends where the uninterrupted training ended, bit for bit.
  Prepared resumed;
  REQUIRE(prepare(plain, o, rng, am::sdk::serial_loop(), &resumed) == AM_OK);
  CHECK(resumed.resumed_from == 5);
  CHECK(resumed.steps_done == 9);
  CHECK(same_model(resumed.model, whole.model));
  CHECK(resumed.log.step == whole.log.step);
  CHECK(resumed.log.loss == whole.log.loss);  // the loss curve continues across the stops
  // the finished model replaced the checkpoints
  size_t left = 0;
  for (const auto &e : std::filesystem::recursive_directory_iterator(tb))
    left += e.path().filename().string().rfind("checkpoint", 0) == 0;
  CHECK(left == 0);
  am_record_destroy(&ds);
  am_record_destroy(&ex);
  am_context_destroy(&plain);
  am_context_destroy(&stopping);
  am_context_destroy(&stopping2);
  std::system(("rm -rf '" + std::string(ta) + "' '" + std::string(tb) + "'").c_str());
}
