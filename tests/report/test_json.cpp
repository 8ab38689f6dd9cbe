// Unit tests of results.json serialisation (am_report_json, am_report_write): array orientation in every
// memory order, integers, NaN → null, key order, .npy export names, the compact dump byte for byte.
#include <doctest/doctest.h>

#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include "../handles.hpp"
#include "report_text.hpp"

using json = nlohmann::ordered_json;

using am_test::Rec;
using am_test::text_of;

namespace {

json to_json(const am_record *r) { return json::parse(text_of(r)); }

}  // namespace

TEST_CASE("results: matrices and n-d arrays come out row-major in every memory order") {
  Rec rec;
  // Column-major 3 × 2 with leading dimension 4: m(i, j) = 10 i + j.
  double m[4 * 2];
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 4; ++i) m[i + 4 * j] = i < 3 ? 10.0 * i + j : 999;
  REQUIRE(am_record_set_matrix(rec.r, "M", m, 3, 2, 4) == AM_OK);
  // [2, 3, 4] arrays: element (i, j, k) = 100 i + 10 j + k, stored in C and in Fortran order.
  std::vector<double> c(24), f(24);
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 3; ++j)
      for (size_t k = 0; k < 4; ++k) {
        double v = 100.0 * i + 10.0 * j + k;
        c[(i * 3 + j) * 4 + k] = v;
        f[i + 2 * (j + 3 * k)] = v;
      }
  am_array_view vc{};
  vc.dtype = AM_F64;
  vc.ndim = 3;
  vc.shape[0] = 2;
  vc.shape[1] = 3;
  vc.shape[2] = 4;
  vc.fortran_order = 0;
  vc.data = c.data();
  am_array_view vf = vc;
  vf.fortran_order = 1;
  vf.data = f.data();
  REQUIRE(am_record_set_array(rec.r, "C3", &vc) == AM_OK);
  REQUIRE(am_record_set_array(rec.r, "F3", &vf) == AM_OK);
  json j = to_json(rec.r);
  REQUIRE(j["M"].size() == 3);
  REQUIRE(j["M"][0].size() == 2);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) CHECK(j["M"][i][k].get<double>() == 10.0 * i + k);
  for (const char *key : {"C3", "F3"})
    for (size_t i = 0; i < 2; ++i)
      for (size_t jj = 0; jj < 3; ++jj)
        for (size_t k = 0; k < 4; ++k) CHECK(j[key][i][jj][k].get<double>() == 100.0 * i + 10.0 * jj + k);
}

TEST_CASE("results: numbers, integers, null, strings, order") {
  Rec rec;
  am_record_set_number(rec.r, "z", 2.0);
  am_record_set_number(rec.r, "a", 0.5);
  am_record_set_number(rec.r, "nan", std::numeric_limits<double>::quiet_NaN());
  am_record_set_number(rec.r, "inf", std::numeric_limits<double>::infinity());
  am_record_set_bool(rec.r, "flag", 1);
  am_record_set_string(rec.r, "s", "g (same\u2192unif)");
  am_record *l = am_record_list(rec.r, "list");
  am_record_append_number(l, 3);
  am_record_append_string(l, "x");
  int32_t iv[3] = {-1, 0, 7};
  am_array_view v{};
  v.dtype = AM_I32;
  v.ndim = 1;
  v.shape[0] = 3;
  v.data = iv;
  am_record_set_array(rec.r, "ints", &v);
  json j = to_json(rec.r);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"z", "a", "nan", "inf", "flag", "s", "list", "ints"});
  CHECK(j["z"].is_number_integer());
  CHECK(j["z"] == 2);
  CHECK(j["a"].get<double>() == 0.5);
  CHECK(j["nan"].is_null());
  CHECK(j["inf"].is_null());
  CHECK(j["flag"] == true);
  CHECK(j["s"] == "g (same\u2192unif)");
  CHECK(j["list"] == json::parse("[3, \"x\"]"));
  CHECK(j["ints"] == json::parse("[-1, 0, 7]"));
  CHECK(j["ints"][2].is_number_integer());

  // The compact dump parses back to the same document; numbers round-trip exactly.
  am_record_set_number(rec.r, "third", 1.0 / 3.0);
  json back = to_json(rec.r);
  CHECK(back["third"].get<double>() == 1.0 / 3.0);
}

