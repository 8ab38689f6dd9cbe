// Generator of spec §6.1: chain statistics, noise decomposition, BOS and position codes.
#include <doctest/doctest.h>

#include "markov_test_util.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace am::markov;
using markov_test::example;

namespace {

Options small(size_t P) {
  Options o;
  o.P = P;
  o.P_test = 0;
  return o;
}

}  // namespace

TEST_CASE("markov generator: labels balanced, class +1 first, stay frequencies within binomial error") {
  Options o = small(400);
  am_rng rng;
  am_rng_init(&rng, 12345, 0);
  Split s;
  generate_split(o, &rng, o.P, &s);
  REQUIRE(s.X.size() == o.P * 31 * 231);
  for (size_t mu = 0; mu < o.P; ++mu) CHECK(s.y[mu] == (mu < 200 ? 1.0 : -1.0));

  const SplitStats st = split_stats(o, s);
  CHECK(st.positives == 200);
  CHECK(st.negatives == 200);
  CHECK(st.transitions_pos == 200 * 29);
  CHECK(st.transitions_neg == 200 * 29);
  // binomial: sd = sqrt(p(1-p)/n) with n = 5800 transitions per class; accept 4 sd
  const double sd_pos = std::sqrt(0.7 * 0.3 / 5800.0);
  CHECK(std::fabs(st.stay_frequency_pos() - 0.7) < 4 * sd_pos);
  CHECK(std::fabs(st.stay_frequency_neg() - 0.3) < 4 * sd_pos);
  // initial state ±1 with probability 1/2 (n = 400, 4 sd = 0.1)
  size_t plus0 = 0;
  for (size_t mu = 0; mu < o.P; ++mu) plus0 += s.states[mu * o.seq_len] > 0;
  CHECK(std::fabs(double(plus0) / 400.0 - 0.5) < 0.1);

  // other stay probabilities follow the parameters
  Options o2 = small(400);
  o2.stay_pos = 0.95;
  o2.stay_neg = 0.05;
  Split s2;
  generate_split(o2, &rng, o2.P, &s2);
  const SplitStats st2 = split_stats(o2, s2);
  const double sd2 = std::sqrt(0.95 * 0.05 / 5800.0);
  CHECK(std::fabs(st2.stay_frequency_pos() - 0.95) < 4 * sd2);
  CHECK(std::fabs(st2.stay_frequency_neg() - 0.05) < 4 * sd2);
}

TEST_CASE("markov generator: BOS and one-hot positions are exact; clean emissions are ±√2 blocks") {
  Options o = small(20);
  o.noise_inplane_sum = o.noise_inplane_diff = o.noise_out_of_plane = 0.0;
  am_rng rng;
  am_rng_init(&rng, 7, 3);
  Split s;
  generate_split(o, &rng, o.P, &s);
  const size_t Nf = 200, N0 = 231, S = 31;
  size_t bad_pos = 0, bad_bos = 0, bad_emit = 0;  // counted, so a failure reports how many entries are off
  for (size_t mu = 0; mu < o.P; ++mu) {
    const double *X = example(o, s, mu);
    for (size_t t = 0; t < S; ++t)
      for (size_t i = 0; i < N0; ++i) {
        const double v = X[i + N0 * t];
        if (i >= Nf) {
          bad_pos += v != (i - Nf == t ? 1.0 : 0.0);
        } else if (t == 0) {
          bad_bos += v != 0.0;  // BOS has zero features
        } else {
          const int state = s.states[mu * o.seq_len + (t - 1)];
          const bool on = (state > 0) == (i < Nf / 2);
          bad_emit += v != (on ? std::sqrt(2.0) : 0.0);
        }
      }
  }
  CHECK(bad_pos == 0);
  CHECK(bad_bos == 0);
  CHECK(bad_emit == 0);
}

