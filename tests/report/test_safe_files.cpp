// Issue 23 items 2, 5 and 8: every name that becomes a path obeys the one safe-name rule (libcore/src/safe_file.hpp);
// the results writer writes nothing outside its directory whatever the record keys; files in shared directories are
// never written through a planted symlink; leftovers of killed writers (.tmp-/.old-) are removed when their process
// is gone, never through a symlink.
#include "../temp_dir.hpp"
#include <doctest/doctest.h>

#include <attnmech/attnmech.h>
#include <attnmech/report.h>
#include <attnmech/report_spec.hpp>
#include <common/safe_file.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

using am_test::slurp;
using am_test::dead_pid;
using am_test::TempDir;

namespace {

// Every path under `root` (recursive, links not followed), relative.
std::set<std::string> tree(const fs::path &root) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
    out.insert(fs::relative(it->path(), root).string());
  return out;
}


}  // namespace

TEST_CASE("safe names: the one rule refuses path syntax, encode_name maps any key onto it") {
  using namespace am::files;
  for (const char *ok : {"a", "results", "x.npy", "U.0", "compare_a+b", "k%2F", "A-1_b.c"}) CHECK_MESSAGE(safe_name(ok), ok);
  const std::string nul("a\0b", 3);
  for (const std::string &bad : std::vector<std::string>{"", ".", "..", "../x", "/abs", "a/b", ".hidden", "-rf", "a b",
                                                         "α", nul, std::string(201, 'a')})
    CHECK_MESSAGE(!safe_name(bad), bad);
  CHECK(name_problem("a/b").find("'/'") != std::string::npos);
  CHECK(name_problem(nul).find("byte 0x00") != std::string::npos);
  CHECK(name_problem("..") == "starts with '.'");
  CHECK(name_problem(std::string(201, 'a')) == "longer than 200 bytes");
  // encode_name: always safe (with room for a suffix), distinct for distinct keys, the plain ones unchanged.
  CHECK(encode_name("runs.0.trace") == "runs.0.trace");
  CHECK(encode_name("../../x") == "%2E.%2F..%2Fx");
  CHECK(encode_name("/abs") == "%2Fabs");
  CHECK(encode_name("-x") == "%2Dx");
  CHECK(encode_name("%2F") == "%252F");  // '%' is escaped, so "%2F" and "/" differ
  CHECK(encode_name("") == "%");
  std::set<std::string> seen;
  const std::vector<std::string> keys = {"../../x", "/abs", "a/b", "..", ".", "%2E.%2F..%2Fx", "α", "a b", "%",
                                         std::string(10240, 'k'), std::string(10240, 'k') + "x", std::string(300, '/'),
                                         std::string(196, 'a') + "/"};
  for (const auto &k : keys) {
    const std::string e = encode_name(k, 4);
    CHECK_MESSAGE(safe_name(e + ".npy"), e);
    CHECK(seen.insert(e).second);
  }
}

