// Mean-field DCA on alignments whose answer is known (meanfield.h): independent sites give couplings 0 — exactly,
// when the pair frequencies factor exactly and no pseudocount mixes in (or the marginals are uniform) — and a pair of
// copied columns ranks first; and every kind of bad input comes back as a status with a message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../memory_limit.hpp"
#include "meanfield_test_util.hpp"

using namespace mf_test;

namespace {

// Every combination of the sites' value lists (each list's length a power of 2, so every frequency is exact in
// binary): f_ij(a, b) = f_i(a) f_j(b) exactly.
Alignment product_design(const std::vector<std::vector<int>> &sites, int C) {
  Alignment a;
  a.L = (int)sites.size();
  a.C = C;
  size_t M = 1;
  for (const auto &s : sites) M *= s.size();
  for (size_t r = 0; r < M; ++r) {
    size_t k = r;
    for (const auto &s : sites) {
      a.tokens.push_back(s[k % s.size()]);
      k /= s.size();
    }
  }
  return a;
}

double max_abs_offdiag(const std::vector<double> &J, int L, int C) {
  double m = 0.0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      for (int k = 0; k < C * C && i != j; ++k) m = std::max(m, std::fabs(J[((size_t)i * L + j) * C * C + k]));
  return m;
}

am_status run_status(const Alignment &a, const am::meanfield::Options &o, std::string *msg) {
  Rec ds, run;
  Ctx ctx;
  put_dataset(ds.r, a);
  const am_status st = am::meanfield::estimate(ctx.c, o, ds.r, am::sdk::serial_loop(), run.r);
  *msg = ctx.err();
  return st;
}

}  // namespace

TEST_CASE("meanfield: independent sites have couplings 0 — exactly without pseudocount or with uniform marginals, "
          "small with pseudocount and skewed marginals") {
  const Alignment skewed =
      product_design({{0, 0, 0, 1, 1, 2, 3, 3}, {0, 1, 1, 1, 2, 2, 2, 3}, {0, 1, 2, 2, 3, 3, 3, 3}}, 4);
  am::meanfield::Options o;
  o.pseudocount = 0.0;
  Rec r0;
  estimate(skewed, o, r0);
  CHECK(max_abs_offdiag(numbers(am_record_get(r0.r, "params"), "J"), 3, 4) == 0.0);
  for (double s : numbers(r0.r, "scores")) CHECK(s == 0.0);
  // With λ > 0 the mixed frequencies no longer factor: C_ij = λ(1 − λ) d_i d_jᵀ with d_i = f_i − 1/C, a rank-one
  // block. To first order in it, e_ij = C_ii⁻¹ C_ij C_jj⁻¹, and the multinomial block's inverse is known in closed
  // form, (diag f̃ − f̃ f̃ᵀ)⁻¹ = diag(1/f̃) + 11ᵀ/f̃(ref): e_ij(a, b) ≈ λ(1 − λ) g_i(a) g_j(b) with
  // g_i(a) = d_i(a)/f̃_i(a) − d_i(ref)/f̃_i(ref). The next order is smaller by λ(1 − λ) Σ_a d²/f̃ ≈ 1 % at λ = 0.02.
  o.pseudocount = 0.02;
  Rec r1;
  estimate(skewed, o, r1);
  const std::vector<double> J1 = numbers(am_record_get(r1.r, "params"), "J");
  const double lam = o.pseudocount;
  std::vector<double> g(3 * 4, 0.0);
  for (int i = 0; i < 3; ++i) {
    std::vector<double> f(4, 0.0);
    for (size_t mu = 0; mu < skewed.M(); ++mu) f[skewed.tokens[mu * 3 + i]] += 1.0 / skewed.M();
    for (int a = 0; a < 3; ++a)  // the reference state: the last colour, 3
      g[i * 4 + a] = (f[a] - 0.25) / ((1 - lam) * f[a] + lam / 4) - (f[3] - 0.25) / ((1 - lam) * f[3] + lam / 4);
  }
  double worst = 0.0, largest = 0.0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int a = 0; a < 4 && i != j; ++a)
        for (int b = 0; b < 4; ++b) {
          const double pred = lam * (1 - lam) * g[i * 4 + a] * g[j * 4 + b];
          worst = std::max(worst, std::fabs(J1[((size_t)i * 3 + j) * 16 + a * 4 + b] - pred));
          largest = std::max(largest, std::fabs(pred));
        }
  CAPTURE(largest);
  CHECK(largest > 0.01);
  CHECK(worst <= 0.03 * largest);
  o.pseudocount = 0.5;
  // uniform marginals: f − 1/C = 0, so 0 again with the pseudocount
  const Alignment uniform = product_design({{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}, 4);
  Rec r2;
  estimate(uniform, o, r2);
  CHECK(max_abs_offdiag(numbers(am_record_get(r2.r, "params"), "J"), 3, 4) == 0.0);
}