TEST_CASE("markov generator: noise variances along u_par, u_perp and out of plane (chi-square error)") {
  Options o = small(400);
  o.noise_inplane_sum = 0.5;   // along u_∥ ∝ v₊+v₋
  o.noise_inplane_diff = 2.0;  // along u_⊥ ∝ v₊−v₋
  o.noise_out_of_plane = 3.0;  // the rest
  am_rng rng;
  am_rng_init(&rng, 99, 1);
  Split s;
  generate_split(o, &rng, o.P, &s);
  const size_t Nf = 200, N0 = 231, T = 30;
  const double u = 1.0 / std::sqrt(200.0);
  double saa = 0, sbb = 0, sab = 0, srr = 0, max_orth = 0;
  size_t n = 0;
  for (size_t mu = 0; mu < o.P; ++mu) {
    const double *X = example(o, s, mu);
    for (size_t t = 1; t <= T; ++t) {
      const int state = s.states[mu * T + (t - 1)];
      double noise[200];
      double a = 0, b = 0;
      for (size_t i = 0; i < Nf; ++i) {
        const double clean = ((state > 0) == (i < Nf / 2)) ? std::sqrt(2.0) : 0.0;
        noise[i] = X[i + N0 * t] - clean;
        a += noise[i] * u;
        b += noise[i] * (i < Nf / 2 ? u : -u);
      }
      double rr = 0, ra = 0, rb = 0;
      for (size_t i = 0; i < Nf; ++i) {
        const double r = noise[i] - a * u - b * (i < Nf / 2 ? u : -u);
        rr += r * r;
        ra += r * u;
        rb += r * (i < Nf / 2 ? u : -u);
      }
      max_orth = std::fmax(max_orth, std::fmax(std::fabs(ra), std::fabs(rb)));
      saa += a * a;
      sbb += b * b;
      sab += a * b;
      srr += rr;
      ++n;
    }
  }
  REQUIRE(n == 12000);
  // E[a²] = σ_sum², relative sd of the χ²_n mean is sqrt(2/n) = 0.013; accept 5 sd
  const double rel = 5 * std::sqrt(2.0 / double(n));
  CHECK(saa / double(n) == doctest::Approx(0.25).epsilon(rel));
  CHECK(sbb / double(n) == doctest::Approx(4.0).epsilon(rel));
  // out of plane: n·(N_f−2) degrees of freedom
  const double rel_oop = 5 * std::sqrt(2.0 / (double(n) * 198.0));
  CHECK(srr / (double(n) * 198.0) == doctest::Approx(9.0).epsilon(rel_oop));
  // in-plane components uncorrelated: |mean(ab)| within 5 sd = 5 σ_a σ_b / sqrt(n)
  CHECK(std::fabs(sab / double(n)) < 5 * 0.5 * 2.0 / std::sqrt(double(n)));
  CHECK(max_orth < 1e-12);  // the rest is orthogonal to the plane (round-off only)
}

TEST_CASE("markov generator: reproducible per stream, different across streams") {
  Options o = small(10);
  am_rng a, b, c;
  am_rng_init(&a, 5, 0);
  am_rng_init(&b, 5, 0);
  am_rng_init(&c, 5, 1);
  Split sa, sb, sc;
  generate_split(o, &a, o.P, &sa);
  generate_split(o, &b, o.P, &sb);
  generate_split(o, &c, o.P, &sc);
  CHECK(sa.X == sb.X);
  CHECK(sa.states == sb.states);
  CHECK(sa.X != sc.X);
}

TEST_CASE("markov options: auto out-of-plane noise and validation") {
  Options o;
  CHECK(effective_out_of_plane(o) == 1.0);
  o.config = Config::TwoPaths;
  CHECK(effective_out_of_plane(o) == 5.0);
  o.noise_out_of_plane = 2.5;
  CHECK(effective_out_of_plane(o) == 2.5);
  markov_test::Ctx ctx;
  CHECK(validate(ctx, o) == AM_OK);
  o.feature_dim = 201;
  CHECK(validate(ctx, o) == AM_ERR_USAGE);
  o.feature_dim = 200;
  o.variances = {1, 1, 1};
  CHECK(validate(ctx, o) == AM_ERR_USAGE);
  CHECK(std::string(ctx.err()).find("variances") != std::string::npos);
}