TEST_CASE("report: hostile record keys become file names inside the results directory, never paths out of it") {
  // A results.json of someone else's (am.load(H).save("out") in Python, `attnmech plot`, am_report_write): keys
  // "../../x" used to write ../x.npy beside out/. Now every array is exported under an encoded name inside out/.
  TempDir t("attnmech-safe");
  const fs::path base = t.path / "a" / "b", out = base / "out";
  fs::create_directories(base);
  std::string doc = R"({"status": "ok", "task": "t", "estimator": "e")";
  const std::string arr = "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]";
  const std::vector<std::string> keys = {"../../x", "/abs", "a/b", "..", ".", "\\u0000/../../nul", "\\u03b1",
                                         std::string(10240, 'k'), "-rf", ".hidden"};
  for (const auto &k : keys) doc += ",\n \"" + k + "\": " + arr;
  doc += ",\n \"nested\": {\"../../../y\": " + arr + ", \"..\": {\"..\": " + arr + "}}}";
  std::ofstream(t.path / "in.json") << doc;
  const std::set<std::string> before_t = tree(t.path);
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_record *rec = nullptr;
  REQUIRE_MESSAGE(am_report_read(ctx, (t.path / "in.json").c_str(), &rec) == AM_OK, am_context_last_error(ctx));
  REQUIRE_MESSAGE(am_report_write(ctx, rec, out.c_str(), nullptr) == AM_OK, am_context_last_error(ctx));
  // Nothing appeared anywhere under the temporary root except out/ and its files.
  std::set<std::string> added;
  for (const auto &p : tree(t.path))
    if (!before_t.count(p)) added.insert(p);
  std::set<std::string> in_out;
  for (const auto &p : added) {
    CHECK_MESSAGE(p.rfind("a/b/out", 0) == 0, p);
    if (p.rfind("a/b/out/", 0) == 0) in_out.insert(p.substr(8));
  }
  // One .npy per array (10 top-level keys + 2 nested) + results.json, each a flat safe name.
  CHECK(in_out.size() == 13);
  for (const auto &f : in_out) CHECK_MESSAGE(am::files::safe_name(f), f);
  CHECK(in_out.count("%2E.%2F..%2Fx.npy"));
  CHECK(in_out.count("%2Fabs.npy"));
  CHECK(in_out.count("a%2Fb.npy"));
  CHECK(in_out.count(std::string("nested") + "." + ".." + "." + ".." + ".npy"));  // a file name, not a way up
  CHECK(in_out.count("%2Drf.npy"));
  CHECK(in_out.count("%CE%B1.npy"));
  CHECK(!fs::exists(t.path / "a" / "x.npy"));
  CHECK(!fs::exists("/abs.npy"));
  // The arrays are intact and results.json reads back.
  am_array *a = nullptr;
  REQUIRE(am_npy_read(ctx, (out / "%2E.%2F..%2Fx.npy").c_str(), &a) == AM_OK);
  const am_array_view v = am_array_get_view(a);
  CHECK(am_array_view_count(&v) == 16);
  am_array_destroy(&a);
  am_record *back = nullptr;
  CHECK(am_report_read(ctx, out.c_str(), &back) == AM_OK);
  am_record_destroy(&back);
  am_record_destroy(&rec);
  am_context_destroy(&ctx);
}

TEST_CASE("report: plot names break the rule → refused with the reason; plots never write through a planted symlink") {
  TempDir t("attnmech-safe");
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  fs::create_directories(t.path / "p");
  for (const std::string &bad : std::vector<std::string>{"../x", "/abs", "..", std::string(300, 'p'), "-x"}) {
    am_record *doc = nullptr;
    REQUIRE(am_record_create(&doc) == AM_OK);
    double xs[3] = {1, 2, 3};
    am_record_set_vector(doc, "x", xs, 3);
    am::spec::Report rep(am_record_object(doc, "report"));
    rep.lines(bad.c_str(), "", "x", "y").series("s", "x", "x");
    REQUIRE(rep.status() == AM_OK);
    CHECK(am_report_plot(ctx, doc, (t.path / "p").c_str(), nullptr, nullptr) == AM_ERR_FORMAT);
    const std::string err = am_context_last_error(ctx);
    CHECK_MESSAGE(err.find("invalid file name") != std::string::npos, err);
    CHECK(!fs::exists(t.path / "x.svg"));
    am_record_destroy(&doc);
  }
  // `attnmech plot DIR` draws into DIR, which others may write: a symlink planted at the SVG's name is replaced,
  // the file it names is not written.
  std::ofstream(t.path / "victim") << "precious";
  fs::create_symlink(t.path / "victim", t.path / "p" / "ok.svg");
  am_record *doc = nullptr;
  REQUIRE(am_record_create(&doc) == AM_OK);
  double xs[3] = {1, 2, 3};
  am_record_set_vector(doc, "x", xs, 3);
  am::spec::Report rep(am_record_object(doc, "report"));
  rep.lines("ok", "", "x", "y").series("s", "x", "x");
  REQUIRE(am_report_plot(ctx, doc, (t.path / "p").c_str(), nullptr, nullptr) == AM_OK);
  CHECK(slurp(t.path / "victim") == "precious");
  CHECK(!fs::is_symlink(t.path / "p" / "ok.svg"));
  CHECK(slurp(t.path / "p" / "ok.svg").find("<svg") != std::string::npos);
  am_record_destroy(&doc);
  am_context_destroy(&ctx);
}

