// The dataset record of the task msa (docs/msa.md, the contract the sequence estimators read), the held-out
// split, random and Potts-sampled alignments written in every format and read back (the plugin module:
// tests/plugins/task-msa).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "../../../handles.hpp"
#include "dataset.hpp"
#include "msa_test_util.hpp"
#include "potts_model.h"
#include "weights.hpp"

using namespace msa_test;
using am_test::Ctx;
using am_test::Rec;

namespace {

std::vector<int32_t> tokens_of(const am_record *ds, const char *key, size_t *M, size_t *L) {
  am_array_view v{};
  REQUIRE(am_record_get_array(ds, key, &v) == AM_OK);
  REQUIRE(v.dtype == AM_I32);
  REQUIRE(v.ndim == 2);
  *M = v.shape[0];
  *L = v.shape[1];
  const int32_t *p = static_cast<const int32_t *>(v.data);
  return std::vector<int32_t>(p, p + v.shape[0] * v.shape[1]);
}

am_rng seeded(uint64_t seed) {
  am_rng r;
  am_rng_init(&r, seed, 0);
  return r;
}

am::msa::Options options(const std::string &file, const std::string &focus, double test_fraction) {
  am::msa::Options o;
  o.file = file;
  o.focus = focus;
  o.test_fraction = test_fraction;
  return o;
}

}  // namespace

TEST_CASE("msa dataset: the record of the A2M fixture in focus mode, no held-out rows") {
  Rec ds, ex;
  const am::msa::Summary s =
      am::msa::make_dataset(options(fixture("focus.a2m"), "FOC_HUMAN", 0), seeded(1), am::sdk::serial_loop(), ds.r, ex.r);
  CHECK(s.M_dropped == 1);
  CHECK(am::sdk::get_string(ds.r, "kind") == "sequence");
  CHECK(am::msa::is_alignment(ds.r));  // the declared key the pseudolikelihood estimator reads
  CHECK(am_record_bool(am_record_get(ds.r, am::msa::kAlignmentKey)) == 1);
  CHECK(am_record_get(ex.r, am::msa::kAlignmentKey) == nullptr);  // the dataset's, not results.json's
  CHECK(am::sdk::get_number(ds.r, "C") == 21);
  CHECK(am::sdk::get_number(ds.r, "L") == 5);
  size_t M = 0, L = 0;
  const std::vector<int32_t> t = tokens_of(ds.r, "tokens", &M, &L);
  CHECK(M == 4);
  CHECK(L == 5);
  // MKVLW MRVLW M-ILF MKVLW in "-ACDEFGHIKLMNPQRSTVWY"
  CHECK(t == std::vector<int32_t>{11, 9, 18, 10, 19, 11, 15, 18, 10, 19, 11, 0, 8, 10, 5, 11, 9, 18, 10, 19});
  CHECK(am::sdk::get_vector(ds.r, "weights") == std::vector<double>{1.0 / 3, 1.0 / 3, 1.0, 1.0 / 3});
  CHECK(am_record_get(ds.r, "tokens_test") == nullptr);
  CHECK(am_record_get(ds.r, "weights_test") == nullptr);
  CHECK(am::sdk::get_string(ds.r, "alphabet") == "-ACDEFGHIKLMNPQRSTVWY");
  CHECK(am::sdk::get_number(ds.r, "gap_state") == 0);
  CHECK(am::sdk::get_vector(ds.r, "site_numbers") == std::vector<double>{10, 11, 13, 15, 17});
  CHECK(am::sdk::get_string(ds.r, "focus_sequence") == "MKVLW");
  CHECK(am::sdk::get_number(ds.r, "neff") == doctest::Approx(2.0).epsilon(1e-15));  // 3·(1/3) + 1
  CHECK(am::sdk::get_string(ex.r, "format") == "a2m");
  CHECK(am::sdk::get_number(ex.r, "M_read") == 5);
  CHECK(am::sdk::get_number(ex.r, "M_dropped") == 1);
  CHECK(am::sdk::get_number(ex.r, "M") == 4);
  CHECK(am::sdk::get_number(ex.r, "M_test") == 0);
  CHECK(am::sdk::get_number(ex.r, "L_columns") == 8);
  CHECK(am::sdk::get_number(ex.r, "L") == 5);
  CHECK(am::sdk::get_string(ex.r, "focus") == "FOC_HUMAN");
  CHECK(am::sdk::get_number(ex.r, "focus_row") == 0);
  CHECK(am::sdk::get_number(ex.r, "region_start") == 10);
  CHECK(am::sdk::get_number(ex.r, "theta") == 0.2);
  CHECK(am::sdk::get_number(ex.r, "gap_state") == 0);
}

