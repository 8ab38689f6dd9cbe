// Sequence weights: the fast counts against a direct O(M²·L) count written here (plmc's test, id ≥ (1 − θ)·L in
// double arithmetic), exact integer agreement, on hand-counted and random alignments and on every thread count.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <random>

#include "msa_test_util.hpp"
#include "weights.hpp"

using namespace msa_test;

namespace {

// Neighbours of every row by the definition, one column at a time.
std::vector<uint32_t> direct_counts(const std::vector<uint8_t> &tok, size_t M, size_t L, double theta) {
  std::vector<uint32_t> n(M, 0);
  for (size_t s = 0; s < M; ++s)
    for (size_t t = 0; t < M; ++t) {
      int id = 0;
      for (size_t i = 0; i < L; ++i) id += tok[s * L + i] == tok[t * L + i];
      n[s] += id >= (1 - theta) * static_cast<double>(L);
    }
  return n;
}

std::vector<uint8_t> random_tokens(std::mt19937 &gen, size_t M, size_t L, int C, int families) {
  // rows copied from a few ancestors with some mutations, so identities spread around the threshold
  std::vector<uint8_t> anc(static_cast<size_t>(families) * L), tok(M * L);
  for (auto &x : anc) x = static_cast<uint8_t>(gen() % static_cast<unsigned>(C));
  const double rate = std::uniform_real_distribution<double>(0, 0.5)(gen);
  for (size_t s = 0; s < M; ++s) {
    const size_t f = gen() % static_cast<unsigned>(families);
    for (size_t i = 0; i < L; ++i)
      tok[s * L + i] = std::uniform_real_distribution<double>(0, 1)(gen) < rate
                           ? static_cast<uint8_t>(gen() % static_cast<unsigned>(C))
                           : anc[f * L + i];
  }
  return tok;
}

}  // namespace

TEST_CASE("msa weights: the A2M fixture counted by hand (θ = 0.2, L = 5: neighbours share ≥ 4 sites)") {
  const am::msa::Alignment a = read(fixture("focus.a2m"), "FOC_HUMAN");
  // MKVLW, MRVLW, M-ILF, MKVLW: rows 0, 1, 3 are mutual neighbours, row 2 is alone (plmc gives the same)
  const std::vector<double> w = am::msa::cluster_weights(a.tokens.data(), a.M, a.L, 0.2, am::sdk::serial_loop());
  CHECK(w == std::vector<double>{1.0 / 3, 1.0 / 3, 1.0, 1.0 / 3});
  CHECK(am::msa::cluster_weights(a.tokens.data(), a.M, a.L, 0.0, am::sdk::serial_loop()) ==
        std::vector<double>(4, 1.0));  // θ = 0: no weights
  CHECK(am::msa::cluster_weights(a.tokens.data(), a.M, a.L, 1.0, am::sdk::serial_loop()) ==
        std::vector<double>(4, 0.25));  // θ = 1: every row a neighbour
}

TEST_CASE("msa weights: the threshold is plmc's double comparison") {
  for (size_t L : {1u, 2u, 5u, 10u, 159u, 171u, 1000u, 4097u})
    for (double theta : {1e-9, 0.01, 0.1, 0.2, 0.25, 0.3, 1.0 / 3, 0.5, 0.8, 0.999, 1.0}) {
      const size_t k = am::msa::identity_threshold(theta, L);
      CAPTURE(L);
      CAPTURE(theta);
      CHECK(static_cast<double>(k) >= (1 - theta) * static_cast<double>(L));
      if (k > 0) CHECK(static_cast<double>(k - 1) < (1 - theta) * static_cast<double>(L));
    }
  CHECK(am::msa::identity_threshold(0.2, 159) == 128);  // DHFR: 0.8·159 = 127.2
}

TEST_CASE("msa weights: fast counts equal the direct count on random alignments, on 1, 2 and 3 threads") {
  std::mt19937 gen(2025);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t M = 2 + gen() % 90, L = 1 + gen() % (trial % 4 == 0 ? 600 : 70);
    const int C = 2 + static_cast<int>(gen() % 20), families = 1 + static_cast<int>(gen() % 5);
    const double theta = std::uniform_real_distribution<double>(0.01, 0.6)(gen);
    const std::vector<uint8_t> tok = random_tokens(gen, M, L, C, families);
    const std::vector<uint32_t> want = direct_counts(tok, M, L, theta);
    CAPTURE(M);
    CAPTURE(L);
    CAPTURE(theta);
    const size_t k = am::msa::identity_threshold(theta, L);
    CHECK(am::msa::neighbour_counts(tok.data(), M, L, k, am::sdk::serial_loop()) == want);
    CHECK(am::msa::neighbour_counts(tok.data(), M, L, k, am::sdk::threads_loop(2)) == want);
    CHECK(am::msa::neighbour_counts(tok.data(), M, L, k, am::sdk::threads_loop(3)) == want);
    const std::vector<double> w = am::msa::cluster_weights(tok.data(), M, L, theta, am::sdk::threads_loop(2));
    for (size_t s = 0; s < M; ++s) CHECK(w[s] == 1.0 / want[s]);
  }
}

