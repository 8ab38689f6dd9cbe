// The network log posterior: path form vs a token-wise implementation of spec §1.3, gradient vs
// finite differences, the readout-only posterior vs its closed form, reproducibility across threads.
#include "network.h"
#include "posterior.h"

#include <attnmech/rng.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace am::posterior;

namespace {

// A small random problem with explicit attention matrices (built here from bilinear heads, §1.2).
struct Problem {
  size_t L, N0, S, P;
  std::vector<size_t> H, W;
  std::vector<double> s;
  double T;
  int readout;  // 0 last, 2 mean
  std::vector<double> X;                          // P × (N0×S col-major)
  std::vector<std::vector<double>> omega;         // [μ][layer-head flat] S×S each, concatenated
  std::vector<double> xi, y;
  size_t Htot;

  Problem(size_t L_, std::vector<size_t> H_, std::vector<size_t> W_, std::vector<double> s_, int readout_,
          uint64_t seed, size_t P_ = 6)
      : L(L_), N0(5), S(4), P(P_), H(std::move(H_)), W(std::move(W_)), s(std::move(s_)), T(0.1), readout(readout_) {
    am_rng r;
    am_rng_init(&r, seed, 0);
    Htot = 1;
    for (size_t h : H) Htot *= h;
    size_t nheads = 0;
    for (size_t h : H) nheads += h;
    X.resize(P * N0 * S);
    for (double &v : X) v = am_rng_normal(&r);
    std::vector<std::vector<double>> Wb(nheads, std::vector<double>(N0 * N0));
    for (auto &m : Wb)
      for (double &v : m) v = 0.7 * am_rng_normal(&r);
    omega.assign(P, std::vector<double>(nheads * S * S));
    for (size_t mu = 0; mu < P; ++mu) {
      const double *x = &X[mu * N0 * S];
      for (size_t k = 0; k < nheads; ++k) {
        double *Om = &omega[mu][k * S * S];
        for (size_t t = 0; t < S; ++t) {  // column t = query; softmax over keys s
          double mx = -1e300;
          std::vector<double> lg(S);
          for (size_t s2 = 0; s2 < S; ++s2) {
            double v = 0;
            for (size_t i = 0; i < N0; ++i)
              for (size_t j = 0; j < N0; ++j) v += x[i + N0 * s2] * Wb[k][i + N0 * j] * x[j + N0 * t];
            lg[s2] = v;
            mx = std::max(mx, v);
          }
          double z = 0;
          for (size_t s2 = 0; s2 < S; ++s2) z += std::exp(lg[s2] - mx);
          for (size_t s2 = 0; s2 < S; ++s2) Om[s2 + S * t] = std::exp(lg[s2] - mx) / z;
        }
      }
    }
    // ξ^μ_π = √(s0/(N0 H_tot)) X^μ A^μ_π with A_π = Ω1_{h1}⋯ΩL_{hL} r
    xi.assign(P * N0 * Htot, 0.0);
    for (size_t mu = 0; mu < P; ++mu)
      for (size_t pi = 0; pi < Htot; ++pi) {
        std::vector<size_t> hs(L);
        size_t rem = pi;
        for (size_t l = L; l-- > 0;) {
          hs[l] = rem % H[l];
          rem /= H[l];
        }
        std::vector<double> A = rvec();
        for (size_t l = L; l-- > 0;) {  // A ← Ω_l A, right to left
          const double *Om = omega_of(mu, l, hs[l]);
          std::vector<double> B(S, 0.0);
          for (size_t a = 0; a < S; ++a)
            for (size_t b = 0; b < S; ++b) B[a] += Om[a + S * b] * A[b];
          A = B;
        }
        const double c = std::sqrt(s[0] / (static_cast<double>(N0) * Htot));
        for (size_t i = 0; i < N0; ++i) {
          double v = 0;
          for (size_t t = 0; t < S; ++t) v += X[mu * N0 * S + i + N0 * t] * A[t];
          xi[mu + P * (i + N0 * pi)] = c * v;
        }
      }
    y.resize(P);
    for (size_t mu = 0; mu < P; ++mu) y[mu] = (mu % 2) ? -1.0 : 1.0;
  }
  std::vector<double> rvec() const {
    std::vector<double> r(S, 0.0);
    if (readout == 0) r[S - 1] = 1;
    else
      for (double &v : r) v = 1.0 / S;
    return r;
  }
  const double *omega_of(size_t mu, size_t l, size_t h) const {
    size_t k = 0;
    for (size_t j = 0; j < l; ++j) k += H[j];
    return &omega[mu][(k + h) * S * S];
  }
  NetworkSpec spec() const {
    NetworkSpec sp;
    sp.L = L;
    sp.heads = H;
    sp.widths = W;
    sp.variances = s;
    sp.temperature = T;
    sp.N0 = N0;
    return sp;
  }
  // Token-wise forward pass, literally spec §1.3.
  double f_tokenwise(const Network &net, const double *theta, size_t mu) const {
    const double *x = &X[mu * N0 * S];
    // x0 = V0 X / √N0
    std::vector<double> cur(W[0] * S, 0.0);
    for (size_t t = 0; t < S; ++t)
      for (size_t k = 0; k < W[0]; ++k) {
        double v = 0;
        for (size_t i = 0; i < N0; ++i) v += theta[k + W[0] * i] * x[i + N0 * t];
        cur[k + W[0] * t] = v / std::sqrt(static_cast<double>(N0));
      }
    for (size_t l = 1; l <= L; ++l) {
      std::vector<double> nxt(W[l] * S, 0.0);
      const double c = 1.0 / std::sqrt(static_cast<double>(H[l - 1] * W[l - 1]));
      for (size_t h = 0; h < H[l - 1]; ++h) {
        const double *V = theta + net.offset_v(l, h);
        const double *Om = omega_of(mu, l - 1, h);
        // mixed = cur Ω (W_{l−1} × S), then V mixed
        std::vector<double> mixed(W[l - 1] * S, 0.0);
        for (size_t t = 0; t < S; ++t)
          for (size_t s2 = 0; s2 < S; ++s2)
            for (size_t k = 0; k < W[l - 1]; ++k) mixed[k + W[l - 1] * t] += cur[k + W[l - 1] * s2] * Om[s2 + S * t];
        for (size_t t = 0; t < S; ++t)
          for (size_t j = 0; j < W[l]; ++j) {
            double v = 0;
            for (size_t k = 0; k < W[l - 1]; ++k) v += V[j + W[l] * k] * mixed[k + W[l - 1] * t];
            nxt[j + W[l] * t] += c * v;
          }
      }
      cur = nxt;
    }
    const std::vector<double> r = rvec();
    const double *a = theta + net.offset_a();
    double f = 0;
    for (size_t t = 0; t < S; ++t)
      for (size_t j = 0; j < W[L]; ++j) f += a[j] * cur[j + W[L] * t] * r[t];
    return f / std::sqrt(static_cast<double>(W[L]));
  }
};

std::vector<double> random_theta(const Network &net, uint64_t seed) {
  am_rng r;
  am_rng_init(&r, seed, 7);
  std::vector<double> th(net.dim());
  net.sample_prior(r, th.data());
  return th;
}

}  // namespace

