// Hand-built heads of spec §6.2 and the attention semantics of spec §8 item 1 (via am_attention).
#include <doctest/doctest.h>

#include "markov_test_util.h"

#include <algorithm>
#include <cmath>

using namespace am::markov;
using markov_test::bilinear;
using markov_test::example;

TEST_CASE("same_token head on clean sequences: exact softmax of the logits 20/15/10/0/-10 (spec §6.2, §8 item 1)") {
  Options o;
  o.P = 16;
  o.P_test = 0;
  o.noise_inplane_sum = o.noise_inplane_diff = o.noise_out_of_plane = 0.0;
  am_rng rng;
  am_rng_init(&rng, 2024, 0);
  Split s;
  generate_split(o, &rng, o.P, &s);
  const std::vector<double> W = build_head(o, HeadKind::SameToken, nullptr);
  const am_head h = bilinear(W);
  markov_test::Ctx ctx;
  const size_t S = 31, T = 30;
  std::vector<double> Om(S * S);
  size_t n_repeat = 0, n_switch = 0;
  for (size_t mu = 0; mu < o.P; ++mu) {
    REQUIRE(am_attention(ctx, &h, 231, S, example(o, s, mu), Om.data()) == AM_OK);
    const int8_t *st = &s.states[mu * T];
    // query BOS (t = 0): every logit 0 ⇒ uniform
    for (size_t k = 0; k < S; ++k) CHECK(Om[k] == doctest::Approx(1.0 / 31.0).epsilon(1e-12));
    for (size_t t = 1; t < S; ++t) {
      // independent closed form of the clean logits ×β
      double logit[31], mx = -1e300, z = 0;
      for (size_t k = 0; k < S; ++k) {
        if (k == 0) logit[k] = 15.0;
        else logit[k] = 10.0 * st[k - 1] * st[t - 1] + (k + 1 == t ? 10.0 : 0.0);
        mx = std::max(mx, logit[k]);
      }
      for (size_t k = 0; k < S; ++k) z += std::exp(logit[k] - mx);
      for (size_t k = 0; k < S; ++k)
        // logits carry round-off ~1e-14 (q·v = ±1 up to one ulp, times β): 1e-10 relative is generous
        CHECK(Om[k + S * t] == doctest::Approx(std::exp(logit[k] - mx) / z).epsilon(1e-10));
      double colsum = 0;
      for (size_t k = 0; k < S; ++k) colsum += Om[k + S * t];
      CHECK(colsum == doctest::Approx(1.0).epsilon(1e-14));
      // semantics: predecessor when the state repeats, otherwise the featureless BOS
      if (t >= 2 && st[t - 1] == st[t - 2]) {
        CHECK(Om[(t - 1) + S * t] > 0.99);  // 1/(1+e^-5+29e^-10) = 0.9933
        ++n_repeat;
      } else {
        const double *col = &Om[S * t];
        CHECK(std::max_element(col, col + S) - col == 0);
        CHECK(Om[0 + S * t] > 0.8);  // worst case 1/(1+28e^-5) = 0.84
        ++n_switch;
      }
    }
  }
  CHECK(n_repeat > 50);  // both branches exercised
  CHECK(n_switch > 50);
}

TEST_CASE("uniform head and zero matrix give exactly uniform attention on noisy sequences") {
  Options o;
  o.P = 4;
  o.P_test = 0;
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  Split s;
  generate_split(o, &rng, o.P, &s);
  const std::vector<double> U = build_head(o, HeadKind::Uniform, nullptr);
  const std::vector<double> Z = build_head(o, HeadKind::Blank, nullptr);
  CHECK(std::all_of(Z.begin(), Z.end(), [](double v) { return v == 0.0; }));
  Options o0 = o;
  o0.p_random = 0.0;
  am_rng r0;
  am_rng_init(&r0, 1, 1);
  const std::vector<double> R0 = build_head(o0, HeadKind::Random, &r0);  // random head with p = 0 is the zero matrix
  CHECK(R0 == Z);
  markov_test::Ctx ctx;
  const size_t S = 31;
  std::vector<double> Om(S * S);
  for (const auto *W : {&U, &Z}) {
    const am_head h = bilinear(*W);
    for (size_t mu = 0; mu < o.P; ++mu) {
      REQUIRE(am_attention(ctx, &h, 231, S, example(o, s, mu), Om.data()) == AM_OK);
      // constant logits: softmax is 1/31 up to the last bit
      for (double v : Om) CHECK(v == doctest::Approx(1.0 / 31.0).epsilon(1e-14));
    }
  }
}

