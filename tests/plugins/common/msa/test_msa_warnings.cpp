// The warnings of the alignment pipeline (docs/msa.md "Warnings"): a gap-dominated alignment whose Neff collapses under
// plmc's gap = gap identity (checked against a slow count of both rules written here), an ambiguous focus id; each in
// the dataset's and the extras' `warnings`, copied by the alignment fit into its run's, which the host then calls a
// "warning" run; the site numbering's key.
#include <doctest/doctest.h>

#include <attnmech/registry.h>
#include <attnmech/run.h>

#include <cstdio>
#include <random>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "../../../handles.hpp"
#include "dataset.hpp"
#include "msa_test_util.hpp"
#include "pipeline.hpp"

using namespace msa_test;
using am_test::Ctx;
using am_test::Rec;

namespace {

const std::string kProtein = "-ACDEFGHIKLMNPQRSTVWY";

am_rng seeded(uint64_t seed) {
  am_rng r;
  am_rng_init(&r, seed, 0);
  return r;
}

std::vector<std::string> strings_at(const am_record *r, const char *key) {
  std::vector<std::string> out;
  const am_record *l = am_record_get(r, key);
  for (size_t i = 0; i < am_record_size(l); ++i) out.emplace_back(am_record_string(am_record_at(l, i)));
  return out;
}

// Neff by the definition, every pair of rows one column at a time: plmc's rule (identity over all L columns, a gap
// matching a gap counts, id ≥ (1 − θ)·L) or gap_identity=ignore (columns where both rows have a gap left out:
// agreement ≥ (1 − θ)·n over the n other columns).
double slow_neff(const std::vector<std::string> &rows, double theta, bool ignore_gaps) {
  double neff = 0;
  for (const std::string &s : rows) {
    int neighbours = 0;
    for (const std::string &t : rows) {
      int same = 0, n = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        const bool both_gap = s[i] == '-' && t[i] == '-';
        if (ignore_gaps && both_gap) continue;
        ++n;
        same += s[i] == t[i];
      }
      neighbours += same >= (1 - theta) * (ignore_gaps ? n : static_cast<double>(s.size()));
    }
    neff += 1.0 / neighbours;
  }
  return neff;
}

// 100 rows of 100 columns, 74 of them gaps in every row (a family's rare insert columns, kept without focus): the 26
// others hold residues, each row's letter the column's consensus with probability 0.6, else a random one — rows that
// agree at 3 to 20 of the 26 residue columns.
std::vector<std::string> gappy_rows() {
  std::mt19937 gen(74);
  std::string consensus(26, 'A');
  for (char &c : consensus) c = kProtein[1 + gen() % 20];
  std::vector<std::string> rows;
  for (int s = 0; s < 100; ++s) {
    std::string r(100, '-');
    for (int k = 0; k < 26; ++k)
      r[k * 100 / 26] = std::uniform_real_distribution<double>(0, 1)(gen) < 0.6 ? consensus[k] : kProtein[1 + gen() % 20];
    rows.push_back(r);
  }
  return rows;
}

std::string fasta(const std::vector<std::string> &rows) {
  std::string text;
  for (size_t s = 0; s < rows.size(); ++s) text += ">r" + std::to_string(s) + "\n" + rows[s] + "\n";
  return text;
}

am::msa::Options options(const std::string &file, const std::string &focus = "") {
  am::msa::Options o;
  o.file = file;
  o.focus = focus;
  o.test_fraction = 0;
  return o;
}

std::string one_decimal(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

}  // namespace

TEST_CASE("msa warnings: a gappy alignment collapsing to Neff ~ 1 under plmc's rule says so, with Neff without gap-gap "
          "identity") {
  TempDir d("msa-gappy");
  const std::vector<std::string> rows = gappy_rows();
  const std::string file = write(d, "gappy.fasta", fasta(rows));
  const double plmc = slow_neff(rows, 0.2, false), ignore = slow_neff(rows, 0.2, true);
  MESSAGE("Neff by the slow count: plmc's rule " << plmc << ", gap_identity=ignore " << ignore);
  REQUIRE(plmc < am::msa::kCollapseNeffShare * 100);  // the fixture is the case: collapsed, ...
  REQUIRE(ignore >= am::msa::kCollapseFactor * plmc);  // ... and by the gap-gap columns
  Rec ds, ex;
  const am::msa::Summary s = am::msa::make_dataset(options(file), seeded(1), am::sdk::threads_loop(2), ds.r, ex.r);
  CHECK(am::sdk::get_number(ds.r, "neff") == doctest::Approx(plmc).epsilon(1e-12));  // plmc's rule stays the default
  REQUIRE(s.warnings.size() == 1);
  const std::string &w = s.warnings[0];
  CAPTURE(w);
  CHECK(w.find("Neff = " + one_decimal(plmc) + " for 100 sequences (theta=0.2)") != std::string::npos);
  CHECK(w.find("74 % of the alignment is gaps") != std::string::npos);  // 74 of 100 columns, every row
  CHECK(w.find("(gap_identity=ignore) Neff = " + one_decimal(ignore)) != std::string::npos);
  CHECK(w.find("Set gap_identity=ignore") != std::string::npos);
  CHECK(strings_at(ds.r, am::msa::kWarningsKey) == s.warnings);
  CHECK(strings_at(ex.r, am::msa::kWarningsKey) == s.warnings);
  // gap_identity=ignore: the weights of the other rule, no warning
  am::msa::Options o = options(file);
  o.gap_identity = "ignore";
  Rec ds2, ex2;
  const am::msa::Summary s2 = am::msa::make_dataset(o, seeded(1), am::sdk::serial_loop(), ds2.r, ex2.r);
  CHECK(am::sdk::get_number(ds2.r, "neff") == doctest::Approx(ignore).epsilon(1e-12));
  CHECK(s2.warnings.empty());
  CHECK(am_record_get(ds2.r, am::msa::kWarningsKey) == nullptr);
  o.gap_identity = "both";
  expect_error([&] { am::msa::make_dataset(o, seeded(1), am::sdk::serial_loop(), ds2.r, ex2.r); }, AM_ERR_USAGE,
               {"gap_identity 'both'", "plmc or ignore"});
}