TEST_CASE("meanfield: two copied columns rank first, with their site numbers and letters in the contacts") {
  Alignment a = random_alignment(21, 400, 8, 5, 0.0);
  for (size_t mu = 0; mu < a.M(); ++mu) a.tokens[mu * 8 + 6] = a.tokens[mu * 8 + 2];
  a.alphabet = "-KLMN";
  a.sites = {101, 102, 103, 104, 105, 106, 107, 108};
  Rec run;
  estimate(a, am::meanfield::Options{}, run);
  const am_record *c = am_record_get(run.r, "contacts");
  CHECK(numbers(c, "i")[0] == 103);
  CHECK(numbers(c, "j")[0] == 107);
  CHECK(numbers(c, "separation")[0] == 4);
  const std::vector<double> s = numbers(c, "score");
  CHECK(s[0] > 5 * std::fabs(s[1]));  // far ahead of the rest (pure noise)
  CHECK(std::string(am_record_string(am_record_get(run.r, "reference_state"))) == "-");
  CHECK(am::meanfield::is_meanfield_fit(run.r));
}

TEST_CASE("meanfield: the same bits on one thread and on two") {
  const Alignment a = random_alignment(5, 300, 12, 4, 0.4);
  Rec r1, r2;
  estimate(a, am::meanfield::Options{}, r1, am::sdk::serial_loop());
  estimate(a, am::meanfield::Options{}, r2, am::sdk::threads_loop(2));
  CHECK(numbers(r1.r, "scores") == numbers(r2.r, "scores"));
  CHECK(numbers(am_record_get(r1.r, "params"), "J") == numbers(am_record_get(r2.r, "params"), "J"));
}

TEST_CASE("meanfield: bad input is a status with a message, never a crash") {
  am::meanfield::Options o;
  std::string msg;
  Ctx ctx;
  Rec run, att;
  am_record_set_string(att.r, "kind", "attention");  // a dataset of the wrong kind
  CHECK(am::meanfield::estimate(ctx.c, o, att.r, am::sdk::serial_loop(), run.r) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("kind 'attention'") != std::string::npos);
  CHECK(am::meanfield::estimate(ctx.c, o, nullptr, am::sdk::serial_loop(), run.r) == AM_ERR_INVALID_ARGUMENT);
  // copied columns without pseudocount: C is singular
  Alignment a = random_alignment(22, 200, 5, 3, 0.0);
  for (size_t mu = 0; mu < a.M(); ++mu) a.tokens[mu * 5 + 4] = a.tokens[mu * 5 + 1];
  o.pseudocount = 0.0;
  CHECK(run_status(a, o, &msg) == AM_ERR_SINGULAR);
  CAPTURE(msg);
  const bool named = msg.find("not positive definite") != std::string::npos ||
                     msg.find("numerically singular") != std::string::npos;
  CHECK(named);
  CHECK(msg.find("pseudocount 0") != std::string::npos);
  // a state never seen at a site, without pseudocount: named by its site number and letter
  Alignment b = random_alignment(23, 200, 4, 3, 0.0);
  for (size_t mu = 0; mu < b.M(); ++mu) b.tokens[mu * 4 + 2] = b.tokens[mu * 4 + 2] == 2 ? 1 : b.tokens[mu * 4 + 2];
  b.alphabet = "-AC";
  b.sites = {7, 8, 9, 10};
  CHECK(run_status(b, o, &msg) == AM_ERR_SINGULAR);
  CHECK(msg.find("site 9 (state 'C')") != std::string::npos);
  o.pseudocount = 0.5;  // the pseudocount makes both positive definite
  CHECK(run_status(a, o, &msg) == AM_OK);
  CHECK(run_status(b, o, &msg) == AM_OK);
  // weights that sum to 0; tokens outside 0..C−1
  Alignment z = random_alignment(24, 20, 4, 3, 0.0);
  z.w.assign(20, 0.0);
  CHECK(run_status(z, o, &msg) == AM_ERR_DOMAIN);
  CHECK(msg.find("weights sum to 0") != std::string::npos);
  Alignment bad = random_alignment(25, 20, 4, 3, 0.0);
  bad.tokens[5] = 7;
  CHECK(run_status(bad, o, &msg) < 0);
  CHECK(!msg.empty());
}

