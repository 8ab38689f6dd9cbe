// The estimator "pseudolikelihood"'s one choice (plugins/estimator-pseudolikelihood/estimate.h): the engine follows
// the dataset's declared key `alignment` and the options (fields=1, model=potts), never the other keys a dataset
// holds; the report follows the runs' key `fit`.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../handles.hpp"  // Rec, num, shape_of, vec
#include "../../scoped_env.hpp"
#include "dataset.hpp"
#include "estimate.h"

using am::pseudolikelihood::Options;

using am_test::Rec;
using am_test::num;
using am_test::shape_of;
using am_test::vec;

namespace {

// A sequence dataset of M random rows, L = 5 sites, C = 4 colours (no weights, no alphabet: the potts task's shape).
void sequences(am_record *ds, size_t M, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> col(0, 3);
  std::vector<int32_t> t(M * 5);
  for (auto &x : t) x = col(g);
  const size_t sh[2] = {M, 5};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.data());
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_number(ds, "C", 4);
  am_record_set_array(ds, "tokens", &v);
}

am_rng seeded(uint64_t seed) {
  am_rng r;
  am_rng_init(&r, seed, 0);
  return r;
}

}  // namespace

TEST_CASE("pseudolikelihood estimate: a potts-task dataset runs the factored fit as before; fields=1 runs the "
          "alignment fit on it") {
  Rec ds, r1, r2, r3;
  sequences(ds.r, 300, 34);
  Options o;
  const am_rng rng = seeded(5);
  CHECK_FALSE(am::pseudolikelihood::runs_alignment_fit(o, ds.r));
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, ds.r, rng, r1.r) == AM_OK);
  am::potts::SeqData d;
  REQUIRE(am::potts::read_sequence_dataset(nullptr, ds.r, 0, &d) == AM_OK);
  REQUIRE(am::potts::run_pseudolikelihood(nullptr, o.pl, d, rng, r2.r) == AM_OK);
  const double l1 = num(r1.r, "train_loss"), l2 = num(r2.r, "train_loss");
  CHECK(std::memcmp(&l1, &l2, sizeof l1) == 0);
  CHECK(am_record_get(r1.r, "scores") == nullptr);
  CHECK_FALSE(am::msa::is_alignment_fit(r1.r));
  CHECK(std::string(am_record_string(am_record_get(r1.r, "stop_reason"))).rfind("window rule", 0) == 0);
  o.msa.fields = "1";
  CHECK(am::pseudolikelihood::runs_alignment_fit(o, ds.r));
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, ds.r, rng, r3.r) == AM_OK);
  CHECK(am::msa::is_alignment_fit(r3.r));
  CHECK(shape_of(r3.r, "scores") == std::vector<size_t>{5, 5});
  CHECK(num(r3.r, "neff") == 300);  // no weights: all 1
  CHECK(std::string(am_record_string(am_record_get(r3.r, "gaps"))) == "state");  // no alphabet, no gap
}

TEST_CASE("pseudolikelihood estimate: the declared key `alignment` chooses the alignment fit, not weights or an "
          "alphabet") {
  Options o;
  o.pl.heads = 0;  // the table's default: chosen per engine
  o.pl.max_iter = 5;
  const am_rng rng = seeded(6);
  Rec plain, marked, r1, r2;
  for (am_record *ds : {plain.r, marked.r}) {  // weights and an alphabet on both, as a user might write them
    sequences(ds, 40, 36);
    const std::vector<double> w(40, 0.5);
    am_record_set_vector(ds, "weights", w.data(), w.size());
    am_record_set_string(ds, "alphabet", "-ACG");
  }
  am_record_set_bool(marked.r, am::msa::kAlignmentKey, 1);
  CHECK_FALSE(am::msa::is_alignment(plain.r));
  CHECK(am::msa::is_alignment(marked.r));
  CHECK_FALSE(am::pseudolikelihood::runs_alignment_fit(o, plain.r));
  CHECK(am::pseudolikelihood::runs_alignment_fit(o, marked.r));
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, plain.r, rng, r1.r) == AM_OK);
  CHECK_FALSE(am::msa::is_alignment_fit(r1.r));
  CHECK(num(r1.r, "heads") == 1);  // the factored fit's automatic head count
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, marked.r, rng, r2.r) == AM_OK);
  CHECK(am::msa::is_alignment_fit(r2.r));
  // model=auto (the default): plmc's model on an alignment that fits the memory budget, and the run says why
  CHECK(std::string(am_record_string(am_record_get(r2.r, "model"))) == "potts");
  CHECK(num(r2.r, "heads") == 0);
  CHECK(std::string(am_record_string(am_record_get(r2.r, "model_rule"))).rfind("auto: potts (plmc's model", 0) == 0);
  CHECK(num(r2.r, "neff") == 20);  // the weights read: 40 × 0.5
  CHECK(am_record_bool(am_record_get(r2.r, "fields")) == 1);  // fields=auto: on for an alignment
  // the key must be the boolean true
  am_record_set_string(marked.r, am::msa::kAlignmentKey, "yes");
  CHECK_FALSE(am::msa::is_alignment(marked.r));
  o.msa.model = "potts";  // asks for the alignment fit on any sequence dataset
  CHECK(am::pseudolikelihood::runs_alignment_fit(o, plain.r));
  Rec r3;  // model=factored on the alignment: the alignment fit's head count, no rule
  am_record_set_bool(marked.r, am::msa::kAlignmentKey, 1);
  o.msa.model = "factored";
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, marked.r, rng, r3.r) == AM_OK);
  CHECK(num(r3.r, "heads") == am::msa::kAlignmentHeads);
  CHECK(am_record_get(r3.r, "model_rule") == nullptr);
}

