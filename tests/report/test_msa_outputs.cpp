// Tests of what a coevolution user reads from an alignment fit: the report spec's text files (couplings.txt in
// plmc's `-c` format, contacts.tsv), arrays written only as .npy files with references in results.json (and the
// refusal of references that point out of the results directory), the heat map overlay of the contact map, and
// the describe of the pseudolikelihood plugin on a hand-written alignment-fit document (the run keys of
// docs/msa.md, L = 6 sites, C = 21 states).
#include "../temp_dir.hpp"
#include <doctest/doctest.h>

#include <attnmech/attnmech.h>
#include <attnmech/registry.h>
#include <attnmech/report.h>
#include <attnmech/report_spec.hpp>
#include <attnmech/run.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include "../handles.hpp"

namespace fs = std::filesystem;

using am_test::Ctx;
using am_test::Rec;
using am_test::slurp;
using am_test::TempDir;

namespace {

size_t occurrences(const std::string &hay, const std::string &needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

void put_array(am_record *obj, const char *key, am_dtype t, std::vector<size_t> shape, const void *data, int fortran = 0) {
  const am_array_view v = am_array_view_make(t, static_cast<uint32_t>(shape.size()), shape.data(), fortran, data);
  REQUIRE(am_record_set_array(obj, key, &v) == AM_OK);
}

// ---------------------------------------------------------------- the hand-written alignment fit

// L = 6 focus sites numbered as plmc numbers them in focus mode (a skipped region between 5 and 9), C = 21
// (plmc's protein alphabet, gap = state 0), H = 2 heads.
constexpr size_t kL = 6, kC = 21, kH = 2;
const double kSites[kL] = {3, 4, 5, 9, 12, 20};
const char kFocus[] = "MKVLAT";

double score_of(size_t i, size_t j) {  // distinct, both signs (APC scores can be negative)
  return std::sin(1.7 * static_cast<double>(std::min(i, j)) + 2.3 * static_cast<double>(std::max(i, j)) + 0.5);
}

struct Fit {
  std::vector<double> h, J, A, V;
};

// The run record docs/msa.md lists, as the fit writes it: contacts sorted by score, descending.
Fit make_fit(am_record *doc) {
  am_record_set_string(doc, "task", "msa");
  am_record_set_string(doc, "estimator", "pseudolikelihood");
  am_record_set_number(doc, "seed", 0);
  am_record_set_string(doc, "status", "ok");
  am_record *run = am_record_append_object(am_record_list(doc, "runs"));
  am_record_set_string(run, "fit", "alignment");  // the run key that marks an alignment fit (docs/msa.md)
  for (auto kv : {std::make_pair("train_loss", 1.875), std::make_pair("test_loss", 2.125), std::make_pair("neff", 41.5),
                  std::make_pair("iterations", 37.0), std::make_pair("evaluations", 41.0), std::make_pair("fit_time_s", 0.25),
                  std::make_pair("heads", 2.0), std::make_pair("L", 6.0), std::make_pair("C", 21.0), std::make_pair("M", 50.0)})
    am_record_set_number(run, kv.first, kv.second);
  am_record_set_string(run, "stop_reason", "gradient below gtol");
  am_record_set_string(run, "model", "factored");
  am_record_set_vector(run, "site_numbers", kSites, kL);
  std::vector<double> scores(kL * kL, 0.0), fn(kL * kL, 0.0);
  for (size_t i = 0; i < kL; ++i)
    for (size_t j = 0; j < kL; ++j)
      if (i != j) scores[i * kL + j] = score_of(i, j), fn[i * kL + j] = score_of(i, j) + 1;
  put_array(run, "scores", AM_F64, {kL, kL}, scores.data());
  put_array(run, "fn", AM_F64, {kL, kL}, fn.data());
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < kL; ++i)
    for (size_t j = i + 1; j < kL; ++j) pairs.emplace_back(i, j);
  std::stable_sort(pairs.begin(), pairs.end(), [](auto a, auto b) { return score_of(a.first, a.second) > score_of(b.first, b.second); });
  am_record *c = am_record_object(run, "contacts");
  std::vector<double> ci, cj, ri, rj, sc, sep;
  for (auto p : pairs) {
    ci.push_back(kSites[p.first]), cj.push_back(kSites[p.second]);
    ri.push_back(kFocus[p.first]), rj.push_back(kFocus[p.second]);
    sc.push_back(score_of(p.first, p.second)), sep.push_back(kSites[p.second] - kSites[p.first]);
  }
  am_record_set_vector(c, "i", ci.data(), ci.size());
  am_record_set_vector(c, "j", cj.data(), cj.size());
  am_record_set_vector(c, "res_i", ri.data(), ri.size());
  am_record_set_vector(c, "res_j", rj.data(), rj.size());
  am_record_set_vector(c, "score", sc.data(), sc.size());
  am_record_set_vector(c, "separation", sep.data(), sep.size());
  Fit f;
  f.h.resize(kL * kC), f.J.resize(kL * kL * kC * kC), f.A.resize(kH * kL * kL), f.V.resize(kH * kC * kC);
  for (size_t k = 0; k < f.h.size(); ++k) f.h[k] = std::cos(0.37 * static_cast<double>(k));
  for (size_t k = 0; k < f.J.size(); ++k) f.J[k] = std::sin(0.011 * static_cast<double>(k)) / 3;
  for (size_t k = 0; k < f.A.size(); ++k) f.A[k] = static_cast<double>(k % 7) / 7;
  for (size_t k = 0; k < f.V.size(); ++k) f.V[k] = std::cos(0.05 * static_cast<double>(k));
  am_record *p = am_record_object(run, "params");
  put_array(p, "h", AM_F64, {kL, kC}, f.h.data());
  put_array(p, "J", AM_F64, {kL, kL, kC, kC}, f.J.data());
  put_array(p, "A", AM_F64, {kH, kL, kL}, f.A.data());
  put_array(p, "V", AM_F64, {kH, kC, kC}, f.V.data());
  am_record_set_string(run, "run_status", "ok");
  return f;
}

// plmc's couplings file for these scores, written here independently of the report library: plm.c prints
// "%d %c %d %c 0 %f\n" with the focus numbering and letters, for i < j in that order.
std::string plmc_couplings() {
  std::string out;
  char line[128];
  for (size_t i = 0; i < kL; ++i)
    for (size_t j = i + 1; j < kL; ++j) {
      std::snprintf(line, sizeof line, "%d %c %d %c 0 %f\n", static_cast<int>(kSites[i]), kFocus[i],
                    static_cast<int>(kSites[j]), kFocus[j], score_of(i, j));
      out += line;
    }
  return out;
}

struct Registry {
  am_registry *r = nullptr;
  Registry() {
    REQUIRE(am_registry_create(&r) == AM_OK);
    REQUIRE(am_registry_discover(nullptr, r, nullptr) == AM_OK);  // AM_PLUGIN_PATH: the build tree's plugins
  }
  ~Registry() { am_registry_destroy(&r); }
};

std::vector<double> npy_numbers(const fs::path &p, am_dtype *dtype = nullptr, std::vector<size_t> *shape = nullptr) {
  am_array *a = nullptr;
  REQUIRE(am_npy_read(nullptr, p.c_str(), &a) == AM_OK);
  const am_array_view v = am_array_get_view(a);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  if (dtype) *dtype = v.dtype;
  if (shape) shape->assign(v.shape, v.shape + v.ndim);
  am_array_destroy(&a);
  return out;
}

std::vector<double> record_numbers(const am_record *doc, std::initializer_list<const char *> path) {
  const am_record *n = doc;
  for (const char *k : path) n = std::isdigit(static_cast<unsigned char>(k[0])) ? am_record_at(n, std::strtoul(k, nullptr, 10)) : am_record_get(n, k);
  am_array_view v{};
  REQUIRE(am_record_array(n, &v) == AM_OK);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  return out;
}

void write_text(const fs::path &p, const std::string &s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

}  // namespace

TEST_CASE("msa outputs: describe + write give plmc's couplings.txt, a ranked contacts.tsv, params only as .npy") {
  TempDir t("attnmech-msa");
  Ctx ctx;
  Registry reg;
  Rec d;
  const Fit fit = make_fit(d.r);
  REQUIRE_MESSAGE(am_run_describe(ctx.c, reg.r, d.r) == AM_OK, ctx.err());
  const fs::path out = t.path / "D";
  REQUIRE_MESSAGE(am_report_write(ctx.c, d.r, out.c_str(), nullptr) == AM_OK, ctx.err());

  // couplings.txt: byte for byte what plm.c would print for these scores, and every line of its shape
  const std::string couplings = slurp(out / "couplings.txt");
  CHECK(couplings == plmc_couplings());
  const std::regex plmc_line(R"(-?\d+ [A-Z-] -?\d+ [A-Z-] 0 -?\d+\.\d{6})");
  size_t lines = 0;
  std::istringstream cs(couplings);
  for (std::string l; std::getline(cs, l); ++lines) CHECK_MESSAGE(std::regex_match(l, plmc_line), l);
  CHECK(lines == kL * (kL - 1) / 2);

  // contacts.tsv: a header, then the pairs ranked by score with |i - j|
  std::istringstream ts(slurp(out / "contacts.tsv"));
  std::string head, first;
  std::getline(ts, head);
  std::getline(ts, first);
  CHECK(head == "i\tres_i\tj\tres_j\tscore\tseparation");
  size_t bi = 0, bj = 1;  // the best pair, found here by a search over the matrix
  for (size_t i = 0; i < kL; ++i)
    for (size_t j = i + 1; j < kL; ++j)
      if (score_of(i, j) > score_of(bi, bj)) bi = i, bj = j;
  char want[128];
  std::snprintf(want, sizeof want, "%d\t%c\t%d\t%c\t%.6f\t%d", int(kSites[bi]), kFocus[bi], int(kSites[bj]), kFocus[bj],
                score_of(bi, bj), int(kSites[bj] - kSites[bi]));
  CHECK(first == want);

  // params: only .npy files; results.json holds references and no number of J
  const std::string json = slurp(out / "results.json");
  CHECK(json.find("\"npy_file\": \"runs.0.params.J.npy\"") != std::string::npos);
  CHECK(json.find("\"shape\": [6,6,21,21]") != std::string::npos);
  CHECK(json.size() < 20000);  // J alone would be 15876 numbers
  am_dtype dt{};
  std::vector<size_t> shape;
  CHECK(npy_numbers(out / "runs.0.params.J.npy", &dt, &shape) == fit.J);
  CHECK(dt == AM_F64);
  CHECK(shape == std::vector<size_t>{kL, kL, kC, kC});
  CHECK(npy_numbers(out / "runs.0.params.h.npy") == fit.h);
  CHECK(npy_numbers(out / "runs.0.params.A.npy") == fit.A);
  CHECK(npy_numbers(out / "runs.0.params.V.npy") == fit.V);

  // read back: the references resolve to the same bits
  am_record *back = nullptr;
  REQUIRE_MESSAGE(am_report_read(ctx.c, out.c_str(), &back) == AM_OK, ctx.err());
  CHECK(record_numbers(back, {"runs", "0", "params", "J"}) == fit.J);
  CHECK(record_numbers(back, {"runs", "0", "params", "V"}) == fit.V);
  am_record_destroy(&back);

  // the contact map: the top L = 6 of the 9 pairs with |i - j| >= 6 as rings below the diagonal, plus the legend's
  const std::string svg = slurp(out / "contact_map.svg");
  CHECK(occurrences(svg, "<circle") == kL + 1);
  CHECK(svg.find("top 6 pairs with |i \u2212 j| \u2265 6") != std::string::npos);
  CHECK(svg.find(">20</text>") != std::string::npos);  // site numbers on the axes
}

TEST_CASE("msa outputs: the summary shows the fit and the top 10 contacts with |i - j| >= 6, letters as letters") {
  Ctx ctx;
  Registry reg;
  Rec d;
  make_fit(d.r);
  REQUIRE_MESSAGE(am_run_describe(ctx.c, reg.r, d.r) == AM_OK, ctx.err());
  char *text = nullptr;
  REQUIRE(am_report_summary(ctx.c, d.r, &text) == AM_OK);
  const std::string s = text;
  am_free(text);
  for (const char *want : {"Neff", "41.5", "gradient below gtol", "1.87500", "2.12500", "top 10 contacts"})
    CHECK_MESSAGE(s.find(want) != std::string::npos, want);
  // the table lists exactly the 9 pairs with |i - j| >= 6 (fewer than 10), each once, with its letters
  const size_t at = s.find("top 10 contacts");
  const std::string table = s.substr(at, s.find("\n\n", at) == std::string::npos ? std::string::npos : s.find("\n\n", at) - at);
  CHECK(occurrences(table, "\n") == 1 + 1 + 9);  // title, header, rows
  CHECK(table.find("3  M") != std::string::npos);  // site 3 is the focus letter M
  CHECK(table.find("20  T") != std::string::npos);
}

TEST_CASE("msa outputs: a potts-task document is described as before (no files, no npy_only, no contact map)") {
  Ctx ctx;
  Registry reg;
  Rec d;
  am_record_set_string(d.r, "task", "potts");
  am_record_set_string(d.r, "estimator", "pseudolikelihood");
  am_record *run = am_record_append_object(am_record_list(d.r, "runs"));
  const double A[4] = {0, 1, 1, 0};
  put_array(run, "A", AM_F64, {2, 2}, A);
  REQUIRE(am_run_describe(ctx.c, reg.r, d.r) == AM_OK);
  const am_record *rep = am_record_get(d.r, "report");
  CHECK(am_record_get(rep, "files") == nullptr);
  CHECK(am_record_get(rep, "npy_only") == nullptr);
}

TEST_CASE("report files: formats, %c, constant columns, where/sort_by/limit, separators, header") {
  TempDir t("attnmech-files");
  Ctx ctx;
  Rec d;
  const double i[4] = {7, 2, 2, 9}, j[4] = {8, 5, 3, 11}, letter[4] = {'A', '-', 200, 'w'}, s[4] = {0.5, -1.25, NAN, 3};
  am_record *c = am_record_object(d.r, "c");
  am_record_set_vector(c, "i", i, 4);
  am_record_set_vector(c, "j", j, 4);
  am_record_set_vector(c, "letter", letter, 4);
  am_record_set_vector(c, "s", s, 4);
  am_record *names = am_record_list(c, "name");
  for (const char *n : {"a", "b c", "d", "e"}) am_record_append_string(names, n);
  am::spec::Report rep(am_record_object(d.r, "report"));
  rep.file("plain.txt").column("", "c.i", "%d").column("", "c.letter", "%c").column("", "=0", "%d").column("", "c.s", "%f");
  rep.file("sorted.txt").strings("sort_by", {"c.i", "c.j"}).column("", "c.i", "%d").column("", "c.j", "%d");
  rep.file("picked.tsv", "\t").flag("header", true).num("limit", 1).column("name", "c.name", "[%s]").column("x", "c.s", "%.2e")
      .object("where").str("path", "c.j").num("min", 4);
  rep.file("defaults.csv", ",").column("", "c.s", "%n").column("", "c.letter", "%5c|");  // %n is no number format
  rep.file("ragged.txt").column("", "c.i", "%d").column("", "c.i.0:2", "%d");  // 4 and 2 rows: skipped
  rep.file("nothing.txt").column("", "c.nope", "%d");                           // does not resolve: skipped
  REQUIRE(rep.status() == AM_OK);
  std::vector<std::string> written;
  am_report_write_options o = AM_REPORT_WRITE_OPTIONS_INIT;
  o.on_file = [](void *u, const char *n) { static_cast<std::vector<std::string> *>(u)->push_back(n); };
  o.user = &written;
  REQUIRE_MESSAGE(am_report_write(ctx.c, d.r, (t.path / "R").c_str(), &o) == AM_OK, ctx.err());
  CHECK(written == std::vector<std::string>{"results.json", "plain.txt", "sorted.txt", "picked.tsv", "defaults.csv"});
  CHECK(slurp(t.path / "R/plain.txt") == "7 A 0 0.500000\n2 - 0 -1.250000\n2 ? 0 nan\n9 w 0 3.000000\n");
  CHECK(slurp(t.path / "R/sorted.txt") == "2 3\n2 5\n7 8\n9 11\n");  // by i, then j
  CHECK(slurp(t.path / "R/picked.tsv") == "name\tx\n[a]\t5.00e-01\n");   // j >= 4: rows 0, 1, 3; the first
  CHECK(slurp(t.path / "R/defaults.csv") == "0.5,    A|\n-1.25,    -|\nnan,    ?|\n3,    w|\n");
}

TEST_CASE("report files: names that break the rule or name the directory's own files are refused") {
  TempDir t("attnmech-files");
  for (const char *bad : {"../x.txt", "a/b.txt", "/tmp/x.txt", ".hidden", "", "results.json", "x.npy", "plot.svg"}) {
    CAPTURE(bad);
    Ctx ctx;
    Rec d;
    const double v[2] = {1, 2};
    am_record_set_vector(d.r, "v", v, 2);
    am::spec::Report rep(am_record_object(d.r, "report"));
    rep.file(bad).column("", "v", "%d");
    const fs::path out = t.path / "R";
    CHECK(am_report_write(ctx.c, d.r, out.c_str(), nullptr) == AM_ERR_FORMAT);
    CHECK(ctx.err().find("report.files.0: invalid file name") != std::string::npos);
    CHECK_FALSE(fs::exists(out));  // nothing written: the directory is made whole or not at all
    CHECK_FALSE(fs::exists(t.path / "x.txt"));
  }
}

TEST_CASE("npy-only: arrays become references in results.json and --json, and read back bit for bit") {
  TempDir t("attnmech-npyonly");
  Ctx ctx;
  Rec d;
  am_record *runs = am_record_list(d.r, "runs");
  const int32_t ints[3] = {-1, 7, 2147483647};
  const double f[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 1e-300};  // Fortran order: element (1, 0) is 0.2
  const double one = 2.5;
  for (int r = 0; r < 2; ++r) {
    am_record *p = am_record_object(am_record_append_object(runs), "params");
    put_array(p, "tiny", AM_I32, {3}, ints);             // below npy_min_elements: written because it is npy-only
    put_array(p, "fortran", AM_F64, {2, 3}, f, 1);
    put_array(p, "scalar", AM_F64, {}, &one);
    am_record_set_number(p, "count", 3);                  // not an array: stays in results.json
    const size_t two = 2;
    const am_array_view pair = am_array_view_make(AM_F64, 1, &two, 0, f);
    REQUIRE(am_record_append_array(am_record_list(p, "list"), &pair) == AM_OK);
  }
  put_array(d.r, "kept", AM_F64, {2}, f);  // not under an npy_only path: inline
  am::spec::Report rep(am_record_object(d.r, "report"));
  rep.npy_only("runs.*.params");
  REQUIRE(rep.status() == AM_OK);
  const fs::path out = t.path / "R";
  REQUIRE_MESSAGE(am_report_write(ctx.c, d.r, out.c_str(), nullptr) == AM_OK, ctx.err());
  const std::string json = slurp(out / "results.json");
  CHECK(json.find("\"tiny\": {\n     \"npy_file\": \"runs.1.params.tiny.npy\",\n     \"shape\": [3],\n     \"dtype\": \"<i4\"") !=
        std::string::npos);
  CHECK(json.find("\"npy_file\": \"runs.0.params.list.0.npy\"") != std::string::npos);
  CHECK(json.find("\"scalar\": {\n     \"npy_file\": \"runs.0.params.scalar.npy\",\n     \"shape\": [],") != std::string::npos);
  CHECK(json.find("\"count\": 3") != std::string::npos);
  CHECK(json.find("\"kept\": [0.1,0.2]") != std::string::npos);
  char *text = nullptr;  // `attnmech run --json` prints the same text
  REQUIRE(am_report_json(ctx.c, d.r, &text) == AM_OK);
  CHECK(json == text);
  am_free(text);
  am_record *back = nullptr;
  REQUIRE_MESSAGE(am_report_read(ctx.c, (out / "results.json").c_str(), &back) == AM_OK, ctx.err());
  const am_record *p = am_record_get(am_record_at(am_record_get(back, "runs"), 1), "params");
  am_array_view v{};
  REQUIRE(am_record_array(am_record_get(p, "tiny"), &v) == AM_OK);
  CHECK(v.dtype == AM_I32);
  CHECK(std::memcmp(v.data, ints, sizeof ints) == 0);
  REQUIRE(am_record_array(am_record_get(p, "fortran"), &v) == AM_OK);
  CHECK(v.fortran_order == 1);
  CHECK(std::memcmp(v.data, f, sizeof f) == 0);
  REQUIRE(am_record_array(am_record_get(p, "scalar"), &v) == AM_OK);
  CHECK(v.ndim == 0);
  CHECK(*static_cast<const double *>(v.data) == 2.5);
  REQUIRE(am_record_array(am_record_at(am_record_get(p, "list"), 0), &v) == AM_OK);
  CHECK(v.shape[0] == 2);
  // written again from what was read: the same directory text
  const fs::path again = t.path / "R2";
  REQUIRE_MESSAGE(am_report_write(ctx.c, back, again.c_str(), nullptr) == AM_OK, ctx.err());
  CHECK(slurp(again / "results.json") == json);
  am_record_destroy(&back);
}

TEST_CASE("npy references: a crafted reference never reads outside the results directory") {
  TempDir t("attnmech-npyref");
  const fs::path dir = t.path / "R";
  fs::create_directories(dir / "sub");
  const double v[2] = {1, 2};
  const size_t two = 2;
  const am_array_view view = am_array_view_make(AM_F64, 1, &two, 0, v);
  for (const fs::path &p : {t.path / "outside.npy", dir / "sub" / "a.npy", dir / "ok.npy"})
    REQUIRE(am_npy_write(nullptr, p.c_str(), &view) == AM_OK);
  fs::create_symlink(t.path / "outside.npy", dir / "link.npy");
  auto ref = [](const std::string &npy, const std::string &shape = "[2]", const std::string &dtype = "\"<f8\"") {
    return "{\"run\": {\"x\": {\"npy_file\": " + npy + ", \"shape\": " + shape + ", \"dtype\": " + dtype + "}}}";
  };
  struct Case {
    std::string doc;
    am_status status;
    const char *message;
  };
  const Case cases[] = {
      {ref("\"../outside.npy\""), AM_ERR_FORMAT, "starts with '.'"},
      {ref("\"" + (t.path / "outside.npy").string() + "\""), AM_ERR_FORMAT, "holds '/'"},
      {ref("\"sub/a.npy\""), AM_ERR_FORMAT, "holds '/'"},
      {ref("\"..\""), AM_ERR_FORMAT, "starts with '.'"},
      {ref("\"link.npy\""), AM_ERR_FORMAT, "is a symbolic link"},
      {ref("\"sub\""), AM_ERR_FORMAT, "not a .npy file name"},
      {ref("\"missing.npy\""), AM_ERR_IO, "cannot be read"},
      {ref("\"ok.npy\"", "[3]"), AM_ERR_FORMAT, "the reference says <f8 [3]"},
      {ref("\"ok.npy\"", "[2]", "\"<i4\""), AM_ERR_FORMAT, "holds <f8 [2]"},
      {ref("\"ok.npy\"", "[-2]"), AM_ERR_FORMAT, "\"shape\" holds -2"},
      {ref("\"ok.npy\"", "\"2\""), AM_ERR_FORMAT, "not a list"},
      {ref("7"), AM_ERR_FORMAT, "are strings"},
      {ref("\"ok.npy\""), AM_OK, ""},
      {"{\"l\": [" + ref("\"a/../../outside.npy\"") + "]}", AM_ERR_FORMAT, "l.0.run.x: not a valid .npy reference"},
  };
  for (const auto &c : cases) {
    CAPTURE(c.doc);
    write_text(dir / "results.json", c.doc);
    Ctx ctx;
    am_record *doc = nullptr;
    CHECK(am_report_read(ctx.c, dir.c_str(), &doc) == c.status);
    CHECK(ctx.err().find(c.message) != std::string::npos);
    if (c.status != AM_OK) {
      CHECK(doc == nullptr);
      CHECK(ctx.err().find("x: ") != std::string::npos);  // the message names the key
    } else {
      am_array_view a{};
      REQUIRE(am_record_array(am_record_get(am_record_get(doc, "run"), "x"), &a) == AM_OK);
      CHECK(static_cast<const double *>(a.data)[1] == 2.0);
    }
    am_record_destroy(&doc);
  }
}

TEST_CASE("heat map overlay: marks at label coordinates, filtered and limited; upper triangle; legend") {
  TempDir t("attnmech-overlay");
  Ctx ctx;
  Rec d;
  std::vector<double> m(16);
  std::iota(m.begin(), m.end(), 0.0);
  put_array(d.r, "m", AM_F64, {4, 4}, m.data());
  const double labels[4] = {10, 11, 15, 30};
  am_record_set_vector(d.r, "labels", labels, 4);
  // points (x, y) in label units; (10, 30) is filtered out by w, the limit keeps the first three of the rest, and
  // of these (12, 30) matches no column
  const double x[6] = {10, 12, 11, 10, 15, 10}, y[6] = {11, 30, 15, 30, 30, 15}, w[6] = {1, 1, 1, 0, 1, 1};
  am_record_set_vector(d.r, "x", x, 6);
  am_record_set_vector(d.r, "y", y, 6);
  am_record_set_vector(d.r, "w", w, 6);
  am::spec::Report rep(am_record_object(d.r, "report"));
  am::spec::Node h = rep.heatmap("map", "", "sequential");
  h.panel("", "m");
  h.labels("labels", "labels").str("triangle", "upper").flag("annotate", false);
  am::spec::Node o = h.overlay("marked <pairs>", "x", "y").num("limit", 3);
  o.object("where").str("path", "w").num("min", 1);
  am::spec::Node plain = rep.heatmap("plain", "", "sequential");
  plain.panel("", "m");
  REQUIRE(rep.status() == AM_OK);
  REQUIRE_MESSAGE(am_report_plot(ctx.c, d.r, t.path.c_str(), nullptr, nullptr) == AM_OK, ctx.err());
  const std::string svg = slurp(t.path / "map.svg"), ref = slurp(t.path / "plain.svg");
  CHECK(occurrences(svg, "<circle") == 2 + 1);  // (10, 11), (11, 15) and the legend's
  CHECK(svg.find(">marked &lt;pairs&gt;</text>") != std::string::npos);
  CHECK(occurrences(ref, "<rect") - occurrences(svg, "<rect") == 6);  // the 6 cells below the diagonal are blank
  CHECK(occurrences(ref, "<circle") == 0);
  // (x = 10, y = 11) is column 0, row 1: its ring sits at the centre of that cell, left of and below the first
  const size_t c1 = svg.find("<circle cx=\""), c2 = svg.find("<circle cx=\"", c1 + 1);
  CHECK(std::stod(svg.substr(c1 + 12)) < std::stod(svg.substr(c2 + 12)));
}

TEST_CASE("heat map clip_quantile: the colour scale ends at the quantile, an outlier no longer darkens the rest") {
  TempDir t("attnmech-clip");
  Ctx ctx;
  Rec d;
  std::vector<double> m(16);
  std::iota(m.begin(), m.end(), 0.0);
  m[15] = 1000;  // one outlier
  put_array(d.r, "m", AM_F64, {4, 4}, m.data());
  am::spec::Report rep(am_record_object(d.r, "report"));
  for (const char *name : {"clipped", "full"}) {
    am::spec::Node h = rep.heatmap(name, "", "sequential");
    h.panel("", "m");
    h.flag("annotate", false);
    if (std::string(name) == "clipped") h.num("clip_quantile", 0.8);  // the 0.8-quantile of 16 values: 12 (index 12 of 0..15)
  }
  REQUIRE(rep.status() == AM_OK);
  REQUIRE_MESSAGE(am_report_plot(ctx.c, d.r, t.path.c_str(), nullptr, nullptr) == AM_OK, ctx.err());
  const std::string top = "fill=\"#fde725\"";  // the end of the sequential scale; the colour bar's steps stop short of it
  CHECK(occurrences(slurp(t.path / "clipped.svg"), top) == 4);  // 12, 13, 14 and 1000
  CHECK(occurrences(slurp(t.path / "full.svg"), top) == 1);     // 1000 alone
}
