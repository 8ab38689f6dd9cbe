// Tests of problem directories (libcore/src/problem_read.cpp, problem_write.cpp; attnmech/problem.h): a dataset
// written and read back is equal, and a write is whole or nothing and only over a problem directory. The error
// classes of the reader are pinned by tests/plugins/task-npy/test_npy_errors.cpp (through the npy task).
#include "../temp_dir.hpp"
#include <doctest/doctest.h>

#include <attnmech/attnmech.h>
#include <attnmech/report.h>  // am_report_json: the records compared as their results.json text
#include <attnmech/report_spec.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../handles.hpp"

namespace fs = std::filesystem;

using am_test::slurp;
using am_test::TempDir;

using am_test::Rec;
using am_test::Ctx;

namespace {

std::string json_text(const am_record *doc) {
  char *t = nullptr;
  REQUIRE(am_report_json(nullptr, doc, &t) == AM_OK);
  std::string s(t);
  am_free(t);
  return s;
}

}  // namespace

TEST_CASE("problem: a problem directory written from a dataset reads back equal") {
  Ctx ctx;
  TempDir t("attnmech-problem");
  for (const char *name : {"qk"}) {
    Rec ds, ds2;
    const std::string src = std::string(PROBLEM_TESTS_DATA) + "/npy/" + name;
    REQUIRE_MESSAGE(am_problem_read(ctx.c, src.c_str(), ds.r) == AM_OK, ctx.err());
    am_record_set_string(ds.r, "readout", "mean");
    am_record_remove(ds.r, "path_labels");
    am_record *pl = am_record_list(ds.r, "path_labels");
    am_record_append_string(pl, "p0");
    am_record_append_string(pl, "p1");
    const fs::path out = t.path / name;
    REQUIRE_MESSAGE(am_problem_write(ctx.c, out.c_str(), ds.r) == AM_OK, ctx.err());
    REQUIRE_MESSAGE(am_problem_read(ctx.c, out.c_str(), ds2.r) == AM_OK, ctx.err());
    // `sources` names the files read (dataset.h): the copy's are in the copy's directory, the rest is equal
    CHECK(std::string(am_record_string(am_record_get(am_record_get(ds2.r, "sources"), "X_train"))) ==
          (out / "X_train.npy").string());
    am_record_remove(ds.r, "sources");
    am_record_remove(ds2.r, "sources");
    CHECK(json_text(ds2.r) == json_text(ds.r));
  }
  // A bilinear problem with test data, written from a dataset built here.
  Rec ds, back;
  am_record_set_string(ds.r, "kind", AM_DATASET_ATTENTION);
  std::vector<double> X(3 * 2 * 2), y = {1, -1, 1}, W = {0.5, -1, 2, 0.25};
  for (size_t i = 0; i < X.size(); ++i) X[i] = 0.1 * static_cast<double>(i) - 0.3;
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 3;
  v.shape[0] = 3;
  v.shape[1] = v.shape[2] = 2;
  v.data = X.data();
  am_record_set_array(ds.r, "X_train", &v);
  am_record_set_array(ds.r, "X_test", &v);
  am_record_set_vector(ds.r, "y_train", y.data(), 3);
  am_record_set_vector(ds.r, "y_test", y.data(), 3);
  am_record *att = am_record_object(ds.r, "attention");
  am_record_set_matrix(att, "l1_h1", W.data(), 2, 2, 2);
  for (const char *k : {"heads", "widths", "variances"}) {
    am_record *l = am_record_list(ds.r, k);
    const size_t n = std::string(k) == "heads" ? 1 : std::string(k) == "widths" ? 2 : 3;
    // widths whole (3, 4): the reader enforces whole widths; variances 2.5, 3.5, 4.5 keep a fractional round trip
    const double first = std::string(k) == "widths" ? 3 : 2.5;
    for (size_t i = 0; i < n; ++i) am_record_append_number(l, std::string(k) == "heads" ? 1 : first + static_cast<double>(i));
  }
  am_record_set_number(ds.r, "temperature", 0.01);
  am_record_set_string(ds.r, "readout", "last");
  am_record *scan = am_record_list(ds.r, "widths_scan");
  am_record_append_number(scan, 10);
  REQUIRE_MESSAGE(am_problem_write(ctx.c, (t.path / "bil").c_str(), ds.r) == AM_OK, ctx.err());
  REQUIRE_MESSAGE(am_problem_read(ctx.c, (t.path / "bil").c_str(), back.r) == AM_OK, ctx.err());
  Rec again;
  REQUIRE(am_problem_write(ctx.c, (t.path / "bil2").c_str(), back.r) == AM_OK);
  REQUIRE(am_problem_read(ctx.c, (t.path / "bil2").c_str(), again.r) == AM_OK);
  am_record_remove(again.r, "sources");  // the files read differ by directory only
  am_record_remove(back.r, "sources");
  CHECK(json_text(again.r) == json_text(back.r));
  CHECK(am::spec::numbers(back.r, "attention.l1_h1") == std::vector<double>{0.5, 2, -1, 0.25});  // W[i][j] kept
  CHECK(am::spec::numbers(back.r, "X_test") == X);
  CHECK(am_problem_read(ctx.c, "", back.r) == AM_ERR_USAGE);
  // one rank's part of the data (dataset.h key `part`) is not a problem: refused, nothing written
  const double rows[2] = {1, 4};
  am_record_set_vector(am_record_object(ds.r, "part"), "train", rows, 2);
  CHECK(am_problem_write(ctx.c, (t.path / "part").c_str(), ds.r) == AM_ERR_USAGE);
  CHECK(std::string(ctx.err()).find("part") != std::string::npos);
  CHECK(!std::filesystem::exists(t.path / "part" / "model.json"));
}