TEST_CASE("msa dataset: held-out rows keep the weights computed on every row; Neff counts both parts") {
  Rec ds, ex;
  am::msa::make_dataset(options(fixture("focus.a2m"), "", 0.5), seeded(3), am::sdk::serial_loop(), ds.r, ex.r);
  size_t M = 0, L = 0, Mt = 0, Lt = 0;
  const std::vector<int32_t> train = tokens_of(ds.r, "tokens", &M, &L), test = tokens_of(ds.r, "tokens_test", &Mt, &Lt);
  CHECK(M == 2);
  CHECK(Mt == 2);
  CHECK(L == 8);
  CHECK(Lt == 8);
  CHECK(am::sdk::get_number(ex.r, "M") == 2);
  CHECK(am::sdk::get_number(ex.r, "M_test") == 2);
  // all 8 columns: MKAV-LCW, MRGV-LDW, M--IAL-F, MKAV-LCW; threshold ceil(0.8·8) = 7 → rows 0 and 3 only
  const std::vector<double> w = am::sdk::get_vector(ds.r, "weights"), wt = am::sdk::get_vector(ds.r, "weights_test");
  const am::msa::Alignment a = read(fixture("focus.a2m"));
  const std::vector<size_t> held = am::msa::held_out_rows(4, 0.5, [] {
    am_rng r, s = seeded(3);
    am_rng_split(&s, 1, &r);
    return r;
  }());
  const std::vector<double> all = {0.5, 1, 1, 0.5};
  for (size_t k = 0, tr = 0, te = 0; k < 4; ++k) {
    const bool is_test = std::find(held.begin(), held.end(), k) != held.end();
    const std::vector<int32_t> &part = is_test ? test : train;
    const size_t r = is_test ? te++ : tr++;
    for (size_t i = 0; i < 8; ++i) CHECK(part[r * 8 + i] == a.tokens[k * 8 + i]);
    CHECK((is_test ? wt[r] : w[r]) == all[k]);
  }
  CHECK(am::sdk::get_number(ds.r, "neff") == 3.0);
  CHECK(am_record_get(ds.r, "focus_sequence") == nullptr);
  CHECK(am::sdk::get_vector(ds.r, "site_numbers") == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("msa dataset: the held-out choice — its size, distinct sorted rows, each row equally likely") {
  CHECK(am::msa::held_out_rows(10, 0, seeded(1)).empty());
  CHECK(am::msa::held_out_rows(1, 0.5, seeded(1)).empty());
  CHECK(am::msa::held_out_rows(3, 0.1, seeded(1)).empty());      // round(0.3) = 0
  CHECK(am::msa::held_out_rows(3616, 0.1, seeded(1)).size() == 362);
  CHECK(am::msa::held_out_rows(2, 0.9, seeded(1)).size() == 1);  // at least one training row
  CHECK(am::msa::held_out_rows(50, 0.3, seeded(9)) == am::msa::held_out_rows(50, 0.3, seeded(9)));
  CHECK(am::msa::held_out_rows(50, 0.3, seeded(9)) != am::msa::held_out_rows(50, 0.3, seeded(10)));
  std::vector<int> hits(10, 0);
  const int trials = 2000;
  for (int seed = 0; seed < trials; ++seed) {
    const std::vector<size_t> h = am::msa::held_out_rows(10, 0.3, seeded(static_cast<uint64_t>(seed)));
    REQUIRE(h.size() == 3);
    CHECK(std::is_sorted(h.begin(), h.end()));
    CHECK(std::adjacent_find(h.begin(), h.end()) == h.end());
    for (size_t k : h) ++hits[k];
  }
  // each row is held out with probability 0.3: 600 of 2000, binomial sd 20.5; 5 sd = 102
  for (int n : hits) CHECK(std::abs(n - 600) < 102);
}

namespace {

// Writes the rows (letters) as FASTA wrapped at random widths (some lowercase when `lower`), as A3M with random
// lowercase insert letters, or as interleaved Stockholm blocks of a random width.
std::string as_fasta(const std::vector<std::string> &rows, std::mt19937 &gen, bool lower, bool crlf) {
  std::string out, nl = crlf ? "\r\n" : "\n";
  const size_t width = 1 + gen() % 80;
  for (size_t s = 0; s < rows.size(); ++s) {
    out += ">seq" + std::to_string(s) + " random row" + nl;
    for (size_t i = 0; i < rows[s].size(); ++i) {
      char c = rows[s][i];
      if (lower && gen() % 4 == 0) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out += c;
      if ((i + 1) % width == 0 || i + 1 == rows[s].size()) out += nl;
    }
  }
  return out;
}

std::string as_a3m(const std::vector<std::string> &rows, std::mt19937 &gen) {
  std::string out;
  for (size_t s = 0; s < rows.size(); ++s) {
    out += ">seq" + std::to_string(s) + "\n";
    for (char c : rows[s]) {
      while (gen() % 5 == 0) out += static_cast<char>('a' + gen() % 26);
      out += c;
    }
    out += "\n";
  }
  return out;
}

std::string as_stockholm(const std::vector<std::string> &rows, std::mt19937 &gen) {
  std::string out = "# STOCKHOLM 1.0\n#=GF ID random\n\n";
  const size_t L = rows[0].size(), width = 1 + gen() % 60;
  for (size_t b = 0; b < L; b += width) {
    for (size_t s = 0; s < rows.size(); ++s) out += "seq" + std::to_string(s) + "/1-9   " + rows[s].substr(b, width) + "\n";
    out += "#=GC SS_cons " + std::string(std::min(width, L - b), '.') + "\n\n";
  }
  return out + "//\n";
}

std::string random_custom_alphabet(std::mt19937 &gen) {
  std::string pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789*-";
  std::shuffle(pool.begin(), pool.end(), gen);
  return pool.substr(0, 2 + gen() % 30);
}

}  // namespace

TEST_CASE("msa dataset: random alignments in FASTA, A2M, A3M and Stockholm read back equal") {
  std::mt19937 gen(11);
  TempDir d("msa-rand");
  for (int trial = 0; trial < 60; ++trial) {
    const char *names[] = {"protein", "rna", "dna", ""};
    const std::string spec = names[trial % 4][0] ? names[trial % 4] : random_custom_alphabet(gen);
    const std::string letters = am::msa::make_alphabet(spec).letters;
    const size_t M = 2 + gen() % 30, L = 2 + gen() % 150;
    std::vector<std::string> rows(M, std::string(L, ' '));
    std::vector<uint8_t> want(M * L);
    for (size_t s = 0; s < M; ++s)
      for (size_t i = 0; i < L; ++i) {
        want[s * L + i] = static_cast<uint8_t>(gen() % letters.size());
        rows[s][i] = letters[want[s * L + i]];
      }
    CAPTURE(spec);
    CAPTURE(M);
    CAPTURE(L);
    const std::string files[] = {write(d, "r.fa", as_fasta(rows, gen, false, trial % 3 == 0)),
                                 write(d, "r.a2m", as_fasta(rows, gen, true, false)),
                                 write(d, "r.a3m", as_a3m(rows, gen)), write(d, "r.sto", as_stockholm(rows, gen))};
    for (const std::string &f : files) {
      CAPTURE(f);
      const am::msa::Alignment a = read(f, "", spec);
      CHECK(a.M == M);
      CHECK(a.L == L);
      CHECK(a.tokens == want);
    }
  }
}

TEST_CASE("msa dataset: Potts sequences (C = 21) written as an alignment read back equal, weights as counted") {
  am::potts::Model m;
  m.L = 12;
  m.C = 21;
  m.beta = 1.5;
  am_rng r = seeded(5);
  am::potts::make_J_sinkhorn(m.L, &r, m.J);
  am::potts::make_U_gaussian(m.C, &r, m.U);
  Ctx ctx;
  am::potts::SampleOptions so;
  so.burnin = 30;
  std::vector<int32_t> seq;
  REQUIRE(am::potts::sample(ctx.c, m, 300, so, seeded(6), seq) == AM_OK);
  const std::string letters = "-ACDEFGHIKLMNPQRSTVWY";
  std::string text;
  for (size_t s = 0; s < 300; ++s) {
    text += ">potts_" + std::to_string(s) + "/" + std::to_string(s + 1) + "-12\n";
    for (int i = 0; i < m.L; ++i) text += letters[static_cast<size_t>(seq[s * 12 + static_cast<size_t>(i)])];
    text += "\n";
  }
  TempDir d("msa-potts");
  const std::string f = write(d, "potts.a2m", text);
  Rec ds, ex;
  am::msa::make_dataset(options(f, "", 0), seeded(1), am::sdk::threads_loop(2), ds.r, ex.r);
  size_t M = 0, L = 0;
  CHECK(tokens_of(ds.r, "tokens", &M, &L) == seq);
  std::vector<uint8_t> bytes(seq.begin(), seq.end());
  const std::vector<uint32_t> n = am::msa::neighbour_counts(bytes.data(), 300, 12, 10, am::sdk::serial_loop());
  const std::vector<double> w = am::sdk::get_vector(ds.r, "weights");
  double neff = 0;
  for (size_t s = 0; s < 300; ++s) {
    int direct = 0;  // ceil(0.8·12) = 10 shared sites
    for (size_t t = 0; t < 300; ++t) {
      int id = 0;
      for (size_t i = 0; i < 12; ++i) id += seq[s * 12 + i] == seq[t * 12 + i];
      direct += id >= 10;
    }
    CHECK(n[s] == static_cast<uint32_t>(direct));
    CHECK(w[s] == 1.0 / direct);
    neff += 1.0 / direct;
  }
  CHECK(am::sdk::get_number(ds.r, "neff") == neff);  // the same sum in the same order
  // focus mode finds its row by the start of the name
  Rec fs, fx;
  am::msa::make_dataset(options(f, "potts_7/", 0), seeded(1), am::sdk::serial_loop(), fs.r, fx.r);
  CHECK(am::sdk::get_number(fx.r, "focus_row") == 7);
}

TEST_CASE("msa dataset: a cancel during the weights leaves the records untouched") {
  Rec ds, ex;
  const am::msa::Summary s = am::msa::make_dataset(options(fixture("focus.a2m"), "", 0.1), seeded(1),
                                                   am::sdk::serial_loop(), ds.r, ex.r,
                                                   [](double, double) { return true; });
  CHECK(s.cancelled);
  CHECK(am_record_size(ds.r) == 0);
  CHECK(am_record_size(ex.r) == 0);
}
