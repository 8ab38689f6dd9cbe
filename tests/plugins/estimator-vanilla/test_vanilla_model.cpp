// The vanilla transformer (plugins/estimator-vanilla/vanilla.h): hand-written backward pass vs central finite
// differences (1 and 3 layers, post- and pre-LN, with dropout at fixed masks), dropout only in training passes, and
// consistency of the pseudo-likelihood evaluation with single-mask evaluation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "vanilla.h"

using namespace am::vanilla;

namespace {

// The model's gradient at a random generic point (init + 0.05 N(0,1): LayerNorm gains/biases away from 1/0) on
// 11 random sequences (chunk 4 < 11: several chunks accumulate), and the largest deviation from central
// differences, h = 1e-5: O(h^2) truncation ~ 1e-10 |f(3)|, round-off ~ 1e-11, so err / gmax < 1e-6 has margin.
struct FdCheck {
  std::vector<double> g;
  double err = 0.0, gmax = 0.0;
};
VanillaConfig small_config(int layers, bool pre_ln, double dropout) {
  VanillaConfig cfg;
  cfg.L = 5;
  cfg.C = 4;
  cfg.d = 6;
  cfg.layers = layers;
  cfg.pre_ln = pre_ln;
  cfg.dropout = dropout;
  return cfg;
}
// (differences = false: the gradient only)
FdCheck fd_check(VanillaModel &vm, uint64_t seed, const am_rng *dropout_rng = nullptr, bool differences = true) {
  std::vector<double> th(vm.n_params());
  am_rng rng;
  am_rng_init(&rng, seed, 0);
  vm.init(th.data(), &rng);
  for (auto &x : th) x += 0.05 * am_rng_normal(&rng);
  const size_t n = 11;
  std::vector<int32_t> tok(n * 5), mask(n);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, 4);
  for (auto &m : mask) m = (int32_t)am_rng_below(&rng, 5);
  FdCheck r;
  r.g.resize(th.size());
  vm.loss(th.data(), tok.data(), mask.data(), n, r.g.data(), nullptr, dropout_rng);
  if (!differences) return r;
  const double h = 1e-5;
  for (size_t k = 0; k < th.size(); ++k) {
    const double x = th[k];
    th[k] = x + h;
    const double fp = vm.loss(th.data(), tok.data(), mask.data(), n, nullptr, nullptr, dropout_rng);
    th[k] = x - h;
    const double fm = vm.loss(th.data(), tok.data(), mask.data(), n, nullptr, nullptr, dropout_rng);
    th[k] = x;
    r.err = std::max(r.err, std::fabs((fp - fm) / (2 * h) - r.g[k]));
    r.gmax = std::max(r.gmax, std::fabs(r.g[k]));
  }
  return r;
}

}  // namespace

TEST_CASE("vanilla transformer: gradient vs finite differences (post/pre-LN, without and with dropout; 1 and 3 "
          "layers)") {
  // With dropout p = 0.3 every one of the four mask kinds zeroes some units of this small model; the same rng
  // state gives the same masks, so the loss is one smooth function of theta and the tolerance of fd_check applies.
  am_rng drng;
  am_rng_init(&drng, 77, 3);
  for (bool pre : {false, true})
    for (double p : {0.0, 0.3})
      for (int layers : {1, 3}) {
        VanillaModel vm(small_config(layers, pre, p), 4);
        const FdCheck r = fd_check(vm, 100 * (1 + pre) + 10 * (p > 0) + layers, p > 0 ? &drng : nullptr);
        CHECK(r.err / r.gmax < 1e-6);
        CHECK(r.gmax > 1e-3);
      }
}

TEST_CASE("vanilla transformer: pseudo-likelihood loss = mean of single-mask losses") {
  VanillaConfig cfg;
  cfg.L = 6;
  cfg.C = 3;
  cfg.d = 8;
  cfg.layers = 2;
  VanillaModel vm(cfg, 7);
  std::vector<double> th(vm.n_params());
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  vm.init(th.data(), &rng);
  const size_t M = 5;
  std::vector<int32_t> tok(M * 6);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, 3);
  double direct = 0.0;
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < 6; ++i) {
      const int32_t mk = i;
      direct += vm.loss(th.data(), tok.data() + mu * 6, &mk, 1, nullptr);
    }
  direct /= (double)(M * 6);
  std::vector<double> Abar(36);
  const double pl = vm.pseudo_loss(th.data(), tok.data(), M, Abar.data(), 0);
  CHECK(pl == doctest::Approx(direct).epsilon(1e-12));  // identical arithmetic up to summation order
  for (int i = 0; i < 6; ++i) {
    double row = 0.0;
    for (int j = 0; j < 6; ++j) row += Abar[i + 6 * j];
    CHECK(row == doctest::Approx(1.0).epsilon(1e-12));  // softmax rows sum to one
  }
}

TEST_CASE("vanilla transformer, pre-LN blocks: the final LayerNorm's parameters; every layer gets gradient") {
  for (int layers : {1, 3}) {
    VanillaModel vm(small_config(layers, true, 0.0), 4);
    CHECK(vm.n_params() == VanillaModel(small_config(layers, false, 0.0), 4).n_params() + 2 * 6);
    const std::vector<double> g = fd_check(vm, 200 + layers, nullptr, false).g;
    // the layout: E, P, then one equal-sized block per layer
    const size_t emb = (4 + 1) * 6 + 5 * 6, per = (vm.n_params() - emb - 6 * 4 - 4 - 2 * 6) / layers;
    for (int l = 0; l < layers; ++l) {
      double s = 0.0;
      for (size_t k = emb + l * per; k < emb + (l + 1) * per; ++k) s += g[k] * g[k];
      CHECK(s > 1e-8);
    }
  }
}

TEST_CASE("vanilla transformer with dropout: masks only in training passes; p = 0 is the plain model bit for bit") {
  VanillaModel plain(small_config(3, false, 0.0), 4), dropped(small_config(3, false, 0.5), 4);
  REQUIRE(plain.n_params() == dropped.n_params());
  std::vector<double> th(plain.n_params()), g0(th.size()), g1(th.size());
  am_rng rng, drng, drng2;
  am_rng_init(&rng, 5, 0);
  am_rng_init(&drng, 6, 0);
  am_rng_init(&drng2, 7, 0);
  plain.init(th.data(), &rng);
  const size_t n = 9;
  std::vector<int32_t> tok(n * 5), mask(n);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, 4);
  for (auto &m : mask) m = (int32_t)am_rng_below(&rng, 5);
  const double f0 = plain.loss(th.data(), tok.data(), mask.data(), n, g0.data());
  // p = 0 with an rng: nothing drawn, the same bits
  CHECK(plain.loss(th.data(), tok.data(), mask.data(), n, g1.data(), nullptr, &drng) == f0);
  CHECK(g1 == g0);
  // p > 0 without an rng (evaluation): the plain model
  CHECK(dropped.loss(th.data(), tok.data(), mask.data(), n, g1.data()) == f0);
  CHECK(g1 == g0);
  // a training pass differs, the same masks reproduce it, other masks differ again
  const double fd = dropped.loss(th.data(), tok.data(), mask.data(), n, nullptr, nullptr, &drng);
  CHECK(fd != f0);
  CHECK(dropped.loss(th.data(), tok.data(), mask.data(), n, nullptr, nullptr, &drng) == fd);
  CHECK(dropped.loss(th.data(), tok.data(), mask.data(), n, nullptr, nullptr, &drng2) != fd);
  CHECK(dropped.pseudo_loss(th.data(), tok.data(), 2) == plain.pseudo_loss(th.data(), tok.data(), 2));
}
