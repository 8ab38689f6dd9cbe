// Pruning is estimator work: the theory plugin evaluates the trained network the oneshot dataset carries in path
// form (network.path_weights, from ξ) with heads removed. Checked against the GD network's own forward pass
// with the same head masks (attention computed independently, in gd.cpp).
#include <doctest/doctest.h>

#include "oneshot_core.h"

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <unistd.h>

using namespace am::oneshot;

namespace {

std::vector<double> vec(const am_record *obj, const char *key) {
  size_t n = 0;
  am_record_get_vector(obj, key, nullptr, 0, &n);
  std::vector<double> v(n);
  if (n) REQUIRE(am_record_get_vector(obj, key, v.data(), n, &n) == AM_OK);
  return v;
}

}  // namespace

#ifdef AM_THEORY_PLUGIN_PATH
TEST_CASE("theory plugin prunes the oneshot dataset's network exactly as the GD network's masked forward") {
  char tmpl[] = "/tmp/oneshot-prune-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  Options o;
  o.hershey_dir = std::string(AM_ONESHOT_DATA) + "/fonts";
  o.ood = "none";
  o.cache = tmpl;
  o.drawers = 3;
  o.P = 16;
  o.P_val = 10;
  o.P_test = 40;
  o.shape.H = 2;
  o.shape.G = 4;
  o.shape.W = 8;
  o.train.steps = 6;
  o.train.batch = 8;
  o.widths_scan = {10};
  o.temperatures = {0.1, 1.0};
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am_rng rng;
  am_rng_init(&rng, 3, 1);
  am_record *ds = nullptr, *params = nullptr, *run = nullptr;
  am_record_create(&ds);
  am_record_create(&params);
  am_record_create(&run);
  REQUIRE_MESSAGE(make_dataset(ctx, o, rng, am::sdk::serial_loop(), ds, nullptr) == AM_OK, am_context_last_error(ctx));
  Prepared p;   // the same data and model (from the cache)
  REQUIRE(prepare(ctx, o, rng, am::sdk::serial_loop(), &p) == AM_OK);

  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE_MESSAGE(am_registry_load_file(ctx, reg, AM_THEORY_PLUGIN_PATH) == AM_OK, am_context_last_error(ctx));
  const am_plugin_desc *d = am_registry_find(reg, "theory", AM_PLUGIN_ESTIMATOR);
  REQUIRE(d);
  const char *keys[] = {"prune_at", "random_orders"};
  const char *vals[] = {"10", "4"};
  int used[2] = {0, 0};
  REQUIRE(am_params_parse(ctx, d, 2, keys, vals, used, params) == AM_OK);
  am_host host;
  am_host_init(&host, ctx, params, 3, 2, 0);
  void *inst = nullptr;
  REQUIRE(d->create(&host, &inst) == AM_OK);
  am_record *inputs = nullptr;
  REQUIRE(am_record_create(&inputs) == AM_OK);
  REQUIRE_MESSAGE(d->estimate(inst, ds, inputs, run) >= 0, am_context_last_error(ctx));
  am_record_destroy(&inputs);
  d->destroy(inst);
  const am_record *pr = am_record_get(run, "pruning");
  REQUIRE(pr);

  const size_t nh = 4, n = p.y_test.size();
  auto gd_accuracy = [&](const Mask &m) {
    std::vector<double> f(n);
    forward(p.model, m, n, p.X_test.data(), f.data());
    return sign_accuracy(f.data(), p.y_test.data(), n);
  };
  CHECK(am_record_number(am_record_get(pr, "base_accuracy")) == gd_accuracy(Mask()));
  const auto single = vec(pr, "single_accuracy");
  REQUIRE(single.size() == nh);
  for (size_t j = 0; j < nh; ++j) {
    CAPTURE(j);
    Mask m(nh, 1.0);
    m[j] = 0;
    CHECK(single[j] == gd_accuracy(m));
  }
  // cumulative pruning in the order of the run's head scores (increasing)
  const auto scores = vec(run, "head_scores"), order = vec(pr, "score_order"), cum = vec(pr, "score_order_accuracy");
  REQUIRE(scores.size() == nh);
  REQUIRE(order.size() == nh);
  for (size_t k = 1; k < nh; ++k) CHECK(scores[size_t(order[k - 1])] <= scores[size_t(order[k])]);
  Mask m(nh, 1.0);
  for (size_t k = 1; k < nh; ++k) {
    CAPTURE(k);
    m[size_t(order[k - 1])] = 0;
    CHECK(cum[k] == gd_accuracy(m));
  }
  // pruning a whole layer gives f = 0: accuracy 1/2 (sign(0) counted as a half)
  CHECK(vec(pr, "random_order_accuracy_mean").size() == nh);
  CHECK(am_record_number(am_record_get(pr, "random_orders")) == 4);

  am_registry_destroy(&reg);
  am_record_destroy(&ds);
  am_record_destroy(&params);
  am_record_destroy(&run);
  am_context_destroy(&ctx);
  std::system(("rm -rf '" + std::string(tmpl) + "'").c_str());
}
#endif