TEST_CASE("msa warnings: no Neff warning without a collapse, without gaps, or when the gap rule does not decide it") {
  // the thresholds, one at a time (M = 100): Neff below 25 (a quarter of M), gaps over half, ignore ≥ 2·Neff
  CHECK_FALSE(am::msa::neff_warning(100, 0.2, 1.0, 60.0, 0.74).empty());
  CHECK(am::msa::neff_warning(100, 0.2, 25.0, 60.0, 0.74).empty());   // Neff not below M/4
  CHECK(am::msa::neff_warning(100, 0.2, 1.0, 60.0, 0.5).empty());     // half gaps: not gap-dominated
  CHECK(am::msa::neff_warning(100, 0.2, 10.0, 19.9, 0.74).empty());   // the gaps' rule changes Neff less than 2x
  CHECK_FALSE(am::msa::neff_warning(100, 0.2, 10.0, 20.0, 0.74).empty());
  // 100 copies of two rows without gaps: Neff = 2 (a real collapse, not the gaps'), no warning
  TempDir d("msa-copies");
  std::vector<std::string> rows;
  for (int s = 0; s < 100; ++s) rows.push_back(s % 2 ? "ACDEFGHIKL" : "MNPQRSTVWY");
  Rec ds, ex;
  const am::msa::Summary s =
      am::msa::make_dataset(options(write(d, "copies.fasta", fasta(rows))), seeded(1), am::sdk::serial_loop(), ds.r, ex.r);
  CHECK(am::sdk::get_number(ds.r, "neff") == doctest::Approx(2.0).epsilon(1e-12));
  CHECK(s.warnings.empty());
  CHECK(am_record_get(ex.r, am::msa::kWarningsKey) == nullptr);
}

TEST_CASE("msa warnings: an ambiguous focus id names its matches and takes the first, as plmc") {
  TempDir d("msa-focus");
  const std::string file = write(d, "domains.a2m",
                                 ">KIN_HUMAN/10-17 kinase domain\nMKAVELCW\n>other\nMRGVQLDW\n"
                                 ">KIN_HUMAN/140-147 second domain\nMRAIELCF\n");
  Rec ds, ex;
  const am::msa::Summary s = am::msa::make_dataset(options(file, "KIN_HUMAN"), seeded(1), am::sdk::serial_loop(), ds.r, ex.r);
  CHECK(am::sdk::get_number(ex.r, "focus_row") == 0);  // the first
  CHECK(am::sdk::get_vector(ds.r, "site_numbers") == std::vector<double>{10, 11, 12, 13, 14, 15, 16, 17});
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0] ==
        "focus 'KIN_HUMAN' matches 2 sequences: 'KIN_HUMAN/10-17 kinase domain' (line 1), 'KIN_HUMAN/140-147 second "
        "domain' (line 5); the first is the focus (as plmc takes it, with a note). To choose another, give an id only it "
        "starts with, e.g. focus=KIN_HUMAN/140-147");
  CHECK(strings_at(ds.r, am::msa::kWarningsKey) == s.warnings);
  // the suggested id picks the second, without a warning
  Rec ds2, ex2;
  const am::msa::Summary s2 =
      am::msa::make_dataset(options(file, "KIN_HUMAN/140-147"), seeded(1), am::sdk::serial_loop(), ds2.r, ex2.r);
  CHECK(s2.warnings.empty());
  CHECK(am::sdk::get_number(ex2.r, "focus_row") == 2);
  CHECK(am::sdk::get_vector(ds2.r, "site_numbers").front() == 140);
  // more matches than are named
  const std::string many = write(d, "many.a2m", ">X/1-2\nAC\n>X/3-4\nAD\n>X/5-6\nAE\n>X/7-8\nAF\n>X/9-10\nAG\n");
  const am::msa::Alignment a = read(many, "X");
  CHECK(a.focus_matches == 5);
  const std::string w = am::msa::focus_warning(a, "X");
  CHECK(w.find("matches 5 sequences: 'X/1-2' (line 1), 'X/3-4' (line 3), 'X/5-6' (line 5) and 2 more") != std::string::npos);
  CHECK(am::msa::focus_warning(read(many, "X/9"), "X/9").empty());
}