// A rank of a distributed run makes only its block of each split (am_context_data_part): the generator starts at the
// word of the stream where the whole split draws that block's noise. Nothing is approximate here: the rows must be
// the whole split's bits (memcmp), and the stream must be left where the whole split leaves it.
TEST_CASE("markov generator: a block of rows made alone is those rows of the whole split, bit for bit") {
  Options o = small(37);  // odd: the blocks of 3 parts are 12, 12, 13 rows
  o.seq_len = 5;
  o.feature_dim = 6;
  const size_t row = tokens(o) * input_dim(o);
  am_rng whole_rng;
  am_rng_init(&whole_rng, 77, 3);
  Split whole;
  generate_split(o, &whole_rng, o.P, &whole);
  const double next_whole = am_rng_uniform(&whole_rng);
  size_t covered = 0;
  for (int part = 0; part < 3; ++part) {
    size_t b = 0, e = 0;
    part_rows(o.P, part, 3, &b, &e);
    CHECK(b == covered);  // consecutive blocks covering 0..P
    covered = e;
    am_rng r;
    am_rng_init(&r, 77, 3);
    Split s;
    generate_split(o, &r, o.P, &s, b, e);
    CHECK(s.begin == b);
    REQUIRE(s.rows == e - b);
    REQUIRE(s.X.size() == s.rows * row);
    CHECK(std::memcmp(s.X.data(), whole.X.data() + b * row, s.X.size() * sizeof(double)) == 0);
    CHECK(s.y == whole.y);            // labels and chains of the whole split on every part
    CHECK(s.states == whole.states);
    CHECK(am_rng_uniform(&r) == next_whole);
  }
  CHECK(covered == o.P);
  size_t b = 0, e = 0;
  part_rows(5, 0, 1, &b, &e);  // one part: the whole
  CHECK((b == 0 && e == 5));
  part_rows(1, 0, 2, &b, &e);  // more parts than rows: empty blocks
  CHECK(b == e);
}

TEST_CASE("markov dataset in parts: X_train/y_train of this part's rows and part.train = [begin, P]") {
  Options o = small(11);
  o.P_test = 7;
  o.seq_len = 4;
  o.feature_dim = 4;
  am_rng rng;
  am_rng_init(&rng, 9, 0);
  markov_test::Rec whole, wex;
  markov_test::Ctx ctx;
  REQUIRE(make_dataset(ctx, o, rng, whole, wex) == AM_OK);
  CHECK(am_record_get(whole, "part") == nullptr);
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.data_part = 1;
  cs.data_parts = 2;
  am_context *pc = nullptr;
  REQUIRE(am_context_create(&pc, &cs) == AM_OK);
  markov_test::Rec ds, ex;
  REQUIRE_MESSAGE(make_dataset(pc, o, rng, ds, ex) == AM_OK, am_context_last_error(pc));
  for (const char *split : {"train", "test"}) {
    const size_t P = std::string(split) == "train" ? o.P : o.P_test, b = P / 2;
    CAPTURE(split);
    std::vector<double> rows = am::sdk::get_vector(am_record_get(ds, "part"), split);
    CHECK(rows == std::vector<double>{double(b), double(P)});
    am_array_view xw, xp;
    REQUIRE(am_record_get_array(whole, (std::string("X_") + split).c_str(), &xw) == AM_OK);
    REQUIRE(am_record_get_array(ds, (std::string("X_") + split).c_str(), &xp) == AM_OK);
    REQUIRE(xp.shape[0] == P - b);
    const size_t row = xp.shape[1] * xp.shape[2];
    CHECK(std::memcmp(xp.data, static_cast<const double *>(xw.data) + b * row, (P - b) * row * sizeof(double)) == 0);
    const std::vector<double> yw = am::sdk::get_vector(whole, (std::string("y_") + split).c_str());
    const std::vector<double> yp = am::sdk::get_vector(ds, (std::string("y_") + split).c_str());
    CHECK(yp == std::vector<double>(yw.begin() + long(b), yw.end()));
  }
  // the extras (statistics of the chains) are the whole data's on every part
  const am_record *sw = am_record_get(am_record_get(wex, "data_stats"), "train");
  const am_record *sp = am_record_get(am_record_get(ex, "data_stats"), "train");
  CHECK(am_record_number(am_record_get(sp, "stay_frequency_pos")) ==
        am_record_number(am_record_get(sw, "stay_frequency_pos")));
  am_context_destroy(&pc);
}
