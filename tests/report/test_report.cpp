// Tests of the report library (tools/report, attnmech/report.h) and the spec builder
// (attnmech/report_spec.hpp): atomic writes, read round trip, every plot kind from a hand-made spec,
// paths with `*`, the summary text, `attnmech plot` on a v0.1 results directory, and that tools/ names no
// plugin. (Problem directories: tests/libcore/test_problem.cpp.)
#include "../temp_dir.hpp"
#include <doctest/doctest.h>

#include "../scoped_env.hpp"

#include <attnmech/attnmech.h>
#include <attnmech/report.h>
#include <attnmech/report_spec.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../handles.hpp"

namespace fs = std::filesystem;

using am_test::slurp;
using am_test::TempDir;

using am_test::Rec;
using am_test::Ctx;

namespace {

// The files a plot list becomes in `formats` (AM_REPORT_FORMAT_* bits), in the order they are written: <f>.svg,
// <f>.pdf, <f>.png of each plot. The default since 3.7 is SVG only, in every build.
std::vector<std::string> plot_files(const std::vector<std::string> &svgs, uint32_t formats = AM_REPORT_FORMAT_SVG) {
  std::vector<std::string> out;
  for (const auto &f : svgs) {
    const std::string stem = f.substr(0, f.size() - 4);
    if (formats & AM_REPORT_FORMAT_SVG) out.push_back(f);
    if (formats & AM_REPORT_FORMAT_PDF) out.push_back(stem + ".pdf");
    if (formats & AM_REPORT_FORMAT_PNG) out.push_back(stem + ".png");
  }
  return out;
}

// AM_PLOT_FORMATS set to `value` (nullptr: unset) for a scope, then restored.
struct PlotFormatsEnv : am_test::ScopedEnv {
  explicit PlotFormatsEnv(const char *value) : ScopedEnv("AM_PLOT_FORMATS", value) {}
};

size_t occurrences(const std::string &hay, const std::string &needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

std::string json_text(const am_record *doc) {
  char *t = nullptr;
  REQUIRE(am_report_json(nullptr, doc, &t) == AM_OK);
  std::string s(t);
  am_free(t);
  return s;
}

// The text of the document read back from a results directory (its .npy references resolved).
std::string read_back_text(const fs::path &dir) {
  am_record *r = nullptr;
  REQUIRE(am_report_read(nullptr, dir.c_str(), &r) == AM_OK);
  const std::string t = json_text(r);
  am_record_destroy(&r);
  return t;
}

std::set<std::string> files_in(const fs::path &dir) {
  std::set<std::string> out;
  for (const auto &e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A document with `runs` runs: x = 10^(i+1), acc, a 2 × 3 matrix M and a 20-element trace each.
void make_doc(am_record *doc, size_t runs) {
  am_record_set_string(doc, "task", "t");
  am_record_set_string(doc, "estimator", "e");
  am_record_set_number(doc, "seed", 3);
  am_record *l = am_record_list(doc, "runs");
  for (size_t i = 0; i < runs; ++i) {
    am_record *r = am_record_append_object(l);
    am_record_set_number(r, "x", std::pow(10.0, static_cast<double>(i + 1)));
    am_record_set_number(r, "acc", 0.5 + 0.125 * static_cast<double>(i));
    am_record_set_string(r, "state", i == 0 ? "converged" : "stopped");
    double m[6] = {1, 4, 2, 5, 3, 6};  // rows (1 2 3), (4 5 6) + 10 i
    for (double &v : m) v += 10.0 * static_cast<double>(i);
    am_record_set_matrix(r, "M", m, 2, 3, 2);
    std::vector<double> trace(20);
    for (size_t k = 0; k < trace.size(); ++k) trace[k] = static_cast<double>(k + i);
    am_record_set_vector(r, "trace", trace.data(), trace.size());
    am_record_set_string(r, "run_status", "ok");
  }
  am_record_set_string(doc, "status", "ok");
}

bool has_tmp_sibling(const fs::path &dir) {
  for (const auto &e : fs::directory_iterator(dir.parent_path())) {
    const std::string n = e.path().filename().string(), base = dir.filename().string();
    if (n.rfind(base + ".tmp-", 0) == 0 || n.rfind(base + ".old-", 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("report: a write replaces the whole directory; a failing write leaves the old one") {
  TempDir t("attnmech-report");
  Ctx ctx;
  const fs::path dir = t.path / "sub" / "res";  // missing parents are created
  Rec a, b;
  make_doc(a.r, 2);
  make_doc(b.r, 1);
  REQUIRE_MESSAGE(am_report_write(ctx.c, a.r, dir.c_str(), nullptr) == AM_OK, ctx.err());
  CHECK(files_in(dir) == std::set<std::string>{"results.json", "runs.0.trace.npy", "runs.1.trace.npy"});
  REQUIRE(am_report_write(ctx.c, b.r, dir.c_str(), nullptr) == AM_OK);
  CHECK(files_in(dir) == std::set<std::string>{"results.json", "runs.0.trace.npy"});  // no stale runs.1
  CHECK(read_back_text(dir) == json_text(b.r));  // trace (20 numbers) only in its .npy
  const std::string written_b = slurp(dir / "results.json");
  CHECK_FALSE(has_tmp_sibling(dir));

  // A failure after results.json was written (an invalid text-file name): the previous run survives whole.
  Rec c;
  make_doc(c.r, 3);
  am::spec::Report rep(am_record_object(c.r, "report"));
  rep.file("bad/name.txt");
  REQUIRE(rep.status() == AM_OK);
  CHECK(am_report_write(ctx.c, c.r, dir.c_str(), nullptr) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("bad/name") != std::string::npos);
  CHECK(files_in(dir) == std::set<std::string>{"results.json", "runs.0.trace.npy"});
  CHECK(slurp(dir / "results.json") == written_b);
  CHECK_FALSE(has_tmp_sibling(dir));

  // Unusable targets are refused before anything is written.
  std::ofstream(t.path / "file") << "x";
  CHECK(am_report_check_dir(ctx.c, (t.path / "file" / "res").c_str()) == AM_ERR_IO);
  CHECK(am_report_write(ctx.c, b.r, (t.path / "file" / "res").c_str(), nullptr) == AM_ERR_IO);
  CHECK(am_report_check_dir(ctx.c, (t.path / "file").c_str()) == AM_ERR_IO);  // not a directory
  fs::create_directories(t.path / "precious");
  std::ofstream(t.path / "precious" / "notes.txt") << "mine";
  CHECK(am_report_write(ctx.c, b.r, (t.path / "precious").c_str(), nullptr) == AM_ERR_IO);  // not a results dir
  CHECK(fs::exists(t.path / "precious" / "notes.txt"));
  CHECK(am_report_check_dir(ctx.c, dir.c_str()) == AM_OK);

  // An older caller's smaller options struct: the defaults for the rest; too small is refused.
  am_report_write_options o = AM_REPORT_WRITE_OPTIONS_INIT;
  o.struct_size = static_cast<uint32_t>(offsetof(am_report_write_options, on_file));
  o.npy_min_elements = 1000;
  REQUIRE(am_report_write(ctx.c, a.r, dir.c_str(), &o) == AM_OK);
  CHECK(files_in(dir) == std::set<std::string>{"results.json"});
  o.struct_size = 4;
  CHECK(am_report_write(ctx.c, a.r, dir.c_str(), &o) == AM_ERR_INVALID_ARGUMENT);
  // The initialiser writes no more than the caller's size: an older caller's struct (ending before on_file)
  // gets the defaults and struct_size = its size; the bytes past it stay untouched.
  struct {
    am_report_write_options opt;
    unsigned char guard[8];
  } older;
  std::memset(&older, 0xAB, sizeof older);
  const size_t old_size = offsetof(am_report_write_options, on_file);
  am_report_write_options_init(&older.opt, old_size);
  CHECK(older.opt.struct_size == old_size);
  CHECK(older.opt.plots == 1);
  CHECK(older.opt.npy_min_elements == 16);
  const unsigned char *tail = reinterpret_cast<const unsigned char *>(&older.opt) + old_size;
  for (size_t k = 0; k < sizeof older - old_size; ++k) CHECK(tail[k] == 0xAB);
  am_report_write_options full;
  am_report_write_default_options(&full);
  CHECK(full.struct_size == sizeof full);
  CHECK(!full.on_file);
  CHECK(full.formats == AM_REPORT_FORMATS_DEFAULT);  // added in 3.7
  // The plot options (3.7): the defaults; a struct_size below the first version refused.
  am_report_plot_options po;
  std::memset(&po, 0xAB, sizeof po);
  am_report_plot_default_options(&po);
  CHECK(po.struct_size == sizeof po);
  CHECK(po.formats == AM_REPORT_FORMATS_DEFAULT);
  CHECK((!po.on_file && !po.user));
  po.struct_size = 4;
  CHECK(am_report_plot_with_options(ctx.c, a.r, dir.c_str(), &po) == AM_ERR_INVALID_ARGUMENT);
}

TEST_CASE("report: a plot that cannot be drawn never discards the results; AM_PLOT_FORMATS checked up front") {
  // Issue 37 item 6: the results go in place without the plot (the ones drawn before it kept), on_file is told
  // them, the status is the plot's error.
  TempDir t("attnmech-report");
  Ctx ctx;
  const fs::path dir = t.path / "res";
  Rec c;
  make_doc(c.r, 3);
  am::spec::Report rep(am_record_object(c.r, "report"));
  rep.lines("ok_plot", "", "x", "y").series("acc", "runs.*.x", "runs.*.acc");
  rep.lines("bad/name", "", "x", "y").series("acc", "runs.*.x", "runs.*.acc");
  REQUIRE(rep.status() == AM_OK);
  std::vector<std::string> told;
  am_report_write_options o;
  am_report_write_default_options(&o);
  o.on_file = [](void *u, const char *f) { static_cast<std::vector<std::string> *>(u)->push_back(f); };
  o.user = &told;
  CHECK(am_report_write(ctx.c, c.r, dir.c_str(), &o) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("the results are written to " + dir.string() + ", but not all of their plots") == 0);
  CHECK(ctx.err().find("invalid file name 'bad/name'") != std::string::npos);
  std::set<std::string> want{"results.json", "runs.0.trace.npy", "runs.1.trace.npy", "runs.2.trace.npy"};
  for (const auto &f : plot_files({"ok_plot.svg"})) want.insert(f);
  CHECK(files_in(dir) == want);
  CHECK(std::set<std::string>(told.begin(), told.end()) == want);
  CHECK(read_back_text(dir).find("\"acc\"") != std::string::npos);
  CHECK_FALSE(has_tmp_sibling(dir));

  // AM_PLOT_FORMATS: a value it does not know is refused by the check, and by am_report_check_dir, before anything.
  PlotFormatsEnv bad("svg,png");
  CHECK(am_report_check_settings(ctx.c) == AM_ERR_USAGE);
  CHECK(ctx.err() == "AM_PLOT_FORMATS='svg,png': expected svg (SVG plots only) or all (SVG, PDF and PNG), one word (a "
                     "list such as svg,pdf: attnmech --plots, the report library's formats setting)");
  CHECK(am_report_check_dir(ctx.c, (t.path / "other").c_str()) == AM_ERR_USAGE);
  for (const char *ok : {"svg", "all"}) {
    setenv("AM_PLOT_FORMATS", ok, 1);
    CHECK(am_report_check_settings(ctx.c) == AM_OK);
  }
}

TEST_CASE("report: plot formats — SVG by default, the formats asked for and no others, bad lists refused") {
  // Issue 41 item 2: PDF and PNG only when asked (the formats setting of the write and plot options).
  TempDir t("attnmech-report");
  Ctx ctx;
  PlotFormatsEnv unset(nullptr);
  Rec c;
  make_doc(c.r, 2);
  am::spec::Report rep(am_record_object(c.r, "report"));
  rep.lines("acc", "", "x", "acc").series("acc", "runs.*.x", "runs.*.acc");
  rep.heatmap("M", "").panel("", "runs.0.M");
  REQUIRE(rep.status() == AM_OK);
  const std::set<std::string> results{"results.json", "runs.0.trace.npy", "runs.1.trace.npy"};
  auto written = [&](const fs::path &dir, uint32_t formats) {
    std::set<std::string> want = results;
    for (const auto &f : plot_files({"acc.svg", "M.svg"}, formats)) want.insert(f);
    return files_in(dir) == want;
  };
  REQUIRE_MESSAGE(am_report_write(ctx.c, c.r, (t.path / "default").c_str(), nullptr) == AM_OK, ctx.err());
  CHECK(written(t.path / "default", AM_REPORT_FORMAT_SVG));  // the default, with or without cairo
  const uint32_t have = am_report_formats_available();
  CHECK((have == AM_REPORT_FORMAT_SVG || have == AM_REPORT_FORMAT_ALL));
  CHECK((have == AM_REPORT_FORMAT_ALL) == (AM_REPORT_CAIRO != 0));
  // Every subset this build can write is written exactly: by am_report_write and by am_report_plot_with_options.
  for (uint32_t f = 1; f <= AM_REPORT_FORMAT_ALL; ++f) {
    if (f & ~have) continue;
    CAPTURE(f);
    am_report_write_options o;
    am_report_write_default_options(&o);
    o.formats = f;
    const fs::path dir = t.path / ("w" + std::to_string(f));
    REQUIRE_MESSAGE(am_report_write(ctx.c, c.r, dir.c_str(), &o) == AM_OK, ctx.err());
    CHECK(written(dir, f));
    const fs::path pdir = t.path / ("p" + std::to_string(f));
    fs::create_directories(pdir);
    std::vector<std::string> told;
    am_report_plot_options po;
    am_report_plot_default_options(&po);
    po.formats = f;
    po.on_file = [](void *u, const char *n) { static_cast<std::vector<std::string> *>(u)->push_back(n); };
    po.user = &told;
    REQUIRE_MESSAGE(am_report_plot_with_options(ctx.c, c.r, pdir.c_str(), &po) == AM_OK, ctx.err());
    CHECK(told == plot_files({"acc.svg", "M.svg"}, f));
    const auto on_disk = files_in(pdir);
    CHECK(std::set<std::string>(told.begin(), told.end()) == on_disk);
    for (const auto &name : on_disk) CHECK(fs::file_size(pdir / name) > 0);
  }
  // A 3.6 caller's struct (ending before formats): the default, whatever lies past its struct_size.
  am_report_write_options o = AM_REPORT_WRITE_OPTIONS_INIT;
  o.struct_size = static_cast<uint32_t>(offsetof(am_report_write_options, formats));
  o.formats = AM_REPORT_FORMAT_PNG;  // not read
  REQUIRE_MESSAGE(am_report_write(ctx.c, c.r, (t.path / "older").c_str(), &o) == AM_OK, ctx.err());
  CHECK(written(t.path / "older", AM_REPORT_FORMAT_SVG));
  // A format the build cannot write, or bits that are no format: refused, nothing written.
  am_report_write_default_options(&o);
  o.formats = 8;
  CHECK(am_report_write(ctx.c, c.r, (t.path / "bits").c_str(), &o) == AM_ERR_INVALID_ARGUMENT);
  CHECK_FALSE(fs::exists(t.path / "bits"));
  if (have != AM_REPORT_FORMAT_ALL) {
    o.formats = AM_REPORT_FORMAT_PDF;
    CHECK(am_report_write(ctx.c, c.r, (t.path / "nocairo").c_str(), &o) == AM_ERR_USAGE);
    CHECK(ctx.err().find("built without cairo") != std::string::npos);
    CHECK_FALSE(fs::exists(t.path / "nocairo"));
  }
  // AM_PLOT_FORMATS (3.6's variable) chooses for the default only: "all" = every format the build has.
  {
    PlotFormatsEnv all("all");
    REQUIRE(am_report_write(ctx.c, c.r, (t.path / "env-all").c_str(), nullptr) == AM_OK);
    CHECK(written(t.path / "env-all", have));
    o.formats = AM_REPORT_FORMAT_SVG;  // an explicit setting wins
    REQUIRE(am_report_write(ctx.c, c.r, (t.path / "env-all-svg").c_str(), &o) == AM_OK);
    CHECK(written(t.path / "env-all-svg", AM_REPORT_FORMAT_SVG));
    PlotFormatsEnv svg("svg");
    REQUIRE(am_report_write(ctx.c, c.r, (t.path / "env-svg").c_str(), nullptr) == AM_OK);
    CHECK(written(t.path / "env-svg", AM_REPORT_FORMAT_SVG));
  }
}

TEST_CASE("report: am_report_parse_formats — names, lists and the message naming the valid ones") {
  Ctx ctx;
  const uint32_t have = am_report_formats_available();
  uint32_t f = 99;
  REQUIRE(am_report_parse_formats(ctx.c, "svg", &f) == AM_OK);
  CHECK(f == AM_REPORT_FORMAT_SVG);
  REQUIRE(am_report_parse_formats(ctx.c, "all", &f) == AM_OK);
  CHECK(f == have);
  if (have == AM_REPORT_FORMAT_ALL) {
    REQUIRE(am_report_parse_formats(ctx.c, " svg , pdf,png,svg", &f) == AM_OK);  // spaces, repeats
    CHECK(f == AM_REPORT_FORMAT_ALL);
    REQUIRE(am_report_parse_formats(ctx.c, "png", &f) == AM_OK);
    CHECK(f == AM_REPORT_FORMAT_PNG);
  } else {
    CHECK(am_report_parse_formats(ctx.c, "svg,pdf", &f) == AM_ERR_USAGE);
    CHECK(ctx.err() == "plot formats 'svg,pdf': this attnmech was built without cairo, so its plots are svg only (pdf "
                       "and png need libcairo2-dev when it is built)");
  }
  const std::string valid = "; the formats are svg, pdf and png, comma-separated (e.g. svg,pdf), or all";
  for (const auto &[list, message] : std::vector<std::pair<const char *, std::string>>{
           {"jpeg", "unknown plot format 'jpeg' in 'jpeg'" + valid},
           {"svg,PNG", "unknown plot format 'PNG' in 'svg,PNG'" + valid},
           {"svg;pdf", "unknown plot format 'svg;pdf' in 'svg;pdf'" + valid},
           {"", "an empty plot format in ''" + valid},
           {"svg,", "an empty plot format in 'svg,'" + valid}}) {
    CAPTURE(list);
    f = 99;
    CHECK(am_report_parse_formats(ctx.c, list, &f) == AM_ERR_USAGE);
    CHECK(ctx.err() == message);
    CHECK(f == 99);  // untouched
  }
  CHECK(am_report_parse_formats(ctx.c, nullptr, &f) == AM_ERR_INVALID_ARGUMENT);
}

TEST_CASE("report: results.json nested 10^4 levels deep is refused, not a stack overflow") {
  TempDir t("attnmech-report");
  Ctx ctx;
  fs::create_directories(t.path / "deep");
  std::ofstream(t.path / "deep" / "results.json") << "{\"a\": " << std::string(10000, '[') << std::string(10000, ']')
                                                  << "}";
  am_record *doc = nullptr;
  CHECK(am_report_read(ctx.c, (t.path / "deep").c_str(), &doc) == AM_ERR_FORMAT);
  CHECK(doc == nullptr);
  CHECK(ctx.err().find("nested deeper than") != std::string::npos);
}

// Issue 23 item 7: a FIFO or /dev/zero as results.json hung `attnmech plot` and am.load (the read waited for a
// writer or read for ever); the one reader (tools/report/read_input.hpp) names what it is, like the .npy reader.
TEST_CASE("report: a FIFO, /dev/zero or a directory as results.json is refused at once") {
  TempDir t("attnmech-report");
  Ctx ctx;
  am_record *doc = nullptr;
  fs::create_directories(t.path / "fifo");
  REQUIRE(mkfifo((t.path / "fifo" / "results.json").c_str(), 0600) == 0);
  CHECK(am_report_read(ctx.c, (t.path / "fifo").c_str(), &doc) == AM_ERR_FORMAT);
  CHECK(doc == nullptr);
  CHECK(ctx.err().find("results.json: is a FIFO, not a results.json file") != std::string::npos);
  CHECK(am_report_read(ctx.c, "/dev/zero", &doc) == AM_ERR_FORMAT);
  CHECK(ctx.err() == "/dev/zero: is a character device, not a results.json file");
  fs::create_directories(t.path / "nested" / "results.json");
  CHECK(am_report_read(ctx.c, (t.path / "nested").c_str(), &doc) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("is a directory, not a results.json file") != std::string::npos);
  CHECK(am_report_read(ctx.c, (t.path / "none").c_str(), &doc) == AM_ERR_IO);
  CHECK(ctx.err().find("none: cannot open: No such file or directory") != std::string::npos);
}

TEST_CASE("report: results.json reads back to the same document") {
  TempDir t("attnmech-report");
  Ctx ctx;
  Rec a;
  make_doc(a.r, 2);
  am_record *ex = am_record_object(a.r, "task_extras");
  am_record_set_bool(ex, "flag", 1);
  am_record_set_null(ex, "none");
  am_record *names = am_record_list(ex, "names");
  am_record_append_string(names, "g (same\u2192unif)");
  am_record *us = am_record_list(ex, "U");  // matrices of different shapes stay a list of arrays
  double u1[4] = {1, 2, 2, 1}, u2[1] = {0.25};
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = v.shape[1] = 2;
  v.data = u1;
  am_record_append_array(us, &v);
  v.shape[0] = v.shape[1] = 1;
  v.data = u2;
  am_record_append_array(us, &v);
  REQUIRE(am_report_write(ctx.c, a.r, (t.path / "r").c_str(), nullptr) == AM_OK);
  am_record *back = nullptr;
  REQUIRE_MESSAGE(am_report_read(ctx.c, (t.path / "r").c_str(), &back) == AM_OK, ctx.err());
  CHECK(json_text(back) == json_text(a.r));
  // Numeric nested lists come back as arrays of their shape.
  am_array_view m{};
  REQUIRE(am_record_array(am::spec::at(back, "runs.1.M"), &m) == AM_OK);
  CHECK(m.ndim == 2);
  CHECK(m.shape[0] == 2);
  CHECK(m.shape[1] == 3);
  CHECK(am::spec::numbers(back, "runs.1.M.1") == std::vector<double>{14, 15, 16});
  am_record_destroy(&back);
  CHECK(am_report_read(ctx.c, (t.path / "nothing").c_str(), &back) == AM_ERR_IO);
  std::ofstream(t.path / "bad.json") << "{not json";
  CHECK(am_report_read(ctx.c, (t.path / "bad.json").c_str(), &back) == AM_ERR_FORMAT);
  CHECK(back == nullptr);
}

TEST_CASE("report: every plot kind renders from a hand-made spec") {
  TempDir t("attnmech-report");
  Ctx ctx;
  Rec d;
  make_doc(d.r, 3);
  am::spec::Report rep(am_record_object(d.r, "report"));
  rep.lines("lines", "Accuracy", "x", "acc").log_x().series("acc", "runs.*.x", "runs.*.acc", "points").str("yerr", "=0.01");  // yerr of another length: none
  rep.lines("lines2", "", "x", "acc").series("acc", "runs.*.x", "runs.*.acc", "points").str("yerr", "runs.*.acc");
  am::spec::Node l3 = rep.lines("lines3", "", "x", "acc");
  l3.series("acc", "runs.*.x", "runs.*.acc", "line");
  l3.hline("level", "=0.75");
  rep.scatter("scatter", "", "M", "M").flag("diagonal", true).series("M", "runs.0.M", "runs.1.M");
  am::spec::Node h = rep.heatmap("heat", "M", "sequential");
  h.panel("", "runs.0.M");
  h.str("row_labels", "runs.0:2.state");
  am::spec::Node h2 = rep.heatmap("heat2", "");
  h2.panel("first", "runs.0.M");
  h2.panel("last", "runs.2.M");
  am::spec::Node b = rep.bars("bars", "", "run", "acc").str("categories", "runs.*.state");
  b.series("acc", "", "runs.*.acc").str("yerr", "runs.*.acc");
  b.series("x", "", "runs.*.x").num("y_scale", 0.001);
  rep.lines("missing", "", "", "").series("nothing", "", "runs.*.nope");  // resolves to nothing: skipped
  REQUIRE(rep.status() == AM_OK);
  std::vector<std::string> files;
  auto collect = [](void *u, const char *n) { static_cast<std::vector<std::string> *>(u)->push_back(n); };
  REQUIRE_MESSAGE(am_report_plot(ctx.c, d.r, t.path.c_str(), collect, &files) == AM_OK, ctx.err());
  CHECK(files == plot_files({"lines.svg", "lines2.svg", "lines3.svg", "scatter.svg", "heat.svg", "heat2.svg", "bars.svg"}));
  // ... and as every format this build has (PDF and PNG of every kind with cairo).
  files.clear();
  am_report_plot_options po;
  am_report_plot_default_options(&po);
  po.formats = am_report_formats_available(), po.on_file = collect, po.user = &files;
  REQUIRE_MESSAGE(am_report_plot_with_options(ctx.c, d.r, (t.path).c_str(), &po) == AM_OK, ctx.err());
  CHECK(files == plot_files({"lines.svg", "lines2.svg", "lines3.svg", "scatter.svg", "heat.svg", "heat2.svg", "bars.svg"},
                            am_report_formats_available()));
  const std::string lines = slurp(t.path / "lines.svg");
  CHECK(occurrences(lines, "<circle") == 3 + 1);  // three points + the legend mark
  CHECK(occurrences(lines, "stroke-width=\"1.2\"") == 0);
  CHECK(lines.find(">Accuracy</text>") != std::string::npos);
  CHECK(occurrences(slurp(t.path / "lines2.svg"), "stroke-width=\"1.2\"") == 3 * 3);  // an error bar is three lines
  const std::string l3s = slurp(t.path / "lines3.svg");
  CHECK(occurrences(l3s, "<polyline") == 1);
  CHECK(l3s.find(">level</text>") != std::string::npos);
  CHECK(occurrences(l3s, "stroke-dasharray") >= 2);  // the reference line and its legend entry
  const std::string sc = slurp(t.path / "scatter.svg");
  CHECK(occurrences(sc, "<circle") == 6 + 1);
  CHECK(sc.find(">y = x</text>") != std::string::npos);
  const std::string heat = slurp(t.path / "heat.svg");
  CHECK(occurrences(heat, "<rect") == 1 + 6 + 1 + 64 + 1);  // background, cells, frame, colour bar, its frame
  for (const char *s : {">converged</text>", ">stopped</text>", ">0</text>", ">1</text>"}) CHECK(heat.find(s) != std::string::npos);
  const std::string heat2 = slurp(t.path / "heat2.svg");
  CHECK(occurrences(heat2, "<svg ") == 3);  // two panels side by side
  CHECK(heat2.find(">first</text>") != std::string::npos);
  CHECK(heat2.find(">last</text>") != std::string::npos);
  const std::string bars = slurp(t.path / "bars.svg");
  CHECK(occurrences(bars, "<rect") == 1 + 1 + 6 + 2);  // background, frame, 2 × 3 bars, two legend marks
  CHECK(occurrences(bars, "stroke-width=\"1.2\"") == 3 * 3);
  CHECK(bars.find(">converged</text>") != std::string::npos);
}

TEST_CASE("report: paths with * and the summary text") {
  Rec d;
  make_doc(d.r, 2);
  am_record *runs = am_record_get_mut(d.r, "runs");
  am_record_remove(const_cast<am_record *>(am_record_at(runs, 1)), "acc");  // a gap stays a gap
  am_record_set_string(const_cast<am_record *>(am_record_at(runs, 1)), "run_status", "not_converged");
  am_record_set_string(d.r, "status", "not_converged");
  am::spec::Report rep(am_record_object(d.r, "report"));
  rep.table("").column("x", "runs.*.x", "%.0f").column("acc", "runs.*.acc", "%.3f")
      .column("M[*][1]", "runs.*.M.1.1", "%g").column("state", "runs.*.state", "%s");
  rep.values("numbers").value("row 1 of the last M", "runs.1.M.1", "%g").value("columns 1:3 of row 0", "runs.0.M.0.1:3", "%.1f")
      .value("trace", "runs.0.trace").value("all M", "runs.*.M").value("literal", "=2.5", "%.2f").value("absent", "runs.5.x");
  rep.matrix("M at run 1", "runs.1.M", "%.1f").labels("", "runs.0.M.0");
  rep.text("the end");
  REQUIRE(rep.status() == AM_OK);
  char *text = nullptr;
  REQUIRE(am_report_summary(nullptr, d.r, &text) == AM_OK);
  const std::string s = text;
  am_free(text);
  const std::string expected =
      "task t, estimator e, seed 3\n"
      "status not_converged (2 runs: ok, not_converged)\n"
      "\n"
      "    x    acc  M[*][1]  state\n"
      "   10  0.500        5  converged\n"
      "  100      -       15  stopped\n"
      "\n"
      "numbers:\n"
      "  row 1 of the last M   [14, 15, 16]\n"
      "  columns 1:3 of row 0  [2.0, 3.0]\n"
      "  trace                 [20 values]\n"
      "  all M                 [2x2x3 array]\n"
      "  literal               2.50\n"
      "\n"
      "M at run 1:\n"
      "            1          2          3\n"
      "         11.0       12.0       13.0\n"
      "         14.0       15.0       16.0\n"
      "\n"
      "the end\n";
  CHECK(s == expected);
}

TEST_CASE("report: several documents overlay their shared line plots") {
  TempDir t("attnmech-report");
  Rec a, b;
  for (am_record *d : {a.r, b.r}) {
    make_doc(d, 2);
    am::spec::Report rep(am_record_object(d, "report"));
    rep.lines("acc", "Accuracy", "x", "acc").series("theory", "runs.*.x", "runs.*.acc");
    rep.heatmap("M", "").panel("", "runs.0.M");
  }
  const am_record *docs[2] = {a.r, b.r};
  const char *labels[2] = {"one", "two"};
  std::vector<std::string> files;
  auto collect = [](void *u, const char *n) { static_cast<std::vector<std::string> *>(u)->push_back(n); };
  REQUIRE(am_report_compare(nullptr, docs, labels, 2, t.path.c_str(), collect, &files) == AM_OK);
  CHECK(files == plot_files({"compare_acc.svg"}));
  std::vector<std::string> asked;
  am_report_plot_options po;
  am_report_plot_default_options(&po);
  po.formats = am_report_formats_available(), po.on_file = collect, po.user = &asked;
  REQUIRE(am_report_compare_with_options(nullptr, docs, labels, 2, t.path.c_str(), &po) == AM_OK);
  CHECK(asked == plot_files({"compare_acc.svg"}, am_report_formats_available()));
  const std::string s = slurp(t.path / "compare_acc.svg");
  CHECK(s.find(">one: theory</text>") != std::string::npos);
  CHECK(s.find(">two: theory</text>") != std::string::npos);
}

TEST_CASE("report: `attnmech plot` on a results directory written by v0.1 draws the plots v0.1 drew") {
  TempDir t("attnmech-report");
  const std::string fixture = std::string(REPORT_TESTS_DATA) + "/report/schema1";
  fs::create_directories(t.path / "old");
  fs::copy_file(fixture + "/results.json", t.path / "old" / "results.json");
  const std::string cmd = std::string("\"") + ATTNMECH_EXE + "\" plot \"" + (t.path / "old").string() + "\" > \"" +
                          (t.path / "out.txt").string() + "\" 2>&1";
  const int rc = std::system(cmd.c_str());
  REQUIRE_MESSAGE(WIFEXITED(rc), slurp(t.path / "out.txt"));
  REQUIRE_MESSAGE(WEXITSTATUS(rc) == 0, slurp(t.path / "out.txt"));
  std::set<std::string> expected, drawn;
  std::istringstream in(slurp(fixture + "/svgs_v0.1.txt"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) expected.insert(line);
  for (const auto &f : files_in(t.path / "old"))
    if (fs::path(f).extension() == ".svg") drawn.insert(f);
  CHECK(drawn == expected);
  const std::string acc = slurp(t.path / "old" / "accuracy_vs_width.svg");
  CHECK(acc.find("GP limit: good paths") != std::string::npos);  // the task_extras references of v0.1
}

TEST_CASE("report: tools/ names no plugin and no plugin-specific result key") {
  // Whole words for plugin names (".npy" files and am_npy_* are not the task). The npy task's directory
  // format is libcore's (am_problem_read/write, problem.h), so no file of tools/ needs to say npy.
  const std::vector<std::string> plugins = {"markov", "npy", "potts", "oneshot", "theory", "posterior",
                                            "pseudolikelihood", "vanilla", "replica"};
  const std::vector<std::string> keys = {"gp_test_accuracy", "head_scores", "alignment", "a_scan", "curves",
                                         "U_a", "full_accuracy", "lambda_curves"};
  const std::set<std::string> npy_format = {};
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t files = 0;
  for (const auto &e : fs::recursive_directory_iterator(TOOLS_SOURCE_DIR)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name.rfind("svg.", 0) == 0) continue;
    ++files;
    std::string text = slurp(e.path());
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto &w : plugins) {
      if (w == "npy" && npy_format.count(name)) continue;
      for (size_t p = text.find(w); p != std::string::npos; p = text.find(w, p + 1)) {
        const bool before = p > 0 && (word_char(text[p - 1]) || text[p - 1] == '.');
        const bool after = p + w.size() < text.size() && word_char(text[p + w.size()]);
        CHECK_MESSAGE((before || after), e.path().string() << " names the plugin '" << w << "'");
      }
    }
    for (const auto &k : keys) {
      std::string lk = k;
      std::transform(lk.begin(), lk.end(), lk.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      CHECK_MESSAGE(text.find(lk) == std::string::npos, e.path().string() << " names the result key '" << k << "'");
    }
  }
  CHECK(files >= 10);
}