TEST_CASE("Path form of the forward pass equals the token-wise §1.3 network") {
  struct Case {
    size_t L;
    std::vector<size_t> H, W;
    std::vector<double> s;
    int readout;
  };
  const Case cases[] = {
      {2, {2, 3}, {3, 4, 2}, {1.0, 0.8, 1.2, 1.5}, 0},
      {1, {3}, {4, 3}, {0.7, 1.3, 0.9}, 2},
      {3, {2, 1, 2}, {2, 3, 2, 3}, {1.1, 0.9, 1.0, 1.2, 0.8}, 0},
  };
  uint64_t seed = 100;
  for (const Case &c : cases) {
    CAPTURE(c.L);
    const Problem pb(c.L, c.H, c.W, c.s, c.readout, seed++);
    const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
    const std::vector<double> th = random_theta(net, seed);
    Network::Work wk;
    net.init_work(wk);
    std::vector<double> f(pb.P);
    net.predict(th.data(), pb.P, pb.xi.data(), f.data(), wk);
    for (size_t mu = 0; mu < pb.P; ++mu) {
      // same sums in another order: agreement to round-off
      CHECK(f[mu] == doctest::Approx(pb.f_tokenwise(net, th.data(), mu)).epsilon(1e-12).scale(1.0));
    }
    // the log posterior's data term uses the same f
    double loss = 0, prior = 0;
    for (size_t mu = 0; mu < pb.P; ++mu) loss += (f[mu] - pb.y[mu]) * (f[mu] - pb.y[mu]);
    auto block = [&](size_t off, size_t n, double var) {
      for (size_t i = 0; i < n; ++i) prior += th[off + i] * th[off + i] / (2 * var);
    };
    block(0, c.W[0] * pb.N0, c.s[0]);
    for (size_t l = 1; l <= c.L; ++l) block(net.offset_v(l, 0), c.H[l - 1] * c.W[l] * c.W[l - 1], c.s[l]);
    block(net.offset_a(), c.W[c.L], c.s[c.L + 1]);
    CHECK(net.log_posterior(th.data(), nullptr, wk) ==
          doctest::Approx(-loss / (2 * pb.T) - prior).epsilon(1e-12));
  }
}