TEST_CASE("pseudolikelihood model=auto: factored attention when plmc's model would not fit the memory budget") {
  // L = 60 protein columns (C = 21 with gaps as a state), 30 rows: plmc's model needs n = L²C² = 1.6 M parameters
  // times L-BFGS's vectors (≈ 0.35 GB by msa_fit_bytes); factored attention with 2 heads a few MB. A budget of
  // 100 MB lies between the two estimates, so the rule must take the factored model, and say so.
  Options o;
  o.pl.heads = 2;
  o.pl.max_iter = 2;
  o.msa.gaps = "state";
  const int L = 60, M = 30;
  std::mt19937_64 g(11);
  std::vector<int32_t> t(size_t(M) * L);
  for (auto &x : t) x = int32_t(g() % 21);
  const size_t sh[2] = {size_t(M), size_t(L)};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.data());
  Rec ds, run, run2;
  am_record_set_string(ds.r, "kind", "sequence");
  am_record_set_number(ds.r, "C", 21);
  am_record_set_array(ds.r, "tokens", &v);
  am_record_set_bool(ds.r, am::msa::kAlignmentKey, 1);
  am::potts::FitShape s;
  s.M = M, s.L = L, s.C = 21;
  const double potts = am::msa::msa_fit_bytes(s, am::msa::MsaKind::Potts, 2, true);
  const double factored = am::msa::msa_fit_bytes(s, am::msa::MsaKind::Factored, 2, true);
  REQUIRE(factored < 100e6);
  REQUIRE(potts > 100e6);
  {
    const am_test::ScopedEnv limit("AM_MEMORY_LIMIT", "100M");
    REQUIRE(am::pseudolikelihood::estimate(nullptr, o, ds.r, seeded(3), run.r) == AM_OK);
  }
  CHECK(std::string(am_record_string(am_record_get(run.r, "model"))) == "factored");
  CHECK(num(run.r, "heads") == 2);
  const std::string rule = am_record_string(am_record_get(run.r, "model_rule"));
  CHECK(rule.rfind("auto: factored attention (2 heads): plmc's model would need ", 0) == 0);
  CHECK(rule.find("over the 0.10 GB budget") != std::string::npos);
  // without a limit (this machine's memory) the same call fits plmc's model
  const am_test::ScopedEnv unset("AM_MEMORY_LIMIT", nullptr);
  REQUIRE(am::pseudolikelihood::estimate(nullptr, o, ds.r, seeded(3), run2.r) == AM_OK);
  CHECK(std::string(am_record_string(am_record_get(run2.r, "model"))) == "potts");
}

TEST_CASE("pseudolikelihood describe: the alignment report for runs marked `fit`, the sequence report otherwise") {
  const auto describe = [](bool marked, Rec &report) {
    Rec doc;
    am_record *run = am_record_append_object(am_record_list(doc.r, "runs"));
    if (marked) am_record_set_string(run, am::msa::kFitKey, am::msa::kFitAlignment);
    const double S[9] = {0, 1, 2, 1, 0, 3, 2, 3, 0};
    am_record_set_matrix(run, "scores", S, 3, 3, 3);  // a key an alignment fit writes, on both documents
    am_record_object(run, "contacts");
    am_record_list(report.r, "plots");  // as the host hands the report over
    am_record_list(report.r, "summary");
    REQUIRE(am::pseudolikelihood::describe(doc.r, report.r) == AM_OK);
  };
  Rec a, b;
  describe(true, a);
  describe(false, b);
  CHECK(am_record_get(a.r, "files") != nullptr);  // couplings.txt, contacts.tsv
  CHECK(am_record_get(a.r, "npy_only") != nullptr);
  CHECK(am_record_get(b.r, "files") == nullptr);
  CHECK(am_record_get(b.r, "npy_only") == nullptr);
}
