// am_params_parse: validation of user settings against a parameter table.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

namespace {

const am_param_def kParams[] = {
    AM_PARAM("P", AM_PARAM_INT, "100", "examples", 2, 100000, nullptr),
    AM_PARAM("beta", AM_PARAM_REAL, "0.5", "inverse temperature", 0, 10, nullptr),
    AM_PARAM("free", AM_PARAM_REAL, "-1e300", "unbounded (min > max)", 1, 0, nullptr),
    AM_PARAM("verbose", AM_PARAM_BOOL, "false", "chatty", 1, 0, nullptr),
    AM_PARAM("label", AM_PARAM_STRING, "", "free text", 1, 0, nullptr),
    AM_PARAM("mode", AM_PARAM_CHOICE, "fast", "how", 1, 0, "fast|exact|auto"),
    AM_PARAM("widths", AM_PARAM_INT_LIST, "10,30", "widths", 1, 1000, nullptr),
    AM_PARAM("alpha", AM_PARAM_REAL_LIST, "", "load values", 0, 100, nullptr),
};

am_plugin_desc make_desc() {
  am_plugin_desc d{};
  d.abi_version = AM_ABI_VERSION;
  d.struct_size = sizeof d;
  d.kind = AM_PLUGIN_TASK;
  d.name = "markov";
  d.version = "1";
  d.description = "test table";
  d.params = kParams;
  d.n_params = sizeof kParams / sizeof kParams[0];
  d.data_kinds = AM_DATA_ATTENTION;
  return d;
}

struct fixture {
  am_context *ctx = nullptr;
  am_record *rec = nullptr;
  am_plugin_desc d = make_desc();
  fixture() {
    REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
    REQUIRE(am_record_create(&rec) == AM_OK);
  }
  ~fixture() {
    am_record_destroy(&rec);
    am_context_destroy(&ctx);
  }
  // Parse one key=value into a fresh record.
  am_status one(const char *k, const char *v) {
    am_record_destroy(&rec);
    REQUIRE(am_record_create(&rec) == AM_OK);
    const char *keys[1] = {k};
    const char *vals[1] = {v};
    return am_params_parse(ctx, &d, 1, keys, vals, nullptr, rec);
  }
  std::string err() const { return am_context_last_error(ctx); }
  double num(const char *k) const { return am_record_number(am_record_get(rec, k)); }
  std::vector<double> vec(const char *k) const {
    size_t n = 0;
    am_record_get_vector(rec, k, nullptr, 0, &n);
    std::vector<double> v(n);
    am_record_get_vector(rec, k, v.data(), n, &n);
    return v;
  }
};

}  // namespace

TEST_CASE("defaults fill every key, in table order, typed") {
  fixture f;
  REQUIRE(am_params_parse(f.ctx, &f.d, 0, nullptr, nullptr, nullptr, f.rec) == AM_OK);
  REQUIRE(am_record_size(f.rec) == f.d.n_params);
  for (uint32_t i = 0; i < f.d.n_params; ++i) CHECK(std::string(am_record_key(f.rec, i)) == kParams[i].name);
  CHECK(f.num("P") == 100);
  CHECK(f.num("beta") == 0.5);
  CHECK(f.num("free") == -1e300);
  CHECK(am_record_type_of(am_record_get(f.rec, "verbose")) == AM_REC_NUMBER);
  CHECK(f.num("verbose") == 0);
  CHECK(std::string(am_record_string(am_record_get(f.rec, "label"))) == "");
  CHECK(std::string(am_record_string(am_record_get(f.rec, "mode"))) == "fast");
  CHECK(f.vec("widths") == std::vector<double>{10, 30});
  am_array_view v{};
  REQUIRE(am_record_get_array(f.rec, "alpha", &v) == AM_OK);  // empty default list: an empty 1-D f64 array
  CHECK(v.dtype == AM_F64);
  CHECK(v.ndim == 1);
  CHECK(v.shape[0] == 0);
}

TEST_CASE("user values, consumed flags, last setting wins, unknown keys left alone") {
  fixture f;
  const char *keys[] = {"P", "seed", "mode", "P", "alpha", "verbose"};
  const char *vals[] = {"5", "1", "exact", "1e3", " 0.5, 1,2.5 ", "YES"};
  int consumed[6] = {0, 0, 0, 0, 0, 0};
  REQUIRE(am_params_parse(f.ctx, &f.d, 6, keys, vals, consumed, f.rec) == AM_OK);
  CHECK(consumed[0] == 1);
  CHECK(consumed[1] == 0);
  CHECK(consumed[2] == 1);
  CHECK(consumed[3] == 1);
  CHECK(consumed[4] == 1);
  CHECK(consumed[5] == 1);
  CHECK(f.num("P") == 1000);
  CHECK(std::string(am_record_string(am_record_get(f.rec, "mode"))) == "exact");
  CHECK(f.vec("alpha") == std::vector<double>{0.5, 1, 2.5});
  CHECK(f.num("verbose") == 1);
  CHECK(am_record_get(f.rec, "seed") == nullptr);
}