TEST_CASE("meanfield: a problem over the memory budget is refused before anything is allocated") {
  const am_test::Limit limit("64M");
  const Alignment a = random_alignment(26, 10, 400, 21, 0.0);  // n = 8000: C alone is 512 MB
  std::string msg;
  CHECK(run_status(a, am::meanfield::Options{}, &msg) == AM_ERR_NO_MEMORY);
  CAPTURE(msg);
  CHECK(msg.find("mean-field DCA") != std::string::npos);
  CHECK(msg.find("L = 400, C = 21") != std::string::npos);
}

TEST_CASE("meanfield memory: the estimate against the peak RSS the estimate adds") {
#if defined(__SANITIZE_ADDRESS__)
  return;  // ASan's allocator keeps freed blocks in quarantine and adds shadow pages: RSS is not the estimate's count
#else
  const am_test::Limit limit(nullptr);
  for (const bool params : {true, false}) {
    const Alignment a = random_alignment(27, 400, 120, 21, 0.3);  // n = 2400: C is 46 MB, J 51 MB
    Rec ds;
    put_dataset(ds.r, a);
    am::meanfield::Options o;
    o.params = params;
    const double rise = am_test::peak_above([&] {
      Rec run;
      Ctx ctx;
      REQUIRE(am::meanfield::estimate(ctx.c, o, ds.r, am::sdk::serial_loop(), run.r) == AM_OK);
    });
    if (rise < 0) return;  // no clear_refs here: nothing to measure against
    am::potts::FitShape s;
    s.M = a.M();
    s.L = a.L;
    s.C = a.C;
    const double est = am::meanfield::meanfield_bytes(s, params);
    CAPTURE(params);
    CAPTURE(est);
    CAPTURE(rise);
    CHECK(est / rise >= 0.9);
    CHECK(est / rise <= 1.1);
  }
#endif
}

TEST_CASE("meanfield: the task's held-out rows are counted (include, the default) or not (exclude); params=0 writes "
          "no parameters") {
  const Alignment a = random_alignment(28, 50, 6, 4, 0.5), t = random_alignment(29, 10, 6, 4, 0.5);
  Rec ds;
  put_dataset(ds.r, a);
  const size_t sh[2] = {t.M(), (size_t)t.L};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.tokens.data());
  am_record_set_array(ds.r, "tokens_test", &v);
  const std::vector<double> wt(10, 0.5);
  am_record_set_vector(ds.r, "weights_test", wt.data(), wt.size());
  am::meanfield::Options o;
  Rec inc, exc, all;
  Ctx ctx;
  REQUIRE(am::meanfield::estimate(ctx.c, o, ds.r, am::sdk::serial_loop(), inc.r) == AM_OK);
  o.held_out = "exclude";
  o.params = false;
  REQUIRE(am::meanfield::estimate(ctx.c, o, ds.r, am::sdk::serial_loop(), exc.r) == AM_OK);
  CHECK(number(inc.r, "M") == 60);
  CHECK(number(inc.r, "neff") == 55);  // 50 × 1 + 10 × 0.5
  CHECK(number(inc.r, "M_test") == 10);
  CHECK(std::string(am_record_string(am_record_get(inc.r, "rows"))) == "all");
  CHECK(number(exc.r, "M") == 50);
  CHECK(number(exc.r, "neff") == 50);
  CHECK(std::string(am_record_string(am_record_get(exc.r, "rows"))) == "train");
  CHECK(am_record_get(inc.r, "params") != nullptr);
  CHECK(am_record_get(exc.r, "params") == nullptr);
  // include = the training rows and the held-out rows as one alignment
  Alignment joined = a;
  joined.tokens.insert(joined.tokens.end(), t.tokens.begin(), t.tokens.end());
  joined.w.assign(50, 1.0);
  joined.w.insert(joined.w.end(), wt.begin(), wt.end());
  estimate(joined, am::meanfield::Options{}, all);
  CHECK(numbers(inc.r, "scores") == numbers(all.r, "scores"));
  CHECK(numbers(inc.r, "scores") != numbers(exc.r, "scores"));
}