TEST_CASE("msa weights: gap_identity=ignore — the columns where both rows have a gap left out — equals its direct count") {
  // the definition, pair by pair: s and t are neighbours when they agree at ≥ (1 − θ)·n of the n columns where at
  // least one of them is not the gap (a row and its copies always)
  const auto direct = [](const std::vector<uint8_t> &tok, size_t M, size_t L, double theta, uint8_t gap) {
    std::vector<uint32_t> n(M, 0);
    for (size_t s = 0; s < M; ++s)
      for (size_t t = 0; t < M; ++t) {
        int agree = 0, cols = 0;
        for (size_t i = 0; i < L; ++i) {
          const uint8_t a = tok[s * L + i], b = tok[t * L + i];
          if (a == gap && b == gap) continue;
          ++cols;
          agree += a == b;
        }
        n[s] += agree >= (1 - theta) * cols;
      }
    return n;
  };
  std::mt19937 gen(2026);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t M = 2 + gen() % 80, L = 1 + gen() % (trial % 4 == 0 ? 300 : 60);
    const int C = 2 + static_cast<int>(gen() % 20), families = 1 + static_cast<int>(gen() % 5);
    const double theta = std::uniform_real_distribution<double>(0.01, 0.6)(gen);
    const uint8_t gap = trial % 2 ? 0 : static_cast<uint8_t>(C - 1);  // the padding's zero is the gap, or is not
    std::vector<uint8_t> tok = random_tokens(gen, M, L, C, families);
    const double gappy = std::uniform_real_distribution<double>(0, 0.9)(gen);  // then gaps over a share of the columns
    for (size_t i = 0; i < L; ++i)
      if (std::uniform_real_distribution<double>(0, 1)(gen) < gappy)
        for (size_t s = 0; s < M; ++s)
          if (gen() % 4) tok[s * L + i] = gap;
    CAPTURE(M);
    CAPTURE(L);
    CAPTURE(theta);
    CAPTURE(int(gap));
    const std::vector<uint32_t> want = direct(tok, M, L, theta, gap);
    CHECK(am::msa::neighbour_counts_ignoring_gaps(tok.data(), M, L, theta, gap, am::sdk::serial_loop()) == want);
    CHECK(am::msa::neighbour_counts_ignoring_gaps(tok.data(), M, L, theta, gap, am::sdk::threads_loop(3)) == want);
    am::msa::WeightRule rule;
    rule.theta = theta;
    rule.gaps = am::msa::GapIdentity::ignore;
    rule.gap_state = gap;
    const std::vector<double> w = am::msa::cluster_weights(tok.data(), M, L, rule, am::sdk::threads_loop(2));
    for (size_t s = 0; s < M; ++s) CHECK(w[s] == 1.0 / want[s]);
    rule.gaps = am::msa::GapIdentity::plmc;  // the default rule through the same call: plmc's counts
    const std::vector<double> wp = am::msa::cluster_weights(tok.data(), M, L, rule, am::sdk::serial_loop());
    const std::vector<uint32_t> np = direct_counts(tok, M, L, theta);
    for (size_t s = 0; s < M; ++s) CHECK(wp[s] == 1.0 / np[s]);
  }
  // all-gap rows: each its own (and its copies') neighbour only
  const std::vector<uint8_t> tok = {0, 0, 0, 0, 0, 0, 1, 0, 0};
  CHECK(am::msa::neighbour_counts_ignoring_gaps(tok.data(), 3, 3, 0.2, 0, am::sdk::serial_loop()) ==
        std::vector<uint32_t>{2, 2, 1});
}

TEST_CASE("msa weights: rows longer than 255 blocks of 32 (the byte counters' flush) and all-equal rows") {
  const size_t M = 5, L = 255 * 32 + 77;
  std::vector<uint8_t> tok(M * L, 3);
  tok[4 * L + 8200] = 1;  // row 4 differs in one site past the first flush
  CHECK(am::msa::neighbour_counts(tok.data(), M, L, L, am::sdk::serial_loop()) ==
        std::vector<uint32_t>{4, 4, 4, 4, 1});
  CHECK(am::msa::neighbour_counts(tok.data(), M, L, L - 1, am::sdk::serial_loop()) ==
        std::vector<uint32_t>{5, 5, 5, 5, 5});
}

