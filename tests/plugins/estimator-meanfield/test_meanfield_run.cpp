// The estimator meanfield through the host, as `attnmech run msa --estimator meanfield --out D` runs it: the task
// msa on the shipped fixture tests/data/msa/focus.a2m, the estimator from the build tree's plugins (AM_PLUGIN_PATH),
// the report library's results directory. Its couplings.txt parses as plmc's `-c` file (i res_i j res_j 0 score,
// site numbers and letters of the focus, pairs in plmc's order), the top-ranked pairs are the pinned ones on one
// thread and on two, and describe gives the report to mean-field runs only.
#include <doctest/doctest.h>

#include <attnmech/registry.h>
#include <attnmech/report.h>
#include <attnmech/run.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../temp_dir.hpp"
#include "meanfield_test_util.hpp"

using namespace mf_test;

namespace {

// The host's run of the task msa on focus.a2m (focus FOC_HUMAN) with the estimator meanfield on `threads` threads.
am_record *run_host(Ctx &ctx, const char *threads) {
  am_registry *reg = nullptr;
  REQUIRE(am_registry_create(&reg) == AM_OK);
  REQUIRE(am_registry_discover(nullptr, reg, nullptr) == AM_OK);
  am_run_spec *spec = nullptr;
  REQUIRE(am_run_spec_create(&spec) == AM_OK);
  const std::string file = std::string(AM_MSA_DATA) + "/focus.a2m";
  am_run_spec_set_task(spec, "msa");
  am_run_spec_set_estimator(spec, "meanfield");
  am_run_spec_set(spec, "file", file.c_str());
  am_run_spec_set(spec, "focus", "FOC_HUMAN");
  am_run_spec_set(spec, "threads", threads);
  am_record *doc = nullptr;
  const am_status st = am_run_execute(ctx.c, reg, spec, &doc);
  am_run_spec_destroy(&spec);
  am_registry_destroy(&reg);
  REQUIRE_MESSAGE(st == AM_OK, ctx.err());
  return doc;
}

struct PlmcLine {
  int i = 0, j = 0;
  char ri = 0, rj = 0;
  double score = 0.0;
};

// plmc's `-c` lines: `%d %c %d %c 0 %f`, six fields; REQUIREs the format of each.
std::vector<PlmcLine> parse_plmc(const std::string &path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::vector<PlmcLine> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    PlmcLine p;
    std::string ri, rj, zero, score, extra;
    REQUIRE_MESSAGE((s >> p.i >> ri >> p.j >> rj >> zero >> score), line);
    REQUIRE_MESSAGE(!(s >> extra), line);
    REQUIRE((ri.size() == 1 && rj.size() == 1 && zero == "0"));
    const size_t dot = score.find('.');
    REQUIRE_MESSAGE((dot != std::string::npos && score.size() - dot - 1 == 6), line);  // %f: six decimals
    p.ri = ri[0];
    p.rj = rj[0];
    p.score = std::stod(score);
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("meanfield run: focus.a2m through the host writes plmc's couplings file; the top pairs are the pinned "
          "ones on one thread and two") {
  Ctx ctx;
  am_record *doc1 = run_host(ctx, "1"), *doc2 = run_host(ctx, "2");
  const am_record *run = am_record_at(am_record_get(doc1, "runs"), 0);
  CHECK(am::meanfield::is_meanfield_fit(run));
  CHECK(numbers(run, "scores") == numbers(am_record_at(am_record_get(doc2, "runs"), 0), "scores"));
  // the focus FOC_HUMAN/10-17 keeps sites 10 11 13 15 17 (M K V L W); 4 rows (one dropped for its B), Neff 2
  CHECK(number(run, "L") == 5);
  CHECK(number(run, "M") == 4);
  CHECK(number(run, "neff") == doctest::Approx(2.0).epsilon(1e-15));
  const am_record *c = am_record_get(run, "contacts");
  // pinned: the two leading pairs and their scores (printed %f in couplings.txt: 4.081226, 3.949345)
  CHECK(numbers(c, "i")[0] == 10);
  CHECK(numbers(c, "j")[0] == 15);
  CHECK(numbers(c, "i")[1] == 13);
  CHECK(numbers(c, "j")[1] == 17);
  CHECK(numbers(c, "score")[0] == doctest::Approx(4.081226).epsilon(2e-7));
  CHECK(numbers(c, "score")[1] == doctest::Approx(3.949345).epsilon(2e-7));

  am_test::TempDir dir("meanfield-run");
  const std::string out = (dir.path / "D").string();
  REQUIRE_MESSAGE(am_report_write(ctx.c, doc1, out.c_str(), nullptr) == AM_OK, ctx.err());
  const std::vector<PlmcLine> lines = parse_plmc(out + "/couplings.txt");
  REQUIRE(lines.size() == 10);  // every pair i < j once
  const std::string sites = "10 11 13 15 17", letters = "MKVLW";
  for (size_t k = 0; k < lines.size(); ++k) {
    const PlmcLine &p = lines[k];
    CHECK(p.i < p.j);
    if (k) CHECK((lines[k - 1].i < p.i || (lines[k - 1].i == p.i && lines[k - 1].j < p.j)));  // plmc's order
    const size_t si = sites.find(std::to_string(p.i)), sj = sites.find(std::to_string(p.j));
    REQUIRE((si != std::string::npos && sj != std::string::npos));
    CHECK(p.ri == letters[si / 3]);
    CHECK(p.rj == letters[sj / 3]);
  }
  CHECK(lines[2].i == 10);  // 10 M 15 L: the top pair
  CHECK(lines[2].j == 15);
  CHECK(lines[2].score == doctest::Approx(4.081226).epsilon(1e-12));
  CHECK(std::ifstream(out + "/contacts.tsv").good());
  CHECK(std::ifstream(out + "/contact_map.svg").good());
  CHECK(std::ifstream(out + "/runs.0.params.J.npy").good());
  char *text = nullptr;
  REQUIRE(am_report_summary(ctx.c, doc1, &text) == AM_OK);
  CHECK(std::string(text).find("mean-field DCA (run 0)") != std::string::npos);
  am_free(text);
  am_record_destroy(&doc1);
  am_record_destroy(&doc2);
}

TEST_CASE("meanfield describe: the report for runs marked `fit` = \"meanfield\" only") {
  const auto describe = [](const char *fit, Rec &report) {
    Rec doc;
    am_record *run = am_record_append_object(am_record_list(doc.r, "runs"));
    if (fit) am_record_set_string(run, "fit", fit);
    const double S[9] = {0, 1, 2, 1, 0, 3, 2, 3, 0};
    am_record_set_matrix(run, "scores", S, 3, 3, 3);
    am_record_object(run, "contacts");
    am_record_list(report.r, "plots");  // as the host hands the report over
    am_record_list(report.r, "summary");
    REQUIRE(am::meanfield::describe(doc.r, report.r) == AM_OK);
  };
  Rec a, b, c;
  describe("meanfield", a);
  describe("alignment", b);
  describe(nullptr, c);
  CHECK(am_record_get(a.r, "files") != nullptr);  // couplings.txt, contacts.tsv
  CHECK(am_record_size(am_record_get(a.r, "plots")) == 1);  // the contact map
  CHECK(am_record_get(b.r, "files") == nullptr);
  CHECK(am_record_get(c.r, "files") == nullptr);
}