TEST_CASE("results: arrays of >= 16 elements are exported as dotted-path .npy files") {
  Rec rec;
  std::vector<double> big(16), small(15);
  for (size_t i = 0; i < 16; ++i) big[i] = 0.25 * static_cast<double>(i);
  am_record *run = am_record_object(rec.r, "test");
  am_record_set_vector(run, "mean", big.data(), big.size());
  am_record_set_vector(run, "small", small.data(), small.size());
  am_record *ul = am_record_list(rec.r, "U");
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = v.shape[1] = 4;
  v.fortran_order = 1;
  v.data = big.data();
  REQUIRE(am_record_append_array(ul, &v) == AM_OK);
  std::string dir = (std::filesystem::temp_directory_path() / ("attnmech-results-" + std::to_string(::getpid()))).string();
  std::vector<std::string> files;
  am_report_write_options opt = AM_REPORT_WRITE_OPTIONS_INIT;
  opt.on_file = [](void *user, const char *name) { static_cast<std::vector<std::string> *>(user)->push_back(name); };
  opt.user = &files;
  REQUIRE(am_report_write(nullptr, rec.r, dir.c_str(), &opt) == AM_OK);
  CHECK(files == std::vector<std::string>{"results.json", "test.mean.npy", "U.0.npy"});
  am_array *a = nullptr;
  REQUIRE(am_npy_read(nullptr, (dir + "/U.0.npy").c_str(), &a) == AM_OK);
  am_array_view r = am_array_get_view(a);
  std::vector<double> cdata(16);
  REQUIRE(am_array_to_f64_c(nullptr, &r, cdata.data(), 16) == AM_OK);
  json j = to_json(rec.r);
  for (size_t i = 0; i < 4; ++i)
    for (size_t k = 0; k < 4; ++k) CHECK(cdata[i * 4 + k] == j["U"][0][i][k].get<double>());
  CHECK(j["U"][0][1][0].get<double>() == 0.25);  // Fortran order: element (1, 0) is data[1]
  am_array_destroy(&a);
  std::filesystem::remove_all(dir);
}

TEST_CASE("results: the text of a known record, byte for byte") {
  Rec rec;
  am_record_set_string(rec.r, "name", "a \"b\"");
  am_record_set_number(rec.r, "int", 3);
  am_record_set_number(rec.r, "big", 9007199254740992.0);  // 2^53: not below 2^53, so 17 digits
  am_record_set_number(rec.r, "x", 0.1);
  am_record_set_number(rec.r, "nan", std::numeric_limits<double>::quiet_NaN());
  am_record_set_bool(rec.r, "b", 0);
  am_record_set_null(rec.r, "n");
  am_record_object(rec.r, "empty");
  double m[6] = {1, 4, 2, 5, 3, 6.5};  // column-major 2 x 3: rows (1 2 3), (4 5 6.5)
  am_record_set_matrix(rec.r, "M", m, 2, 3, 2);
  am_record *l = am_record_list(rec.r, "runs");
  am_record *r0 = am_record_append_object(l);
  double v[2] = {0.5, -2};
  am_record_set_vector(r0, "v", v, 2);
  am_record_append_number(l, 7);
  const std::string expected =
      "{\n"
      " \"name\": \"a \\\"b\\\"\",\n"
      " \"int\": 3,\n"
      " \"big\": 9.007199254740992e+15,\n"
      " \"x\": 0.1,\n"
      " \"nan\": null,\n"
      " \"b\": false,\n"
      " \"n\": null,\n"
      " \"empty\": {},\n"
      " \"M\": [\n"
      "  [1,2,3],\n"
      "  [4,5,6.5]\n"
      " ],\n"
      " \"runs\": [\n"
      "  {\n"
      "   \"v\": [0.5,-2]\n"
      "  },\n"
      "  7\n"
      " ]\n"
      "}\n";
  CHECK(text_of(rec.r) == expected);
}
