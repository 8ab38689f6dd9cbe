// The GD network of the oneshot task: hand-written backward pass vs central finite differences, the
// path-form forward vs a direct layer-by-layer forward (spec §1.3), the same bits on every thread count, pruning
// rescale, and a loss that falls.
#include <doctest/doctest.h>

#include "oneshot_core.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace am::oneshot;

namespace {

ModelShape tiny_shape() {
  ModelShape s;
  s.N0 = 6;
  s.S = 5;
  s.L = 2;
  s.H = 2;
  s.G = 3;
  s.W = 4;
  return s;
}

// Random inputs and ±1 labels.
void toy_data(const ModelShape &s, size_t n, uint64_t seed, std::vector<double> *X, std::vector<double> *y) {
  am_rng r;
  am_rng_init(&r, seed, 3);
  X->resize(n * s.N0 * s.S);
  am_rng_fill_normal(&r, X->data(), X->size());
  y->resize(n);
  for (auto &v : *y) v = am_rng_below(&r, 2) ? 1.0 : -1.0;
}

// Direct forward of spec §1.3 with effective weights (no path expansion): x0 = V0 X,
// x_l = c_l Σ_h m_lh V_lh x_{l-1} Ω_lh, f = aᵀ x_L 1/S.
double direct_forward(const Model &m, const Mask &mask, const double *X) {
  const ModelShape &s = m.shape;
  const size_t N0 = s.N0, S = s.S, W = s.W, G = s.G;
  std::vector<double> x(W * S, 0.0);
  for (size_t t = 0; t < S; ++t)
    for (size_t i = 0; i < W; ++i)
      for (size_t k = 0; k < N0; ++k) x[i + W * t] += m.V0[i + W * k] * X[k + N0 * t];
  for (size_t l = 0; l < s.L; ++l) {
    double kept = 0;
    for (size_t h = 0; h < s.H; ++h) kept += mask.empty() ? 1 : mask[l * s.H + h];
    const double c = kept > 0 ? 1 / std::sqrt(kept) : 0;
    std::vector<double> nx(W * S, 0.0);
    for (size_t h = 0; h < s.H; ++h) {
      const double mh = mask.empty() ? 1 : mask[l * s.H + h];
      if (mh == 0) continue;
      const auto &Q = m.Q[l * s.H + h], &K = m.K[l * s.H + h], &V = m.V[l * s.H + h];
      std::vector<double> Om(S * S);
      for (size_t t = 0; t < S; ++t) {
        double mx = -1e300;
        for (size_t r = 0; r < S; ++r) {
          double lg = 0;
          for (size_t g = 0; g < G; ++g) {
            double kq = 0, qq = 0;
            for (size_t k = 0; k < N0; ++k) {
              kq += K[g + G * k] * X[k + N0 * r];
              qq += Q[g + G * k] * X[k + N0 * t];
            }
            lg += kq * qq;
          }
          Om[r + S * t] = lg / std::sqrt(double(G));
          mx = std::max(mx, Om[r + S * t]);
        }
        double sum = 0;
        for (size_t r = 0; r < S; ++r) sum += (Om[r + S * t] = std::exp(Om[r + S * t] - mx));
        for (size_t r = 0; r < S; ++r) Om[r + S * t] /= sum;
      }
      for (size_t t = 0; t < S; ++t)
        for (size_t i = 0; i < W; ++i) {
          double acc = 0;
          for (size_t r = 0; r < S; ++r) {
            double vx = 0;
            for (size_t j = 0; j < W; ++j) vx += V[i + W * j] * x[j + W * r];
            acc += vx * Om[r + S * t];
          }
          nx[i + W * t] += c * mh * acc;
        }
    }
    x.swap(nx);
  }
  double f = 0;
  for (size_t t = 0; t < S; ++t)
    for (size_t i = 0; i < W; ++i) f += m.a[i] * x[i + W * t] / double(S);
  return f;
}

}  // namespace

TEST_CASE("GD network: path-form forward equals the direct layer-by-layer forward, with and without pruning") {
  const ModelShape s = tiny_shape();
  am_rng r;
  am_rng_init(&r, 5, 1);
  Model m;
  init_model(s, &r, &m);
  for (auto &q : m.Q)
    for (auto &v : q) v *= 3;  // sharper attention than at initialisation
  std::vector<double> X, y;
  toy_data(s, 7, 11, &X, &y);
  for (const Mask &mask : {Mask(), Mask{1, 0, 1, 1}, Mask{1, 1, 0, 1}, Mask{0, 1, 1, 0}}) {
    std::vector<double> f(7);
    forward(m, mask, 7, X.data(), f.data(), am::sdk::threads_loop(2));
    for (size_t e = 0; e < 7; ++e)
      // both are sums of O(10) products in double precision
      CHECK(f[e] == doctest::Approx(direct_forward(m, mask, X.data() + e * s.N0 * s.S)).epsilon(1e-11));
  }
}