TEST_CASE("problem: a problem directory is written whole or not at all, and only over a problem directory") {
  Ctx ctx;
  TempDir t("attnmech-problem");
  Rec ds, other;
  const std::string src = std::string(PROBLEM_TESTS_DATA) + "/npy/qk";
  REQUIRE_MESSAGE(am_problem_read(ctx.c, src.c_str(), ds.r) == AM_OK, ctx.err());
  const fs::path out = t.path / "p";
  REQUIRE_MESSAGE(am_problem_write(ctx.c, out.c_str(), ds.r) == AM_OK, ctx.err());
  std::ofstream(out / "stray.npy") << "left by hand";  // not the writer's: replacing the directory removes it
  // A second write over a problem directory replaces it whole (the stray file goes, the problem reads back)
  REQUIRE_MESSAGE(am_problem_write(ctx.c, out.c_str(), ds.r) == AM_OK, ctx.err());
  CHECK_FALSE(fs::exists(out / "stray.npy"));
  CHECK(am_problem_read(ctx.c, out.c_str(), other.r) == AM_OK);
  // A directory of other files (no model.json) is refused and left as it was
  const fs::path mine = t.path / "mine";
  fs::create_directories(mine);
  std::ofstream(mine / "notes.txt") << "mine";
  CHECK(am_problem_write(ctx.c, mine.c_str(), ds.r) == AM_ERR_IO);
  CHECK(std::string(ctx.err()).find("holds files but no model.json") != std::string::npos);
  CHECK(slurp(mine / "notes.txt") == "mine");
  CHECK_FALSE(fs::exists(mine / "model.json"));
  // A dataset that fails midway (a head missing) leaves neither a half directory nor a temporary beside it
  Rec broken;
  REQUIRE(am_problem_read(ctx.c, src.c_str(), broken.r) == AM_OK);
  am_record_remove(am_record_object(broken.r, "attention"), "l1_h1");
  CHECK(am_problem_write(ctx.c, (t.path / "half").c_str(), broken.r) == AM_ERR_FORMAT);
  CHECK_FALSE(fs::exists(t.path / "half"));
  for (const auto &e : fs::directory_iterator(t.path))
    CHECK_MESSAGE(e.path().filename().string().find(".tmp-") == std::string::npos, e.path().string());
  // ... and over an existing problem directory keeps the old one intact
  CHECK(am_problem_write(ctx.c, out.c_str(), broken.r) == AM_ERR_FORMAT);
  Rec again;
  CHECK(am_problem_read(ctx.c, out.c_str(), again.r) == AM_OK);
}