TEST_CASE("random head: block structure and scales (spec §6.2)") {
  Options o;
  o.beta_heads = 10.0;
  o.p_random = 0.5;
  am_rng rng;
  am_rng_init(&rng, 77, 147);
  const std::vector<double> W = build_head(o, HeadKind::Random, &rng);
  const size_t Nf = 200, N0 = 231;
  double ff = 0, pp = 0, cross = 0;
  size_t nff = 0, npp = 0, ncr = 0;
  for (size_t j = 0; j < N0; ++j)
    for (size_t i = 0; i < N0; ++i) {
      const double v = W[i + N0 * j];
      if (i < Nf && j < Nf) ff += v * v, ++nff;
      else if (i >= Nf && j >= Nf) pp += v * v, ++npp;
      else cross += v * v, ++ncr;
    }
  // entry variances (β p)²/N_f², (β p)², (β p)²/N_f; χ² relative sd sqrt(2/n), accept 5 sd
  CHECK(ff / nff == doctest::Approx(25.0 / 40000.0).epsilon(5 * std::sqrt(2.0 / nff)));
  CHECK(pp / npp == doctest::Approx(25.0).epsilon(5 * std::sqrt(2.0 / npp)));
  CHECK(cross / ncr == doctest::Approx(25.0 / 200.0).epsilon(5 * std::sqrt(2.0 / ncr)));
  // same stream ⇒ same head: networks share their random heads
  const am_rng base = [] {
    am_rng r;
    am_rng_init(&r, 3, 7);
    return r;
  }();
  const HeadMatrices all = build_network_heads(o, network_for(Config::All), base);
  const HeadMatrices gd = build_network_heads(o, network_for(Config::GoodDenoising), base);
  REQUIRE(all.W.size() == 4);
  REQUIRE(gd.W.size() == 3);
  CHECK(all.W[1] == gd.W[1]);   // layer-1 random head
  CHECK(all.W[2] == gd.W[2]);   // layer-2 uniform head
  CHECK(all.W[1] != all.W[3]);  // the two random heads differ
}

TEST_CASE("network configurations and path labels (spec §6.3)") {
  const Network all = network_for(Config::All);
  REQUIRE(all.layers.size() == 2);
  CHECK(all.layers[0] == std::vector<HeadKind>{HeadKind::SameToken, HeadKind::Random});
  CHECK(all.layers[1] == std::vector<HeadKind>{HeadKind::Uniform, HeadKind::Random});
  REQUIRE(all.path_labels.size() == 4);
  CHECK(std::string(all.path_labels[0]) == "g (same→unif)");
  CHECK(std::string(all.path_labels[1]) == "a1 (same→rand)");
  CHECK(std::string(all.path_labels[2]) == "d (rand→unif)");
  CHECK(std::string(all.path_labels[3]) == "a2 (rand→rand)");
  const Network two = network_for(Config::TwoPaths);
  CHECK(two.layers[0] == std::vector<HeadKind>{HeadKind::SameToken, HeadKind::Blank});
  CHECK(two.layers[1] == std::vector<HeadKind>{HeadKind::Uniform});
  CHECK(network_for(Config::Good).path_labels.size() == 1);
  // path subsets: indices into the configuration's packing order, labelled g and d
  for (Config c : {Config::All, Config::TwoPaths, Config::GoodDenoising, Config::Good}) {
    CAPTURE(config_name(c));
    const Network n = network_for(c);
    const auto subs = path_subsets(c);
    REQUIRE(!subs.empty());
    CHECK(std::string(subs[0].name) == "good");
    CHECK(std::string(n.path_labels[subs[0].paths.at(0)]).substr(0, 2) == "g ");
    if (c == Config::Good) {
      CHECK(subs.size() == 1);   // no denoising path in the good network
      continue;
    }
    REQUIRE(subs.size() == 2);
    CHECK(std::string(subs[1].name) == "good_denoising");
    REQUIRE(subs[1].paths.size() == 2);
    CHECK(std::string(n.path_labels[subs[1].paths[1]]).substr(0, 2) == "d ");
  }
}