TEST_CASE("GD network: the gradient matches central finite differences of the loss") {
  const ModelShape s = tiny_shape();
  am_rng r;
  am_rng_init(&r, 6, 1);
  Model m;
  init_model(s, &r, &m);
  for (auto &q : m.K)
    for (auto &v : q) v *= 2;
  std::vector<double> X, y;
  toy_data(s, 9, 12, &X, &y);
  Model g;
  loss_and_grad(m, 9, X.data(), y.data(), &g, am::sdk::threads_loop(2));
  auto pb = m.blocks();
  const auto gb = g.blocks();
  const auto sz = m.block_sizes();
  size_t checked = 0;
  for (size_t b = 0; b < pb.size(); ++b)
    for (size_t i = 0; i < sz[b]; i += 3) {   // every third entry of every block (V0, a, V, Q, K)
      const double h = 1e-5, x0 = pb[b][i];
      Model tmp;
      pb[b][i] = x0 + h;
      const double lp = loss_and_grad(m, 9, X.data(), y.data(), &tmp);
      pb[b][i] = x0 - h;
      const double lm = loss_and_grad(m, 9, X.data(), y.data(), &tmp);
      pb[b][i] = x0;
      const double fd = (lp - lm) / (2 * h);
      // central differences: truncation O(h²) ~ 1e-10 and round-off ~1e-16/h ~ 1e-11, relative to O(1) gradients
      CHECK(gb[b][i] == doctest::Approx(fd).epsilon(1e-6).scale(1.0));
      ++checked;
    }
  CHECK(checked > 50);
}

TEST_CASE("GD network: outputs, loss and gradient are the same bits on 1, 2 and 3 threads") {
  const ModelShape s = tiny_shape();
  am_rng r;
  am_rng_init(&r, 9, 1);
  Model m;
  init_model(s, &r, &m);
  std::vector<double> X, y;
  toy_data(s, 21, 14, &X, &y);  // three blocks of episodes (8, 8, 5)
  std::vector<double> f1(21), fn(21);
  Model g1, gn;
  forward(m, Mask(), 21, X.data(), f1.data());
  const double l1 = loss_and_grad(m, 21, X.data(), y.data(), &g1);
  const auto b1 = g1.blocks();
  const auto sz = g1.block_sizes();
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    forward(m, Mask(), 21, X.data(), fn.data(), am::sdk::threads_loop(threads));
    CHECK(std::memcmp(f1.data(), fn.data(), 21 * sizeof(double)) == 0);
    CHECK(loss_and_grad(m, 21, X.data(), y.data(), &gn, am::sdk::threads_loop(threads)) == l1);
    const auto bn = gn.blocks();
    for (size_t b = 0; b < sz.size(); ++b) CHECK(std::memcmp(b1[b], bn[b], sz[b] * sizeof(double)) == 0);
  }
}

TEST_CASE("GD network: pruning a head whose output is zero only rescales the sum by (H-n)^-1/2") {
  const ModelShape s = tiny_shape();
  am_rng r;
  am_rng_init(&r, 7, 1);
  Model m;
  init_model(s, &r, &m);
  // layer-1 head 2 has zero values: its output is zero, so removing it changes only c_1 = 1/√2 → 1/√1
  std::fill(m.V[1].begin(), m.V[1].end(), 0.0);
  std::vector<double> X, y;
  toy_data(s, 6, 13, &X, &y);
  std::vector<double> f(6), fp(6);
  forward(m, Mask(), 6, X.data(), f.data());
  forward(m, Mask{1, 0, 1, 1}, 6, X.data(), fp.data());
  for (size_t e = 0; e < 6; ++e) CHECK(fp[e] == doctest::Approx(f[e] * std::sqrt(2.0)).epsilon(1e-12));
  // pruning a whole layer gives f = 0 and accuracy 1/2 by the sign(0) = half convention
  forward(m, Mask{0, 0, 1, 1}, 6, X.data(), fp.data());
  for (size_t e = 0; e < 6; ++e) CHECK(fp[e] == 0.0);
  CHECK(sign_accuracy(fp.data(), y.data(), 6) == 0.5);
}

TEST_CASE("GD network: Adam lowers the training loss on a learnable toy task") {
  ModelShape s = tiny_shape();
  s.W = 8;
  am_rng r;
  am_rng_init(&r, 8, 1);
  Model m;
  init_model(s, &r, &m);
  // labels from a fixed linear function of the mean token: learnable by the value path
  struct Data {
    ModelShape s;
    am_rng r;
  } d{s, r};
  auto fn = [](void *user, size_t step, std::vector<double> *X, std::vector<double> *y) {
    Data *dd = static_cast<Data *>(user);
    am_rng rr;
    am_rng_split(&dd->r, step, &rr);
    const size_t n = 32;
    X->resize(n * dd->s.N0 * dd->s.S);
    am_rng_fill_normal(&rr, X->data(), X->size());
    y->resize(n);
    for (size_t e = 0; e < n; ++e) {
      double acc = 0;
      for (size_t t = 0; t < dd->s.S; ++t) acc += (*X)[e * dd->s.N0 * dd->s.S + t * dd->s.N0];
      (*y)[e] = acc > 0 ? 1.0 : -1.0;
    }
  };
  TrainSettings ts;
  ts.steps = 150;
  ts.lr = 1e-2;
  TrainLog log;
  REQUIRE(train(nullptr, &m, ts, fn, &d, am::sdk::serial_loop(), &log) == AM_OK);
  REQUIRE(log.loss.size() >= 10);
  // MSE to ±1 starts near 1 + Var f; a learnable sign target must fall well below the start
  CHECK(log.loss.back() < 0.6 * log.loss.front());
}