TEST_CASE("msa weights: progress counts pairs of distinct rows; returning true stops the count") {
  std::mt19937 gen(3);
  const size_t M = 600, L = 20;
  std::vector<uint8_t> tok = random_tokens(gen, M, L, 4, 3);
  std::copy(tok.begin(), tok.begin() + 100 * L, tok.begin() + 500 * L);  // rows 500..599 repeat rows 0..99
  const size_t U = am::msa::distinct_rows(tok.data(), M, L).first.size();
  CHECK(U <= 500);
  std::vector<double> seen;
  const auto record = [&](double done, double total) {
    CHECK(total == 0.5 * double(U) * double(U + 1));  // every pair of distinct rows once, each with itself
    seen.push_back(done);
    return false;
  };
  const std::vector<double> w = am::msa::cluster_weights(tok.data(), M, L, 0.2, am::sdk::threads_loop(2), record);
  REQUIRE(!seen.empty());
  CHECK(seen.back() == 0.5 * double(U) * double(U + 1));
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(w.size() == M);
  size_t calls = 0;
  const auto stop = [&](double, double) { return ++calls == 1; };
  CHECK(am::msa::cluster_weights(tok.data(), M, L, 0.2, am::sdk::serial_loop(), stop).empty());
  CHECK(calls == 1);  // stopped after the first batch, no further one ran
  CHECK(am::msa::neighbour_counts(tok.data(), M, L, 3, am::sdk::serial_loop(), [](double, double) { return true; })
            .empty());
  CHECK(am::msa::identity_threshold(-0.5, 10) == 11);  // θ < 0: no row is a neighbour of any
  CHECK(am::msa::identity_threshold(1.5, 10) == 0);
  CHECK(am::msa::cluster_weights(tok.data(), M, L, std::nan(""), am::sdk::serial_loop()) ==
        std::vector<double>(M, 1.0));
}

TEST_CASE("msa weights: copies of rows counted once per distinct pair, the same as the direct count") {
  std::mt19937 gen(11);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t U = 2 + gen() % 30, M = U + gen() % 200, L = 1 + gen() % 50;
    const std::vector<uint8_t> base = random_tokens(gen, U, L, 2 + static_cast<int>(gen() % 5), 2);
    std::vector<uint8_t> tok(M * L);
    for (size_t s = 0; s < M; ++s) {  // every row a copy of one of the U, in random order
      const size_t u = s < U ? s : gen() % U;
      std::copy(base.begin() + u * L, base.begin() + (u + 1) * L, tok.begin() + s * L);
    }
    const double theta = std::uniform_real_distribution<double>(0.01, 0.6)(gen);
    CAPTURE(M);
    CAPTURE(L);
    const size_t k = am::msa::identity_threshold(theta, L);
    const std::vector<uint32_t> want = direct_counts(tok, M, L, theta);
    CHECK(am::msa::neighbour_counts(tok.data(), M, L, k, am::sdk::threads_loop(3)) == want);
    const am::msa::DistinctRows d = am::msa::distinct_rows(tok.data(), M, L);
    CHECK(d.first.size() <= U);
    size_t copies = 0;
    for (uint32_t c : d.copies) copies += c;
    CHECK(copies == M);
  }
}

TEST_CASE("msa weights: long comparisons are logged with their pairs, an ETA and the theta=0 hint; batches are short") {
  // 12000 distinct rows of 40 sites: 7.2·10^7 pairs (about a second on one core)
  std::mt19937 gen(12);
  const size_t M = 12000, L = 40;
  std::vector<uint8_t> tok(M * L);
  for (auto &x : tok) x = static_cast<uint8_t>(gen() % 21);
  std::vector<std::string> lines;
  const auto log = [&](const std::string &s) { lines.push_back(s); };
  std::vector<double> at;  // wall seconds of each progress report
  const auto t0 = std::chrono::steady_clock::now();
  const auto progress = [&](double, double) {
    at.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return false;
  };
  const std::vector<double> w =
      am::msa::cluster_weights(tok.data(), M, L, 0.2, am::sdk::threads_loop(2), progress, log, 0.0);
  CHECK(w.size() == M);
  REQUIRE(lines.size() == 1);  // once, when the first 50 ms of batches give a rate (log_after 0: whatever the time)
  CAPTURE(lines[0]);
  CHECK(lines[0].find("sequence weights: 12000 rows (12000 distinct) of 40 sites: 7.2e+07 pairs of rows to compare") !=
        std::string::npos);
  CHECK(lines[0].find("more at the rate so far (theta=0 turns the weights off: every weight 1)") != std::string::npos);
  // the batches aim at a quarter of a second: reports (each a chance to cancel) come several times a second
  REQUIRE(at.size() >= 2);
  std::vector<double> gaps{at[0]};
  for (size_t k = 1; k < at.size(); ++k) gaps.push_back(at[k] - at[k - 1]);
  std::sort(gaps.begin(), gaps.end());
  MESSAGE(at.size() << " reports in " << at.back() << " s, median gap " << gaps[gaps.size() / 2] << " s, longest "
                    << gaps.back() << " s");
  CHECK(gaps[gaps.size() / 2] < 0.6);
  CHECK(gaps.back() < 1.5);  // "at least once a second" with room for a loaded machine's stalls
  // a cancel at the first report returns at once: nothing more is compared
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(am::msa::cluster_weights(tok.data(), M, L, 0.2, am::sdk::threads_loop(2),
                                 [](double, double) { return true; })
            .empty());
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() < 1.0);
  lines.clear();
  am::msa::cluster_weights(tok.data(), 300, L, 0.2, am::sdk::serial_loop(), {}, log);  // a short count: no line
  CHECK(lines.empty());
}