TEST_CASE("INT: whole numbers including integral exponent forms, inclusive range") {
  fixture f;
  CHECK(f.one("P", "2") == AM_OK);
  CHECK(f.num("P") == 2);
  CHECK(f.one("P", "100000") == AM_OK);
  CHECK(f.one("P", "1e5") == AM_OK);
  CHECK(f.num("P") == 100000);
  CHECK(f.one("P", "2.5e1") == AM_OK);
  CHECK(f.num("P") == 25);
  CHECK(f.one("P", " 42 ") == AM_OK);
  CHECK(f.one("P", "-3") == AM_ERR_USAGE);
  CHECK(f.err() == "parameter 'P' of task 'markov': '-3' is out of range [2, 100000]");
  CHECK(f.one("P", "100001") == AM_ERR_USAGE);
  CHECK(f.one("P", "2.5") == AM_ERR_USAGE);
  CHECK(f.err() == "parameter 'P' of task 'markov': '2.5' is not a whole number");
  CHECK(f.one("P", "0x10") == AM_ERR_USAGE);
  CHECK(f.one("P", "ten") == AM_ERR_USAGE);
  CHECK(f.one("P", "") == AM_ERR_USAGE);
  CHECK(f.one("P", "5x") == AM_ERR_USAGE);
}

TEST_CASE("REAL: finite numbers, range; min > max means unbounded") {
  fixture f;
  CHECK(f.one("beta", "1e-3") == AM_OK);
  CHECK(f.num("beta") == 1e-3);
  CHECK(f.one("beta", "10") == AM_OK);
  CHECK(f.one("beta", "10.0001") == AM_ERR_USAGE);
  CHECK(f.err() == "parameter 'beta' of task 'markov': '10.0001' is out of range [0, 10]");
  CHECK(f.one("beta", "nan") == AM_ERR_USAGE);
  CHECK(f.one("beta", "inf") == AM_ERR_USAGE);
  CHECK(f.one("beta", "1e999") == AM_ERR_USAGE);
  CHECK(f.one("free", "-1e200") == AM_OK);
  CHECK(f.num("free") == -1e200);
}

TEST_CASE("BOOL, CHOICE, STRING") {
  fixture f;
  const char *yes[] = {"1", "true", "TRUE", "yes", "on"};
  const char *no[] = {"0", "false", "No", "off"};
  for (const char *s : yes) {
    CHECK(f.one("verbose", s) == AM_OK);
    CHECK(f.num("verbose") == 1);
  }
  for (const char *s : no) {
    CHECK(f.one("verbose", s) == AM_OK);
    CHECK(f.num("verbose") == 0);
  }
  CHECK(f.one("verbose", "2") == AM_ERR_USAGE);
  CHECK(f.err().find("parameter 'verbose' of task 'markov'") == 0);
  CHECK(f.one("mode", "auto") == AM_OK);
  CHECK(f.one("mode", "slow") == AM_ERR_USAGE);
  CHECK(f.err() == "parameter 'mode' of task 'markov': 'slow' expects one of fast|exact|auto");
  CHECK(f.one("mode", "fas") == AM_ERR_USAGE);  // no prefix matching
  CHECK(f.one("label", " spaces kept ") == AM_OK);
  CHECK(std::string(am_record_string(am_record_get(f.rec, "label"))) == " spaces kept ");
}

TEST_CASE("lists: each element checked") {
  fixture f;
  CHECK(f.one("widths", "5") == AM_OK);
  CHECK(f.vec("widths") == std::vector<double>{5});
  CHECK(f.one("widths", "1,1000") == AM_OK);
  CHECK(f.one("widths", "1,0") == AM_ERR_USAGE);
  CHECK(f.err() == "parameter 'widths' of task 'markov': '0' is out of range [1, 1000] (in '1,0')");
  CHECK(f.one("widths", "1,2.5") == AM_ERR_USAGE);
  CHECK(f.one("widths", "1,,2") == AM_ERR_USAGE);
  CHECK(f.one("widths", "1,2,") == AM_ERR_USAGE);
  CHECK(f.one("widths", "") == AM_OK);
  CHECK(f.vec("widths").empty());
  CHECK(f.one("alpha", "0.1,100") == AM_OK);
  CHECK(f.one("alpha", "0.1,-1") == AM_ERR_USAGE);
}

TEST_CASE("required values and broken defaults") {
  const am_param_def req[] = {AM_PARAM("n", AM_PARAM_INT, "", "a count", 1, 0, nullptr)};
  const am_param_def broken[] = {AM_PARAM("n", AM_PARAM_INT, "-5", "a count", 0, 10, nullptr)};
  fixture f;
  f.d.kind = AM_PLUGIN_ESTIMATOR;
  f.d.name = "est";
  f.d.params = req;
  f.d.n_params = 1;
  CHECK(am_params_parse(f.ctx, &f.d, 0, nullptr, nullptr, nullptr, f.rec) == AM_ERR_USAGE);
  CHECK(f.err().find("parameter 'n' of estimator 'est' is required") == 0);
  CHECK(f.one("n", "4") == AM_OK);
  f.d.params = broken;
  CHECK(am_params_parse(f.ctx, &f.d, 0, nullptr, nullptr, nullptr, f.rec) == AM_ERR_PLUGIN);
  CHECK(f.one("n", "4") == AM_OK);  // a user value does not need the default
  CHECK(am_params_parse(f.ctx, nullptr, 0, nullptr, nullptr, nullptr, f.rec) == AM_ERR_INVALID_ARGUMENT);
}
