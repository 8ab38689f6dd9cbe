// The streaming results.json writer (tools/report/emit.cpp) against the 3.2 DOM serialiser (dom_oracle.hpp) on
// random records, and the results directory it writes: arrays of >= npy_min_elements elements only as .npy files
// (results.json holds references), read back by am_report_read; a 3.2 document (arrays inline) still read.
#include <doctest/doctest.h>

#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <common/safe_file.hpp>  // encode_name: the .npy names of the dotted paths (white box)

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../handles.hpp"
#include "report_text.hpp"
#include "dom_oracle.hpp"

using am_test::Rec;
using am_test::text_of;

namespace {

std::string slurp(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Random records: every node type, arrays of every dtype, order and rank (0-d, zero-length dimensions, 1..17
// elements a side so that some cross 16), lists of arrays and of lists, strings that need escapes. `round_trip`
// keeps to what results.json reads back as it was written (no booleans in lists, no list of lists of scalars,
// no 0-d or empty arrays: JSON cannot tell them from numbers and lists).
struct Gen {
  std::mt19937_64 rng;
  bool round_trip = false;
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
  double number() {
    switch (pick(8)) {
      case 0: return std::numeric_limits<double>::quiet_NaN();
      case 1: return pick(2) ? INFINITY : -INFINITY;
      case 2: return static_cast<double>(static_cast<int64_t>(pick(2000)) - 1000);
      case 3: return 9007199254740992.0 * (pick(2) ? 1 : -1);
      case 4: return -0.0;
      case 5: return std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(pick(600)) - 300);
      default: return std::uniform_real_distribution<double>(-10, 10)(rng);
    }
  }
  std::string str() {
    const char *parts[] = {"a", "\"q\"", "\\", "\n", "\xc3\xa9", "N = 10", "", "\t", "../x"};
    std::string s;
    for (size_t i = pick(4); i > 0; --i) s += parts[pick(9)];
    return s;
  }
  void array(am_record *obj, const char *key, am_record *list) {
    am_array_view v{};
    const am_dtype types[] = {AM_F64, AM_F32, AM_I64, AM_I32};
    v.dtype = types[pick(4)];
    v.ndim = static_cast<uint32_t>(round_trip ? 1 + pick(3) : pick(4));
    size_t n = 1;
    for (uint32_t d = 0; d < v.ndim; ++d) {
      v.shape[d] = round_trip ? 1 + pick(17) : pick(18);
      n *= v.shape[d];
    }
    v.fortran_order = static_cast<int>(pick(2));
    std::vector<double> f(n);
    std::vector<float> s(n);
    std::vector<int64_t> l(n);
    std::vector<int32_t> i(n);
    for (size_t k = 0; k < n; ++k) {
      double x = number();
      if (v.dtype == AM_I64 || v.dtype == AM_I32) x = std::isfinite(x) ? std::fmod(std::trunc(x), 1e6) : 7;
      f[k] = x, s[k] = static_cast<float>(x), l[k] = static_cast<int64_t>(x), i[k] = static_cast<int32_t>(x);
    }
    v.data = v.dtype == AM_F64 ? static_cast<void *>(f.data()) : v.dtype == AM_F32 ? static_cast<void *>(s.data())
             : v.dtype == AM_I64 ? static_cast<void *>(l.data()) : static_cast<void *>(i.data());
    REQUIRE((list ? am_record_append_array(list, &v) : am_record_set_array(obj, key, &v)) == AM_OK);
  }
  void into_list(am_record *l, int depth) {
    for (size_t k = pick(5); k > 0; --k) switch (pick(depth > 3 ? 3 : 5)) {
        case 0: am_record_append_number(l, number()); break;
        case 1: am_record_append_string(l, str().c_str()); break;
        case 2: array(nullptr, nullptr, l); break;
        default: object(am_record_append_object(l), depth + 1);
      }
  }
  void object(am_record *o, int depth) {
    for (size_t k = pick(7); k > 0; --k) {
      const std::string key = pick(4) ? "k" + std::to_string(k) : str() + std::to_string(k);
      const char *c = key.c_str();
      switch (pick(depth > 3 ? 6 : 8)) {
        case 0: am_record_set_number(o, c, number()); break;
        case 1: am_record_set_string(o, c, str().c_str()); break;
        case 2: am_record_set_bool(o, c, static_cast<int>(pick(2))); break;
        case 3: am_record_set_null(o, c); break;
        case 4:
        case 5: array(o, c, nullptr); break;
        case 6: object(am_record_object(o, c), depth + 1); break;
        default: {
          am_record *l = am_record_list(o, c);
          if (round_trip) {
            for (size_t i = pick(3); i > 0; --i) object(am_record_append_object(l), depth + 1);
          } else {
            into_list(l, depth + 1);
          }
        }
      }
    }
  }
};

// The arrays results.json refers to: those of >= min elements, named by their dotted path.
void refs_of(const am_record *n, const std::string &path, size_t min, dom_oracle::Refs *out) {
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) {
    am_array_view v{};
    if (am_record_array(n, &v) == AM_OK && am_array_view_count(&v) >= min)
      (*out)[n] = am::files::encode_name(path, 4) + ".npy";
    return;
  }
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *key = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
    const std::string name = key ? std::string(key) : std::to_string(i);
    refs_of(am_record_at(n, i), path.empty() ? name : path + "." + name, min, out);
  }
}