TEST_CASE("Sampled U = w wᵀ/W_0 with w_π = V1ᵀ_{h1}⋯VLᵀ_{hL} a/√(W1⋯WL) built by explicit products") {
  const Problem pb(2, {2, 3}, {3, 4, 2}, {1.0, 0.8, 1.2, 1.5}, 0, 200);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  const std::vector<double> th = random_theta(net, 201);
  Network::Work wk;
  net.init_work(wk);
  std::vector<double> U(pb.Htot * pb.Htot);
  net.order_parameter(th.data(), U.data(), wk);
  const auto &W = pb.W;
  std::vector<std::vector<double>> w(pb.Htot);
  for (size_t h1 = 0; h1 < 2; ++h1)
    for (size_t h2 = 0; h2 < 3; ++h2) {
      const double *a = th.data() + net.offset_a();
      const double *V2 = th.data() + net.offset_v(2, h2);  // W2 × W1
      const double *V1 = th.data() + net.offset_v(1, h1);  // W1 × W0
      std::vector<double> t(W[1], 0.0), u(W[0], 0.0);
      for (size_t k = 0; k < W[1]; ++k)
        for (size_t j = 0; j < W[2]; ++j) t[k] += V2[j + W[2] * k] * a[j];
      for (size_t i = 0; i < W[0]; ++i)
        for (size_t k = 0; k < W[1]; ++k) u[i] += V1[k + W[1] * i] * t[k];
      for (double &v : u) v /= std::sqrt(static_cast<double>(W[1] * W[2]));
      w[h1 * 3 + h2] = u;  // packing: h1 most significant
    }
  for (size_t p = 0; p < pb.Htot; ++p)
    for (size_t q = 0; q < pb.Htot; ++q) {
      double v = 0;
      for (size_t i = 0; i < W[0]; ++i) v += w[p][i] * w[q][i];
      CHECK(U[p + pb.Htot * q] == doctest::Approx(v / W[0]).epsilon(1e-12).scale(1.0));
    }
}

namespace {
double max_gradient_error(const Problem &pb, uint64_t seed) {
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  std::vector<double> th = random_theta(net, seed);
  Network::Work wk;
  net.init_work(wk);
  std::vector<double> g(net.dim());
  net.log_posterior(th.data(), g.data(), wk);
  const double h = 1e-5;
  double max_err = 0;
  for (size_t i = 0; i < net.dim(); ++i) {
    const double t0 = th[i];
    th[i] = t0 + h;
    const double lp_p = net.log_posterior(th.data(), nullptr, wk);
    th[i] = t0 - h;
    const double lp_m = net.log_posterior(th.data(), nullptr, wk);
    th[i] = t0;
    const double fd = (lp_p - lp_m) / (2 * h);
    max_err = std::max(max_err, std::fabs(fd - g[i]) / std::max(1.0, std::fabs(g[i])));
  }
  return max_err;
}
}  // namespace

