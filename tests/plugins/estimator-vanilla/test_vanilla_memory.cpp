// The vanilla transformer's memory estimate (vanilla_fit_bytes) against the peak resident set its training adds (as
// tests/plugins/common/potts/test_fit_memory.cpp measures the other sequence fits), its refusal over
// AM_MEMORY_LIMIT before the model exists, and the estimate's growth with the layers.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../common/potts/fit_memory_test.hpp"
#include "vanilla_driver.h"

using namespace am::vanilla;
using namespace fit_memory_test;
using am::potts::FitShape;
using am::potts::SeqData;
using am_test::Ctx;
using am_test::Limit;

TEST_CASE("vanilla memory: the training's estimate against the peak RSS it adds") {
#if defined(__SANITIZE_ADDRESS__)
  return;
#else
  const Limit unset(nullptr);
  quiet_malloc();
  am_rng rng;
  am_rng_init(&rng, 2, 0);
  FitShape s;
  s.workers = 1;
  // one layer, L = 150: every layer's activations of a chunk of max(128, L) masked copies
  const SeqData d = sequences(6, 2, 150, 21, 9);  // few sequences: each costs L forward passes of a chunk
  VanillaOptions o;
  o.epochs = 1;
  o.batch = 4;
  const double rise = fit_rise([&](am_record *run) { return run_vanilla(nullptr, o, d, rng, run); });
  s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
  VanillaConfig cfg;
  cfg.L = d.L, cfg.C = d.C, cfg.d = o.d, cfg.layers = o.layers;
  const double est = vanilla_fit_bytes(s, cfg, (size_t)o.batch, true, false);
  check_estimate("vanilla, L = 150: estimate ", est, rise);
#endif
}

TEST_CASE("vanilla memory: a training over AM_MEMORY_LIMIT is refused before its model exists, naming its sizes") {
  Ctx ctx;
  const Limit limit("1G");
  const SeqData d = sequences(50, 10, 1000, 21, 4);
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  Rec run;
  VanillaOptions vo;  // one layer's attention of 1000 masked copies: 8 GB
  CHECK(rise_kib([&] { CHECK(run_vanilla(ctx.c, vo, d, rng, run.r) == AM_ERR_NO_MEMORY); }) < 50 * 1024);
  CHECK(ctx.err().find("the vanilla fit (1 layer, d = 20, L = 1000, C = 21, M = 50, M_test = 10) needs") !=
        std::string::npos);
}

TEST_CASE("vanilla memory: the estimate grows with the layers") {
  VanillaConfig c1;
  c1.L = 200, c1.C = 21, c1.layers = 1;
  VanillaConfig c3 = c1;
  c3.layers = 3;
  const double per_layer = VanillaModel::work_bytes(c3) - VanillaModel::work_bytes(c1);
  CHECK(per_layer > 2 * 8.0 * 200 * 200 * 200);  // two more layers' attention maps of a chunk of 200 copies
}