// The host's run of the task msa on an alignment holding two domains of one protein (an ambiguous focus id "KIN"),
// with `estimator` (NULL: the task's default) and further settings; the results document (the caller destroys it).
static am_record *run_two_domains(Ctx &ctx, const char *estimator,
                                  std::initializer_list<std::pair<const char *, const char *>> sets) {
  TempDir d("msa-run-warn");
  const std::string file = write(d, "domains.a2m",
                                 ">KIN/1-8\nMKAVELCW\n>o1\nMRGVQLDW\n>o2\nMKGVELDW\n>KIN/140-147\nMRAIELCF\n");
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE(am_registry_discover(nullptr, reg, nullptr) == AM_OK);
  am_run_spec *spec = nullptr;
  REQUIRE(am_run_spec_create(&spec) == AM_OK);
  am_run_spec_set_task(spec, "msa");
  if (estimator) am_run_spec_set_estimator(spec, estimator);
  am_run_spec_set(spec, "file", file.c_str());
  am_run_spec_set(spec, "focus", "KIN");
  am_run_spec_set(spec, "test_fraction", "0");
  for (const auto &kv : sets) am_run_spec_set(spec, kv.first, kv.second);
  am_record *doc = nullptr;
  const am_status st = am_run_execute(ctx.c, reg, spec, &doc);
  am_run_spec_destroy(&spec);
  am_registry_destroy(&reg);
  REQUIRE_MESSAGE(st == AM_OK, ctx.err());
  return doc;
}

TEST_CASE("msa warnings: the run of an ambiguous focus is a 'warning' run holding the dataset's warning; the site "
          "numbering travels with it") {
  Ctx ctx;
  am_record *doc = run_two_domains(ctx, nullptr, {{"max_iter", "2"}, {"heads", "2"}});
  const am_record *run = am_record_at(am_record_get(doc, "runs"), 0);
  CHECK(am::sdk::get_string(run, "run_status") == "warning");
  const std::vector<std::string> w = strings_at(run, am::msa::kWarningsKey);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("focus 'KIN' matches 2 sequences: 'KIN/1-8' (line 1), 'KIN/140-147' (line 7)") != std::string::npos);
  CHECK(strings_at(am_record_get(doc, "task_extras"), am::msa::kWarningsKey) == w);
  const std::string numbering = "site = c + START, START = 1 (from the focus's NAME/START-END, else 1), c = 0-based "
                                "column among the fasta rows (every column, also those where the focus has a gap)";
  CHECK(am::sdk::get_string(run, "site_numbering") == numbering);
  CHECK(am::sdk::get_string(am_record_get(doc, "task_extras"), "site_numbering") == numbering);
  am_record_destroy(&doc);
  // run_msa (the pipeline in one call) copies them alike; a file without warnings gives a run without the key
  am::msa::Options task = options(fixture("focus.a2m"), "FOC_HUMAN");
  am::potts::PLOptions o;
  o.heads = 2;
  o.max_iter = 2;
  o.init_scale = am::msa::kAlignmentInitScale;
  Rec ds, ex, r;
  REQUIRE_MESSAGE(am::msa::run_msa(ctx.c, task, o, am::msa::FitOptions{}, seeded(1), seeded(2), am::sdk::serial_loop(),
                                   ds.r, ex.r, r.r) == AM_OK,
                  ctx.err());
  CHECK(am_record_get(r.r, am::msa::kWarningsKey) == nullptr);
  CHECK(am::sdk::get_string(r.r, "site_numbering").find("c + START, START = 10") != std::string::npos);
}

TEST_CASE("msa warnings: the estimator meanfield passes the dataset's warning and site numbering on to its run") {
  Ctx ctx;
  am_record *doc = run_two_domains(ctx, "meanfield", {});
  const am_record *run = am_record_at(am_record_get(doc, "runs"), 0);
  CHECK(am::sdk::get_string(run, "run_status") == "warning");
  const std::vector<std::string> w = strings_at(run, am::msa::kWarningsKey);
  REQUIRE(w.size() == 1);
  CHECK(w == strings_at(am_record_get(doc, "task_extras"), am::msa::kWarningsKey));
  CHECK(am::sdk::get_string(run, "site_numbering") ==
        am::sdk::get_string(am_record_get(doc, "task_extras"), "site_numbering"));
  am_record_destroy(&doc);
}