TEST_CASE("Gradient of the log posterior vs central finite differences") {
  // central differences: O(h^2 f''') truncation plus O(eps |log p|/h) round-off, about 1e-9 here
  // H = (2, 2): every block takes the fused one-pass backward
  CHECK(max_gradient_error(Problem(2, {2, 2}, {3, 4, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 300), 301) < 1e-6);
  // H = (1, 9): H_tot = D_2 = 9 > 8 sends V_0 and layer 1 through the GEMM fallback
  CHECK(max_gradient_error(Problem(2, {1, 9}, {3, 2, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 310), 311) < 1e-6);
  // L = 3, unequal widths, mean readout
  CHECK(max_gradient_error(Problem(3, {2, 1, 2}, {2, 3, 2, 3}, {1.1, 0.9, 1.0, 1.2, 0.8}, 2, 320), 321) < 1e-6);
}

namespace {
// Solve the small SPD system A x = b (Cholesky, d ≤ 10), A row-major.
std::vector<double> spd_solve(std::vector<double> A, std::vector<double> b, size_t d) {
  for (size_t j = 0; j < d; ++j) {
    for (size_t k = 0; k < j; ++k) A[j * d + j] -= A[j * d + k] * A[j * d + k];
    A[j * d + j] = std::sqrt(A[j * d + j]);
    for (size_t i = j + 1; i < d; ++i) {
      for (size_t k = 0; k < j; ++k) A[i * d + j] -= A[i * d + k] * A[j * d + k];
      A[i * d + j] /= A[j * d + j];
    }
  }
  for (size_t i = 0; i < d; ++i) {
    for (size_t k = 0; k < i; ++k) b[i] -= A[i * d + k] * b[k];
    b[i] /= A[i * d + i];
  }
  for (size_t i = d; i-- > 0;) {
    for (size_t k = i + 1; k < d; ++k) b[i] -= A[k * d + i] * b[k];
    b[i] /= A[i * d + i];
  }
  return b;
}
}  // namespace

TEST_CASE("Readout-only posterior (all other weights fixed) matches its Gaussian closed form") {
  // f_μ = φ_μᵀ a is linear in a: posterior N(m, Σ), Σ⁻¹ = I/s_a + ΦᵀΦ/T, m = Σ Φᵀ y / T.
  const Problem pb(2, {2, 2}, {3, 4, 4}, {1.0, 0.8, 1.2, 1.5}, 0, 400, 12);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  PosteriorSettings st;
  st.chains = 4;
  st.sampler.warmup = 300;
  st.sampler.samples = 1000;
  st.fix_all_but_readout = true;
  st.keep_draws = true;
  am_rng parent;
  am_rng_init(&parent, 41, 0);
  bool interrupted = true;
  const auto chains = run_chains(net, 0, nullptr, st, parent, nullptr, &interrupted, am::sdk::threads_loop(2));
  CHECK_FALSE(interrupted);
  const size_t d = net.readout_dim(), D = net.dim(), oa = net.offset_a();
  REQUIRE(chains[0].samples_done == 1000);
  // the fixed weights are those of the draws (identical in every chain)
  std::vector<double> th(chains[0].draws.begin(), chains[0].draws.begin() + static_cast<std::ptrdiff_t>(D));
  for (const auto &c : chains) CHECK(std::memcmp(c.draws.data(), th.data(), oa * sizeof(double)) == 0);
  // Φ (P × d) by evaluating f at a = e_k
  Network::Work wk;
  net.init_work(wk);
  std::vector<double> Phi(pb.P * d), f(pb.P);
  for (size_t k = 0; k < d; ++k) {
    for (size_t j = 0; j < d; ++j) th[oa + j] = (j == k);
    net.predict(th.data(), pb.P, pb.xi.data(), f.data(), wk);
    for (size_t mu = 0; mu < pb.P; ++mu) Phi[mu * d + k] = f[mu];
  }
  const double sa = pb.s[3], T = pb.T;
  std::vector<double> prec(d * d, 0.0), rhs(d, 0.0);
  for (size_t i = 0; i < d; ++i) {
    prec[i * d + i] += 1.0 / sa;
    for (size_t j = 0; j < d; ++j)
      for (size_t mu = 0; mu < pb.P; ++mu) prec[i * d + j] += Phi[mu * d + i] * Phi[mu * d + j] / T;
    for (size_t mu = 0; mu < pb.P; ++mu) rhs[i] += Phi[mu * d + i] * pb.y[mu] / T;
  }
  const std::vector<double> mean = spd_solve(prec, rhs, d);
  std::vector<double> cov(d * d);
  for (size_t j = 0; j < d; ++j) {
    std::vector<double> e(d, 0.0);
    e[j] = 1;
    const std::vector<double> col = spd_solve(prec, e, d);
    for (size_t i = 0; i < d; ++i) cov[i * d + j] = col[i];
  }
  auto chains_of = [&](auto fn) {
    Chains c;
    for (const auto &co : chains) {
      std::vector<double> v;
      for (int k = 0; k < co.samples_done; ++k) v.push_back(fn(&co.draws[static_cast<size_t>(k) * D + oa]));
      c.push_back(v);
    }
    return c;
  };
  for (size_t i = 0; i < d; ++i) {
    const Diagnostics dm = diagnose(chains_of([&](const double *a) { return a[i]; }));
    CHECK(dm.rhat < 1.01);
    CHECK(std::fabs(dm.mean - mean[i]) < 4.5 * dm.mcse);  // 4.5 Monte-Carlo standard errors
    for (size_t j = i; j < d; ++j) {
      const Diagnostics dc =
          diagnose(chains_of([&](const double *a) { return (a[i] - mean[i]) * (a[j] - mean[j]); }));
      CHECK(std::fabs(dc.mean - cov[i * d + j]) < 4.5 * dc.mcse);
    }
  }
}

TEST_CASE("Same seed: bitwise identical chains on 1 and 2 threads; summaries pool every draw") {
  const Problem pb(2, {2, 2}, {3, 3, 3}, {1.0, 1.0, 1.0, 1.0}, 0, 500, 8);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  PosteriorSettings st;
  st.chains = 3;
  st.sampler.warmup = 60;
  st.sampler.samples = 40;
  st.keep_draws = true;
  am_rng parent;
  am_rng_init(&parent, 77, 3);
  const auto a = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(1));
  const auto b = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(2));
  REQUIRE(a.size() == 3);
  for (size_t c = 0; c < 3; ++c) {
    REQUIRE(a[c].draws.size() == b[c].draws.size());
    CHECK(std::memcmp(a[c].draws.data(), b[c].draws.data(), a[c].draws.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(a[c].logp.data(), b[c].logp.data(), a[c].logp.size() * sizeof(double)) == 0);
    CHECK(a[c].step_size == b[c].step_size);
  }
  // different chains differ
  CHECK(std::memcmp(a[0].draws.data(), a[1].draws.data(), 8 * sizeof(double)) != 0);

  // pooled test mean and unbiased variance equal the direct computation over all draws
  const Summary s = summarize(a, net.paths(), pb.P, pb.y.data(), st);
  Network::Work wk;
  net.init_work(wk);
  std::vector<std::vector<double>> fs;
  std::vector<double> Usum(net.paths() * net.paths(), 0.0), U(Usum.size());
  for (const auto &c : a)
    for (int k = 0; k < c.samples_done; ++k) {
      std::vector<double> f(pb.P);
      const double *th = &c.draws[static_cast<size_t>(k) * net.dim()];
      net.predict(th, pb.P, pb.xi.data(), f.data(), wk);
      fs.push_back(f);
      net.order_parameter(th, U.data(), wk);
      for (size_t e = 0; e < U.size(); ++e) Usum[e] += U[e];
    }
  const double n = static_cast<double>(fs.size());
  CHECK(s.total_draws == fs.size());
  for (size_t mu = 0; mu < pb.P; ++mu) {
    double m = 0, v = 0;
    for (const auto &f : fs) m += f[mu] / n;
    for (const auto &f : fs) v += (f[mu] - m) * (f[mu] - m) / (n - 1);
    CHECK(s.test_mean[mu] == doctest::Approx(m).epsilon(1e-12));
    CHECK(s.test_var[mu] == doctest::Approx(v).epsilon(1e-10));
  }
  for (size_t e = 0; e < U.size(); ++e) CHECK(s.U[e] == doctest::Approx(Usum[e] / n).epsilon(1e-12));
}

TEST_CASE("A monitor that asks to stop interrupts every chain; the draws so far are kept") {
  const Problem pb(1, {2}, {3, 3}, {1.0, 1.0, 1.0}, 0, 600, 8);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  PosteriorSettings st;
  st.chains = 2;
  st.sampler.warmup = 10;
  st.sampler.samples = 100000000;  // would never finish
  am_rng parent;
  am_rng_init(&parent, 1, 0);
  bool interrupted = false;
  int calls = 0;
  const auto out = run_chains(net, 0, nullptr, st, parent,
                              [&](const std::vector<ChainProgress> &p) {
                                ++calls;
                                return !(p[0].iterations > 50 && p[1].iterations > 50);
                              },
                              &interrupted, am::sdk::threads_loop(2));
  CHECK(interrupted);
  CHECK(calls >= 1);
  for (const auto &c : out) {
    CHECK(c.samples_done > 0);
    CHECK(c.logp.size() == static_cast<size_t>(c.samples_done));
  }
}

TEST_CASE("Non-integer widths are rejected with a message naming the width") {
  std::vector<size_t> w;
  const double ok[] = {10, 20, 30};
  CHECK(widths_to_integers(ok, 3, w).empty());
  CHECK(w == std::vector<size_t>{10, 20, 30});
  const double bad[] = {10, 20.5, 30};
  const std::string msg = widths_to_integers(bad, 3, w);
  CHECK(msg.find("W_1 = 20.5") != std::string::npos);
}

// ------------------------------------------------------------------ the marginal model (V_0 integrated out)
namespace {
// Ξ̃ (P × W_0 N_0, row-major here): f = Ξ̃ vec(V_0) given everything but V_0, built column by column by
// evaluating the network at V_0 = unit matrices (independent of the code under test).
std::vector<double> design_v0(const Network &net, std::vector<double> th, const std::vector<double> &xi, size_t P) {
  const size_t n0 = net.spec().widths[0] * net.spec().N0;
  Network::Work wk;
  net.init_work(wk);
  std::vector<double> X(P * n0), f(P);
  for (size_t c = 0; c < n0; ++c) {
    for (size_t i = 0; i < n0; ++i) th[i] = (i == c);
    net.predict(th.data(), P, xi.data(), f.data(), wk);
    for (size_t mu = 0; mu < P; ++mu) X[mu * n0 + c] = f[mu];
  }
  return X;
}

// K_U = s_0 Ξ̃ Ξ̃ᵀ (P × P, row-major): the covariance of the train outputs over the V_0 prior.
std::vector<double> kernel_u(const Network &net, const std::vector<double> &X, size_t P) {
  const size_t n0 = net.spec().widths[0] * net.spec().N0;
  std::vector<double> K(P * P, 0.0);
  for (size_t a = 0; a < P; ++a)
    for (size_t b = 0; b < P; ++b)
      for (size_t c = 0; c < n0; ++c) K[a * P + b] += net.spec().variances[0] * X[a * n0 + c] * X[b * n0 + c];
  return K;
}

double log_det_spd(std::vector<double> A, size_t d) {
  double ld = 0;
  for (size_t j = 0; j < d; ++j) {
    for (size_t k = 0; k < j; ++k) A[j * d + j] -= A[j * d + k] * A[j * d + k];
    A[j * d + j] = std::sqrt(A[j * d + j]);
    ld += 2 * std::log(A[j * d + j]);
    for (size_t i = j + 1; i < d; ++i) {
      for (size_t k = 0; k < j; ++k) A[i * d + j] -= A[i * d + k] * A[j * d + k];
      A[i * d + j] /= A[j * d + j];
    }
  }
  return ld;
}

// |value − the Gaussian integral over V_0| (relative) and the max gradient error vs central differences.
void check_marginal(const Problem &pb, uint64_t seed) {
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  const PairKernels C(net);
  MarginalDensity md(net, C);
  std::vector<double> th = random_theta(net, seed);
  const size_t off = net.spec().widths[0] * pb.N0, d = md.dim();
  REQUIRE(d == net.dim() - off);
  std::vector<double> q(th.begin() + static_cast<std::ptrdiff_t>(off), th.end()), g(d);
  const double lp = md.log_density(q.data(), g.data());
  // value: −½ yᵀ(K_U + T)⁻¹y − ½ log det(K_U + T) + log prior of the other weights
  std::vector<double> K = kernel_u(net, design_v0(net, th, pb.xi, pb.P), pb.P);
  for (size_t i = 0; i < pb.P; ++i) K[i * pb.P + i] += pb.T;
  const std::vector<double> alpha = spd_solve(K, pb.y, pb.P);
  double quad = 0, prior = 0;
  for (size_t i = 0; i < pb.P; ++i) quad += pb.y[i] * alpha[i];
  for (size_t l = 1; l <= pb.L; ++l)
    for (size_t h = 0; h < pb.H[l - 1]; ++h)
      for (size_t k = 0; k < pb.W[l] * pb.W[l - 1]; ++k) prior -= 0.5 * th[net.offset_v(l, h) + k] * th[net.offset_v(l, h) + k] / pb.s[l];
  for (size_t k = 0; k < pb.W[pb.L]; ++k) prior -= 0.5 * th[net.offset_a() + k] * th[net.offset_a() + k] / pb.s[pb.L + 1];
  const double expect = -0.5 * quad - 0.5 * log_det_spd(K, pb.P) + prior;
  CHECK(lp == doctest::Approx(expect).epsilon(1e-11));
  // gradient: central differences, O(h^2) truncation + round-off, about 1e-9 here
  const double h = 1e-5;
  double max_err = 0;
  for (size_t i = 0; i < d; ++i) {
    const double t0 = q[i];
    q[i] = t0 + h;
    const double lp_p = md.log_density(q.data(), nullptr);
    q[i] = t0 - h;
    const double lp_m = md.log_density(q.data(), nullptr);
    q[i] = t0;
    max_err = std::max(max_err, std::fabs((lp_p - lp_m) / (2 * h) - g[i]) / std::max(1.0, std::fabs(g[i])));
  }
  CHECK(max_err < 1e-6);
}
}  // namespace

TEST_CASE("Marginal model: log density = the Gaussian integral over V_0; gradient vs central finite differences") {
  check_marginal(Problem(2, {2, 2}, {3, 4, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 600), 601);
  check_marginal(Problem(2, {1, 9}, {3, 2, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 610), 611);                 // 45 path pairs
  check_marginal(Problem(3, {2, 1, 2}, {2, 3, 2, 3}, {1.1, 0.9, 1.0, 1.2, 0.8}, 2, 620, 9), 621);  // L = 3, mean
  // P = 40: the inverse of K goes through the block recursion of spd.h (blocks of more than 16 columns)
  check_marginal(Problem(2, {2, 2}, {3, 4, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 640, 40), 641);
}

TEST_CASE("Marginal model: every SIMD variant's kernels give the LAPACK route's log density and gradient") {
  // The scalar variant is the LAPACK route (dpotrf, the recursive inverse of spd.h, plain loops over the pair
  // kernels). Each route is backward stable: it returns the exact results for K + ΔK with ‖ΔK‖ ≲ P ε ‖K‖, which
  // moves K⁻¹'s entries, α and yᵀα by ≲ P κ ε relative and log det K = tr log K by ≲ P · P κ ε, with κ bounded by
  // tr K / T (K = K_U + T I, K_U ⪰ 0). Checked with a factor 10: the log density within 10 P κ ε (P + |log p|),
  // every gradient entry within 10 P κ ε max |gradient|. P = 100, the docs' size: the 8-column panels, a partial
  // last panel and the padding of every variant are exercised.
  const Problem pb(2, {2, 2}, {3, 4, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 650, 100);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  const PairKernels C(net);
  const std::vector<double> th = random_theta(net, 651);
  const size_t off = net.spec().widths[0] * pb.N0;
  const std::vector<double> q(th.begin() + static_cast<std::ptrdiff_t>(off), th.end());
  MarginalDensity ref(net, C, am::posterior::simd::spd_scalar_kernels());
  std::vector<double> g_ref(ref.dim()), g(ref.dim());
  const double lp_ref = ref.log_density(q.data(), g_ref.data());
  const std::vector<double> K = kernel_u(net, design_v0(net, th, pb.xi, pb.P), pb.P);
  double trace = 0;
  for (size_t i = 0; i < pb.P; ++i) trace += K[i * pb.P + i] + pb.T;
  const double kappa = trace / pb.T, tol = 10.0 * static_cast<double>(pb.P) * kappa * 2.2e-16;
  double gmax = 0;
  for (double v : g_ref) gmax = std::max(gmax, std::fabs(v));
  MESSAGE("kappa bound " << kappa << ", tolerance " << tol);
  for (size_t i = 0; const am::posterior::simd::SpdKernels *kv = am::posterior::simd::spd_variant(i); ++i) {
    const std::string variant = kv->name;
    CAPTURE(variant);
    MarginalDensity md(net, C, kv);
    const double lp = md.log_density(q.data(), g.data());
    CHECK(std::fabs(lp - lp_ref) <= tol * (static_cast<double>(pb.P) + std::fabs(lp_ref)));
    double err = 0;
    for (size_t k = 0; k < g.size(); ++k) err = std::max(err, std::fabs(g[k] - g_ref[k]));
    CHECK(err <= tol * gmax);
    // without the gradient: α from the factor by two triangular solves, no inverse
    CHECK(std::fabs(md.log_density(q.data(), nullptr) - lp) <= tol * (static_cast<double>(pb.P) + std::fabs(lp)));
  }
}

TEST_CASE("Marginal model: a point whose kernel is not finite has log density -inf and no completion") {
  // The factorisation no longer goes through LAPACKE's NaN scan of K; a NaN or an infinity in the weights (so in
  // U and K) must still read as "outside the support", never as a finite density or a completed draw.
  // P = 21: three panels of the SPD kernels, and padding rows their products write
  const Problem pb(2, {2, 2}, {3, 4, 3}, {1.0, 0.8, 1.2, 1.5}, 0, 630, 21);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  const PairKernels C(net);
  MarginalDensity md(net, C);
  const std::vector<double> th = random_theta(net, 631);
  const size_t off = net.spec().widths[0] * pb.N0, d = md.dim();
  std::vector<double> q(th.begin() + static_cast<std::ptrdiff_t>(off), th.end()), g(d);
  const double lp = md.log_density(q.data(), g.data());
  REQUIRE(std::isfinite(lp));
  const std::vector<double> g0 = g;
  am_rng rng;
  am_rng_init(&rng, 632, 0);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e300}) {
    CAPTURE(bad);
    for (size_t i : {size_t{0}, d - 1}) {  // a value-layer weight and a readout weight
      std::vector<double> qb = q;
      qb[i] = bad;
      CHECK(md.log_density(qb.data(), g.data()) == -std::numeric_limits<double>::infinity());
      CHECK(md.log_density(qb.data(), nullptr) == -std::numeric_limits<double>::infinity());
      CHECK(md.complete(qb.data(), rng) == nullptr);
      // a refused point leaves nothing behind: the finite point gives the same bits again
      CHECK(md.log_density(q.data(), g.data()) == lp);
      CHECK(std::memcmp(g.data(), g0.data(), d * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("Marginal model: the conditional draws of V_0 have the Gaussian conditional's mean and variance") {
  // Given the other weights, f_train = Ξ̃ vec(V_0) has posterior mean K_U (K_U + T)⁻¹ y and covariance
  // K_U − K_U (K_U + T)⁻¹ K_U. 4000 independent draws: means within 4.5 standard errors sd/√n, variances
  // within 4.5 standard errors var·√(2/(n−1)) of a Gaussian sample variance.
  const Problem pb(2, {2, 2}, {3, 3, 2}, {1.0, 0.9, 1.1, 1.3}, 0, 700, 7);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  const PairKernels C(net);
  MarginalDensity md(net, C);
  const std::vector<double> th = random_theta(net, 701);
  const size_t off = net.spec().widths[0] * pb.N0, P = pb.P;
  const std::vector<double> Ku = kernel_u(net, design_v0(net, th, pb.xi, P), P);
  std::vector<double> K = Ku;
  for (size_t i = 0; i < P; ++i) K[i * P + i] += pb.T;
  const std::vector<double> alpha = spd_solve(K, pb.y, P);
  std::vector<double> mean(P, 0.0), var(P, 0.0);
  for (size_t a = 0; a < P; ++a) {
    for (size_t b = 0; b < P; ++b) mean[a] += Ku[a * P + b] * alpha[b];
    std::vector<double> col(P);
    for (size_t b = 0; b < P; ++b) col[b] = Ku[b * P + a];
    const std::vector<double> s = spd_solve(K, col, P);
    var[a] = Ku[a * P + a];
    for (size_t b = 0; b < P; ++b) var[a] -= Ku[a * P + b] * s[b];
  }
  am_rng rng;
  am_rng_init(&rng, 702, 0);
  Network::Work wk;
  net.init_work(wk);
  const int n = 4000;
  std::vector<double> s1(P, 0.0), s2(P, 0.0), f(P);
  for (int k = 0; k < n; ++k) {
    const double *full = md.complete(th.data() + off, rng);
    REQUIRE(full != nullptr);
    CHECK(std::memcmp(full + off, th.data() + off, (net.dim() - off) * sizeof(double)) == 0);
    net.predict(full, P, pb.xi.data(), f.data(), wk);
    for (size_t i = 0; i < P; ++i) {
      s1[i] += f[i];
      s2[i] += f[i] * f[i];
    }
  }
  for (size_t i = 0; i < P; ++i) {
    const double m = s1[i] / n, v = (s2[i] - n * m * m) / (n - 1);
    CHECK(std::fabs(m - mean[i]) < 4.5 * std::sqrt(var[i] / n));
    CHECK(std::fabs(v - var[i]) < 4.5 * var[i] * std::sqrt(2.0 / (n - 1)));
  }
}

TEST_CASE("Marginal and full samplers agree: posterior means of U and of test predictions within MC error") {
  // The same posterior sampled two ways. Both summaries carry ESS-based standard errors (sd/√ESS_bulk for U, the
  // MCSE for the tracked test predictions); the difference of every mean must be within 4.5 combined errors.
  // (~0.5 s of CPU in a release build, most of it the full sampler)
  const Problem pb(2, {2, 2}, {3, 3, 3}, {1.0, 1.0, 1.0, 1.0}, 0, 800, 12);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  PosteriorSettings st;
  st.chains = 4;
  st.sampler.warmup = 150;
  st.sampler.samples = 400;
  am_rng parent;
  am_rng_init(&parent, 81, 0);
  const auto full = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(2));
  st.marginal = true;
  const auto marg = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(2));
  const size_t H = net.paths();
  const Summary a = summarize(full, H, pb.P, pb.y.data(), st), b = summarize(marg, H, pb.P, pb.y.data(), st);
  CHECK(a.total_draws == 1600);
  CHECK(b.total_draws == 1600);
  for (size_t e = 0; e < H * H; ++e) {
    CHECK(b.U_diag[e].rhat < 1.01);
    CHECK(std::fabs(a.U[e] - b.U[e]) < 4.5 * std::hypot(a.U_stderr[e], b.U_stderr[e]));
  }
  REQUIRE(a.tracked.size() == 5);
  for (size_t k = 0; k < a.tracked.size(); ++k) {
    const size_t i = a.tracked[k];
    CHECK(std::fabs(a.test_mean[i] - b.test_mean[i]) < 4.5 * std::hypot(a.test_diag[k].mcse, b.test_diag[k].mcse));
  }
  // the marginal sampler needs far fewer gradients per draw on this small problem already
  long long ga = 0, gb = 0;
  for (size_t c = 0; c < 4; ++c) {
    ga += full[c].gradient_evaluations;
    gb += marg[c].gradient_evaluations;
  }
  MESSAGE("gradient evaluations: full " << ga << ", marginal " << gb);
  CHECK(gb < ga);
}

TEST_CASE("Marginal sampler: bitwise identical chains on 1 and 2 threads") {
  // P = 8 and 37: one panel of the SPD kernels, and several with a partial last one and padding rows
  for (size_t P : {8, 37}) {
  CAPTURE(P);
  const Problem pb(2, {2, 2}, {3, 3, 3}, {1.0, 1.0, 1.0, 1.0}, 0, 900, P);
  const Network net(pb.spec(), pb.P, pb.xi.data(), pb.y.data());
  PosteriorSettings st;
  st.chains = 3;
  st.sampler.warmup = 60;
  st.sampler.samples = 40;
  st.keep_draws = true;
  st.marginal = true;
  am_rng parent;
  am_rng_init(&parent, 91, 3);
  const auto a = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(1));
  const auto b = run_chains(net, pb.P, pb.xi.data(), st, parent, nullptr, nullptr, am::sdk::threads_loop(2));
  for (size_t c = 0; c < 3; ++c) {
    REQUIRE(a[c].error.empty());
    REQUIRE(a[c].draws.size() == b[c].draws.size());
    CHECK(std::memcmp(a[c].draws.data(), b[c].draws.data(), a[c].draws.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(a[c].logp.data(), b[c].logp.data(), a[c].logp.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(a[c].f_mean.data(), b[c].f_mean.data(), a[c].f_mean.size() * sizeof(double)) == 0);
  }
  CHECK(std::memcmp(a[0].draws.data(), a[1].draws.data(), 8 * sizeof(double)) != 0);
  }
}