TEST_CASE("report: stale .tmp-/.old- leftovers of a dead writer are removed, live ones and symlinks are not") {
  // A writer killed by SIGKILL leaves <out>.tmp-<pid>.<host>-XXXXXX beside the target; the next write into that
  // parent removes it once its process is gone. Symlinks of the pattern and anything they name are left alone;
  // so are leftovers of live processes, of other hosts and names not of the pattern.
  TempDir t("attnmech-safe");
  const std::string tag = am::files::owner_tag(), host = tag.substr(tag.find('.'));
  const std::string dead = std::to_string(dead_pid()) + host;
  const fs::path stale_dir = t.path / ("out.tmp-" + dead + "-Ab12Cd"), stale_old = t.path / ("x.old-" + dead + "-zzzzzz"),
                 stale_file = t.path / ("point.json.tmp-" + dead + "-qwerty"),
                 live = t.path / ("out.tmp-" + tag + "-LIVE00"),
                 other_host = t.path / ("out.tmp-" + std::to_string(dead_pid()) + ".00000000-abcdef"),
                 link = t.path / ("link.tmp-" + dead + "-symlnk"), plain = t.path / "out.tmp-keep";
  fs::create_directories(stale_dir / "sub");
  fs::create_directories(stale_old);
  fs::create_directories(live);
  fs::create_directories(other_host);
  fs::create_directories(plain);
  fs::create_directories(t.path / "victim");
  std::ofstream(t.path / "victim" / "data") << "precious";
  fs::create_directory_symlink(t.path / "victim", stale_dir / "sub" / "into-victim");  // inside: not followed
  fs::create_directory_symlink(t.path / "victim", link);
  std::ofstream(stale_file) << "half";
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_record *doc = nullptr;
  REQUIRE(am_record_create(&doc) == AM_OK);
  am_record_set_string(doc, "status", "ok");
  REQUIRE(am_report_write(ctx, doc, (t.path / "out").c_str(), nullptr) == AM_OK);
  CHECK(!fs::exists(stale_dir));
  CHECK(!fs::exists(stale_old));
  CHECK(!fs::exists(stale_file));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other_host));
  CHECK(fs::exists(plain));
  CHECK(fs::is_symlink(link));
  CHECK(slurp(t.path / "victim" / "data") == "precious");
  am_record_destroy(&doc);
  am_context_destroy(&ctx);
}

TEST_CASE("report: a plot's .tmp- file left by a killed `attnmech plot` is removed by the next write there") {
  // Issue 37 item 8: `plot` writes each SVG (PDF, PNG) as a mkstemp file renamed over the name; SIGTERM or SIGKILL
  // between the two left <plot>.svg.tmp-<pid>.<host>-XXXXXX in the results directory for good.
  TempDir t("attnmech-safe");
  const std::string tag = am::files::owner_tag(), host = tag.substr(tag.find('.'));
  const fs::path stale = t.path / ("acc.svg.tmp-" + std::to_string(dead_pid()) + host + "-Xy12Zw"),
                 live = t.path / ("acc.svg.tmp-" + tag + "-LiVe12");
  std::ofstream(stale) << "<svg half";
  std::ofstream(live) << "<svg being written";
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_record *doc = nullptr;
  REQUIRE(am_record_create(&doc) == AM_OK);
  double xs[3] = {1, 2, 3};
  am_record_set_vector(doc, "x", xs, 3);
  am::spec::Report rep(am_record_object(doc, "report"));
  rep.lines("acc", "", "x", "y").series("s", "x", "x");
  REQUIRE(am_report_plot(ctx, doc, t.path.c_str(), nullptr, nullptr) == AM_OK);
  CHECK(fs::exists(t.path / "acc.svg"));
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(live));  // this process's: not stale
  am_record_destroy(&doc);
  am_context_destroy(&ctx);
}

TEST_CASE("files: create_new refuses a planted symlink; write_atomic replaces it without writing through it") {
  TempDir t("attnmech-safe");
  std::ofstream(t.path / "victim") << "precious";
  fs::create_symlink(t.path / "victim", t.path / "claim");
  errno = 0;
  CHECK(am::files::create_new((t.path / "claim").string()) == -1);
  CHECK(errno == EEXIST);
  CHECK(am::files::write_atomic((t.path / "claim").string(), "mine") == "");
  CHECK(slurp(t.path / "victim") == "precious");
  CHECK(!fs::is_symlink(t.path / "claim"));
  CHECK(slurp(t.path / "claim") == "mine");
  const int fd = am::files::create_new((t.path / "new").string());
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
}
