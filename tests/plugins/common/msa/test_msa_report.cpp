// The report spec of alignment fits (plugins/common/msa/msa_report.hpp): the contact map's colour scale is clipped where
// the top-L pairs begin, and its colour bar says so — the clip's score, its quantile and the top pair's score — so a
// reader sees that the top colour holds every pair from the clip up (docs/msa.md "Outputs").
#include <doctest/doctest.h>

#include <attnmech/array.h>

#include <string>
#include <vector>

#include "../../../handles.hpp"
#include "msa_report.hpp"

using am_test::Rec;

namespace {

// A results document with one alignment fit whose n×n scores are `S`; its report spec's contact map.
struct Doc {
  Rec results, report;
  const am_record *map = nullptr;
  explicit Doc(const std::vector<double> &S, size_t n) {
    am_record *runs = am_record_list(results.r, "runs");
    am_record *run = am_record_append_object(runs);
    REQUIRE(run);
    am_record_set_string(run, am::msa::kFitKey, am::msa::kFitAlignment);
    const size_t shape[2] = {n, n};
    const am_array_view v = am_array_view_make(AM_F64, 2, shape, 0, S.data());
    REQUIRE(am_record_set_array(run, "scores", &v) == AM_OK);
    REQUIRE(am::msa_report::describe(results.r, report.r) == AM_OK);
    const am_record *plots = am_record_get(report.r, "plots");
    for (size_t i = 0; i < am_record_size(plots); ++i)
      if (am::sdk::get_string(am_record_at(plots, i), "file") == "contact_map") map = am_record_at(plots, i);
    REQUIRE(map);
  }
  std::string label() const { return am::sdk::get_string(map, "value_label"); }
  double quantile() const { return am::sdk::get_number(map, "clip_quantile"); }
};

}  // namespace

TEST_CASE("msa report: the contact map's colour bar names its clip and the top pair's score") {
  // L = 10: the scale ends at quantile 1 − 2/L = 0.8 of the 100 cells. Scores 0..99 with cell (0, 9) raised to 1000:
  // ascending, index ⌊0.8·99⌋ = 79 holds 80 (0..8 fill indices 0..8, then 10, 11, ...), the top is 1000.
  std::vector<double> S(100);
  for (size_t k = 0; k < 100; ++k) S[k] = double(k);
  S[9] = 1000;
  const Doc d(S, 10);
  CHECK(d.quantile() == doctest::Approx(0.8).epsilon(1e-15));
  CHECK(d.label() == "APC score (colour scale clipped at 80, quantile 0.8; top pair 1000)");
  // nothing above the clip (every score equal): the plain label
  const Doc flat(std::vector<double>(100, 0.5), 10);
  CHECK(flat.label() == "APC score");
}

TEST_CASE("msa report: past 300 sites the clip is the quantile of the cells the map draws (every stride-th)") {
  // n = 301 is drawn at stride 2 (151 × 151 cells, rows and columns 0, 2, …, 300). S(i, j) = 301·i + j grows along
  // the drawn cells in row order, so the value at quantile index k is that of drawn cell k: row 2·(k / 151), column
  // 2·(k % 151). The top pair is the matrix's largest score, drawn or not (cell (299, 300) raised here).
  const size_t n = 301, m = 151;
  std::vector<double> S(n * n);
  for (size_t k = 0; k < n * n; ++k) S[k] = double(k);
  S[299 * n + 300] = 1e6;
  const Doc d(S, n);
  const double q = 1 - 2.0 / double(n);
  CHECK(d.quantile() == doctest::Approx(q).epsilon(1e-15));
  const size_t k = static_cast<size_t>(q * double(m * m - 1));
  const double clip = double(301 * 2 * (k / m) + 2 * (k % m));
  CHECK(d.label() == "APC score (colour scale clipped at " + am::spec::format("%.4g", clip) + ", quantile " +
                         am::spec::format("%.4g", q) + "; top pair 1e+06)");
}