std::vector<double> values(const am_array_view &v) {
  std::vector<double> x(am_array_view_count(&v));
  if (!x.empty()) REQUIRE(am_array_to_f64_c(nullptr, &v, x.data(), x.size()) == AM_OK);
  return x;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

struct TempDir {
  std::string path;
  explicit TempDir(const std::string &tag)
      : path((std::filesystem::temp_directory_path() / ("attnmech-stream-" + tag + "-" + std::to_string(::getpid())))
                 .string()) {}
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("results stream: am_report_json is the 3.2 DOM serialisation byte for byte (400 random records)") {
  Gen g{std::mt19937_64(20261126)};
  for (int i = 0; i < 400; ++i) {
    Rec rec;
    g.object(rec.r, 0);
    const std::string want = dom_oracle::text(rec.r), got = text_of(rec.r);
    REQUIRE_MESSAGE(got == want, "record " << i);
  }
}

TEST_CASE("results stream: a results directory holds arrays of >= 16 elements only as .npy, equal to the arrays") {
  Gen g{std::mt19937_64(7)};
  TempDir dir("refs");
  size_t references = 0;
  for (int i = 0; i < 60; ++i) {
    Rec rec;
    g.object(rec.r, 0);
    am_report_write_options opt = AM_REPORT_WRITE_OPTIONS_INIT;
    opt.plots = 0;
    REQUIRE(am_report_write(nullptr, rec.r, dir.path.c_str(), &opt) == AM_OK);
    dom_oracle::Refs refs;
    refs_of(rec.r, "", 16, &refs);
    references += refs.size();
    // The text is the 3.2 layout with each big array replaced by its reference, and nothing else in it.
    REQUIRE_MESSAGE(slurp(dir.path + "/results.json") == dom_oracle::text(rec.r, refs), "record " << i);
    size_t files = 0;
    for (const auto &e : std::filesystem::directory_iterator(dir.path)) files += e.path().extension() == ".npy";
    CHECK(files == refs.size());
    for (const auto &kv : refs) {  // each .npy is its array: dtype, shape and every value's bits
      am_array *a = nullptr;
      REQUIRE(am_npy_read(nullptr, (dir.path + "/" + kv.second).c_str(), &a) == AM_OK);
      am_array_view want{}, got = am_array_get_view(a);
      REQUIRE(am_record_array(kv.first, &want) == AM_OK);
      CHECK(got.dtype == want.dtype);
      CHECK(std::vector<size_t>(got.shape, got.shape + got.ndim) == std::vector<size_t>(want.shape, want.shape + want.ndim));
      CHECK(same_bits(values(got), values(want)));
      am_array_destroy(&a);
    }
  }
  CHECK(references > 30);  // the records did cross the threshold
}

TEST_CASE("results stream: a directory reads back as the record it was written from") {
  Gen g{std::mt19937_64(11)};
  g.round_trip = true;
  TempDir dir("back");
  for (int i = 0; i < 60; ++i) {
    Rec rec;
    g.object(rec.r, 0);
    REQUIRE(am_report_write(nullptr, rec.r, dir.path.c_str(), nullptr) == AM_OK);
    am_record *back = nullptr;
    REQUIRE(am_report_read(nullptr, dir.path.c_str(), &back) == AM_OK);
    CHECK_MESSAGE(text_of(back) == text_of(rec.r), "record " << i);  // every array's values, inline or from .npy
    am_record_destroy(&back);
  }
}

TEST_CASE("results stream: a 3.2 document (every array inline) is still read") {
  Gen g{std::mt19937_64(13)};
  g.round_trip = true;
  TempDir dir("old");
  std::filesystem::create_directories(dir.path);
  for (int i = 0; i < 30; ++i) {
    Rec rec;
    g.object(rec.r, 0);
    am_record_set_number(rec.r, "schema_version", 2);
    std::ofstream(dir.path + "/results.json") << dom_oracle::text(rec.r);  // what 3.2 wrote (its .npy copies unused)
    am_record *back = nullptr;
    REQUIRE(am_report_read(nullptr, dir.path.c_str(), &back) == AM_OK);
    CHECK(text_of(back) == text_of(rec.r));
    am_record_destroy(&back);
  }
}

TEST_CASE("results stream: npy_min_elements moves the threshold; a write that fails leaves no directory") {
  Rec rec;
  std::vector<double> x(40, 0.5);
  am_record_set_vector(rec.r, "a", x.data(), 4);
  am_record_set_vector(rec.r, "b", x.data(), 40);
  TempDir dir("min");
  am_report_write_options opt = AM_REPORT_WRITE_OPTIONS_INIT;
  opt.plots = 0;
  opt.npy_min_elements = 4;
  REQUIRE(am_report_write(nullptr, rec.r, dir.path.c_str(), &opt) == AM_OK);
  const std::string t = slurp(dir.path + "/results.json");
  CHECK(t.find("\"a\": {\n  \"npy_file\": \"a.npy\",\n  \"shape\": [4],\n  \"dtype\": \"<f8\"\n }") != std::string::npos);
  opt.npy_min_elements = SIZE_MAX;  // none: every array inline, no .npy
  REQUIRE(am_report_write(nullptr, rec.r, dir.path.c_str(), &opt) == AM_OK);
  CHECK(slurp(dir.path + "/results.json") == text_of(rec.r));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/b.npy"));
  // A string that is not UTF-8 fails the document half way: the previous directory stays as it was.
  const std::string before = slurp(dir.path + "/results.json");
  am_record_set_string(rec.r, "z", "\xff");
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  CHECK(am_report_write(ctx, rec.r, dir.path.c_str(), &opt) != AM_OK);
  CHECK(slurp(dir.path + "/results.json") == before);
  am_context_destroy(&ctx);
  size_t entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(std::filesystem::path(dir.path).parent_path()))
    entries += e.path().filename().string().rfind(std::filesystem::path(dir.path).filename().string() + ".tmp-", 0) == 0;
  CHECK(entries == 0);  // no temporary directory left
}

TEST_CASE("results stream: a bad reference is refused with its key and the reason, never read outside the directory") {
  TempDir dir("bad");
  std::filesystem::create_directories(dir.path);
  const double f[6] = {1, 2, 3, 4, 5, 6};
  const size_t shape[2] = {2, 3};
  const am_array_view v = am_array_view_make(AM_F64, 2, shape, 0, f);
  REQUIRE(am_npy_write(nullptr, (dir.path + "/a.npy").c_str(), &v) == AM_OK);
  REQUIRE(am_npy_write(nullptr, (dir.path + "/cut.npy").c_str(), &v) == AM_OK);
  std::filesystem::resize_file(dir.path + "/cut.npy", std::filesystem::file_size(dir.path + "/cut.npy") - 8);
  std::filesystem::create_directories(dir.path + "/sub");
  REQUIRE(am_npy_write(nullptr, (dir.path + "/sub/a.npy").c_str(), &v) == AM_OK);
  REQUIRE(::symlink((dir.path + "/a.npy").c_str(), (dir.path + "/link.npy").c_str()) == 0);
  struct Case {
    const char *ref;
    am_status code;
    const char *says;
  };
  const Case cases[] = {
      {R"("gone.npy", "shape": [1], "dtype": "<f8")", AM_ERR_IO, "cannot be read"},
      {R"("sub/a.npy", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "holds '/'"},
      {R"("../a.npy", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "starts with '.'"},
      {R"("", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "an empty name"},
      {R"("a.txt", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "not a .npy file name"},
      {R"(7, "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "are strings"},
      {R"("a.npy", "shape": [2, 3], "dtype": "<i4")", AM_ERR_FORMAT, "the reference says <i4 [2, 3]"},
      {R"("a.npy", "shape": [6], "dtype": "<f8")", AM_ERR_FORMAT, "holds <f8 [2, 3]"},
      {R"("a.npy", "shape": [-2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "\"shape\" holds -2"},
      {R"("cut.npy", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "cut.npy"},
      {R"("link.npy", "shape": [2, 3], "dtype": "<f8")", AM_ERR_FORMAT, "symbolic link"},
  };
  for (const auto &c : cases) {
    std::ofstream(dir.path + "/results.json") << R"({"runs": [{"x": {"npy_file": )" << c.ref << "}}]}\n";
    am_test::Ctx ctx;
    am_record *doc = nullptr;
    CHECK_MESSAGE(am_report_read(ctx.c, dir.path.c_str(), &doc) == c.code, c.ref);
    CHECK(doc == nullptr);
    CHECK_MESSAGE(ctx.err().find("runs.0.x") != std::string::npos, ctx.err());
    CHECK_MESSAGE(ctx.err().find(c.says) != std::string::npos, ctx.err());
  }
}
