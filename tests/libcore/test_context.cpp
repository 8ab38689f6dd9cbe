// Contexts, version, and the internal helpers (am::fail, am::guarded, all_finite).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "internal.hpp"

TEST_CASE("version comes from version.h (generated from the root meson.build)") {
  std::string expect = std::to_string(AM_VERSION_MAJOR) + "." + std::to_string(AM_VERSION_MINOR) + "." +
                       std::to_string(AM_VERSION_PATCH);
  CHECK(std::string(am_version()) == expect);
  CHECK(std::string(am_version()) == AM_VERSION_STRING);
  CHECK(am_abi_version() == AM_ABI_VERSION);
  CHECK(AM_ABI_VERSION >= 3);  // ABI 3: docs/abi.md
  CHECK(AM_SOVERSION >= 3);    // libattnmech.so.3
}

TEST_CASE("NULL context is accepted everywhere") {
  CHECK(am_context_fail(nullptr, AM_ERR_DOMAIN, "x=%d", 3) == AM_ERR_DOMAIN);
  CHECK(std::string(am_context_last_error(nullptr)) == "");
  am_context_log(nullptr, AM_LOG_INFO, "nothing %s", "happens");
  CHECK(am_context_progress(nullptr, 1, 2, "w") == 0);
  CHECK(am_context_threads(nullptr) >= 1);
  am_context_destroy(nullptr);
  am_context *c = nullptr;
  am_context_destroy(&c);
  CHECK(am::fail(nullptr, AM_ERR_IO, "no %s", "ctx") == AM_ERR_IO);
}

struct sink {
  std::vector<std::pair<int, std::string>> lines;
  std::vector<double> done;
  int cancel_after = -1;
};

static void log_fn(void *u, am_log_level lv, const char *m) { static_cast<sink *>(u)->lines.emplace_back(lv, m); }
static int progress_fn(void *u, double done, double, const char *) {
  auto *s = static_cast<sink *>(u);
  s->done.push_back(done);
  return s->cancel_after >= 0 && static_cast<int>(s->done.size()) > s->cancel_after;
}

TEST_CASE("context: last error, log and progress sinks, threads") {
  sink s;
  am_context_settings set;
  am_context_default_settings(&set);
  CHECK(set.struct_size == sizeof(am_context_settings));
  CHECK(set.threads == 0);
  set.log = log_fn;
  set.log_user = &s;
  set.progress = progress_fn;
  set.progress_user = &s;
  set.threads = 3;
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(std::string(am_context_last_error(ctx)) == "");
  CHECK(am_context_threads(ctx) == 3);

  CHECK(am_context_fail(ctx, AM_ERR_SHAPE, "matrix %zux%zu vs %s", size_t(2), size_t(3), "vector") == AM_ERR_SHAPE);
  CHECK(std::string(am_context_last_error(ctx)) == "matrix 2x3 vs vector");
  // long messages are not truncated
  std::string big(1000, 'a');
  am_context_fail(ctx, AM_ERR_IO, "%s!", big.c_str());
  CHECK(std::string(am_context_last_error(ctx)) == big + "!");

  am_context_log(ctx, AM_LOG_WARN, "w=%.2f", 1.5);
  REQUIRE(s.lines.size() == 1);
  CHECK(s.lines[0].first == AM_LOG_WARN);
  CHECK(s.lines[0].second == "w=1.50");

  s.cancel_after = 2;
  CHECK(am_context_progress(ctx, 1, 10, "a") == 0);
  CHECK(am_context_progress(ctx, 2, 10, "a") == 0);
  CHECK(am_context_progress(ctx, 3, 10, "a") != 0);
  CHECK(s.done == std::vector<double>{1, 2, 3});
  am_context_destroy(&ctx);
  CHECK(ctx == nullptr);

  // default settings: no sinks, all cores
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_context_log(ctx, AM_LOG_INFO, "dropped");
  CHECK(am_context_progress(ctx, 1, 1, nullptr) == 0);
  CHECK(am_context_threads(ctx) >= 1);
  am_context_destroy(&ctx);

  // a settings struct from an older caller (only struct_size and log) is accepted
  struct old_settings {
    uint32_t struct_size;
    am_log_fn log;
  } old{static_cast<uint32_t>(sizeof(old_settings)), log_fn};
  REQUIRE(am_context_create(&ctx, reinterpret_cast<const am_context_settings *>(&old)) == AM_OK);
  CHECK(am_context_threads(ctx) >= 1);
  am_context_destroy(&ctx);
  set.threads = -1;
  CHECK(am_context_create(&ctx, &set) == AM_ERR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
}

struct convergence_sink {
  std::vector<std::string> calls;  // "iter measure target label" of the convergence sink, "P done total label"
  int cancel_at = -1;              //   of the progress sink
};

static int conv_fn(void *u, double iter, double measure, double target, const char *label) {
  auto *s = static_cast<convergence_sink *>(u);
  char b[160];
  std::snprintf(b, sizeof b, "%g %g %g %s", iter, measure, target, label);
  s->calls.push_back(b);
  return s->cancel_at >= 0 && iter >= s->cancel_at;
}

static int conv_progress_fn(void *u, double done, double total, const char *label) {
  auto *s = static_cast<convergence_sink *>(u);
  char b[160];
  std::snprintf(b, sizeof b, "P %g %g %s", done, total, label);
  s->calls.push_back(b);
  return 0;
}

TEST_CASE("context: an open-ended loop reports its stopping measure, never a share of its iteration cap") {
  convergence_sink s;
  am_context_settings set;
  am_context_default_settings(&set);
  CHECK(!set.convergence);  // the default: no convergence sink
  set.progress = conv_progress_fn;
  set.progress_user = &s;
  set.convergence = conv_fn;
  set.convergence_user = &s;
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(am_context_convergence(ctx, 3, 0.5, 1e-3, "L-BFGS") == 0);
  REQUIRE(am_context_set_scope(ctx, "run 1/2 N=10") == AM_OK);
  CHECK(am_context_convergence(ctx, 4, 0.25, 1e-3, "newton") == 0);
  s.cancel_at = 5;  // the sink's nonzero return cancels, as a progress sink's does
  CHECK(am_context_convergence(ctx, 5, 0.1, 1e-3, "newton") != 0);
  CHECK(am_context_cancelled(ctx));
  CHECK(s.calls == std::vector<std::string>{"3 0.5 0.001 L-BFGS", "4 0.25 0.001 [run 1/2 N=10] newton",
                                            "5 0.1 0.001 [run 1/2 N=10] newton"});
  am_context_destroy(&ctx);

  // Without a convergence sink (an older host): the progress sink gets the iteration with total 0 (no total).
  s.calls.clear();
  set.convergence = nullptr;
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(am_context_convergence(ctx, 7, 0.5, 1e-3, "L-BFGS") == 0);
  CHECK(s.calls == std::vector<std::string>{"P 7 0 L-BFGS"});
  am_context_destroy(&ctx);
  // A settings struct that ends before the new members (a 3.4 caller) gets no convergence sink.
  s.calls.clear();
  set.convergence = conv_fn;
  set.struct_size = static_cast<uint32_t>(offsetof(am_context_settings, convergence));
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(am_context_convergence(ctx, 8, 0.5, 1e-3, "L-BFGS") == 0);
  CHECK(s.calls == std::vector<std::string>{"P 8 0 L-BFGS"});
  am_context_destroy(&ctx);
  CHECK(am_context_convergence(nullptr, 1, 1, 1, "x") == 0);
}

TEST_CASE("context: the distribution setting and the block size (Added in 3.6)") {
  CHECK(am_context_distribute(nullptr) == AM_DISTRIBUTE_AUTO);
  CHECK(am_context_scalapack_block(nullptr) == 64);
  am_context_settings set;
  am_context_default_settings(&set);
  CHECK(set.distribute == AM_DISTRIBUTE_AUTO);  // the defaults keep what a 3.5 host got
  CHECK(set.scalapack_block == 0);
  const int blocks[][2] = {{0, 64}, {32, 32}, {8, 8}, {1024, 1024}, {3, 8}, {-5, 8}, {5000, 1024}};
  for (const auto &b : blocks) {
    CAPTURE(b[0]);
    set.distribute = AM_DISTRIBUTE_OFF;
    set.scalapack_block = b[0];
    am_context *ctx = nullptr;
    REQUIRE(am_context_create(&ctx, &set) == AM_OK);
    CHECK(am_context_distribute(ctx) == AM_DISTRIBUTE_OFF);
    CHECK(am_context_scalapack_block(ctx) == b[1]);
    am_context_destroy(&ctx);
  }
  set.distribute = 7;  // not a value of am_distribute: auto
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(am_context_distribute(ctx) == AM_DISTRIBUTE_AUTO);
  am_context_destroy(&ctx);
  // A settings struct that ends before the 3.6 members (a 3.5 caller): the defaults, whatever follows in memory.
  set.distribute = AM_DISTRIBUTE_OFF;
  set.scalapack_block = 128;
  set.struct_size = static_cast<uint32_t>(offsetof(am_context_settings, distribute));
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  CHECK(am_context_distribute(ctx) == AM_DISTRIBUTE_AUTO);
  CHECK(am_context_scalapack_block(ctx) == 64);
  am_context_destroy(&ctx);
}

TEST_CASE("context: the part of the data this process makes (Added in 3.8)") {
  int part = -1, parts = -1;
  am_context_data_part(nullptr, &part, &parts);
  CHECK((part == 0 && parts == 1));
  am_context_settings set;
  am_context_default_settings(&set);
  CHECK((set.data_part == 0 && set.data_parts == 0));  // the defaults: the whole data
  // {data_part, data_parts} → {part, parts}: out of range or one part is the whole data
  const int cases[][4] = {{0, 0, 0, 1}, {0, 1, 0, 1}, {1, 2, 1, 2}, {3, 4, 3, 4}, {4, 4, 0, 1}, {-1, 2, 0, 1}, {0, -3, 0, 1}};
  for (const auto &c : cases) {
    CAPTURE(c[0]);
    CAPTURE(c[1]);
    set.data_part = c[0];
    set.data_parts = c[1];
    am_context *ctx = nullptr;
    REQUIRE(am_context_create(&ctx, &set) == AM_OK);
    am_context_data_part(ctx, &part, &parts);
    CHECK((part == c[2] && parts == c[3]));
    am_context_data_part(ctx, nullptr, nullptr);  // either pointer may be NULL
    am_context_destroy(&ctx);
  }
  // A 3.7 caller's struct (ends before data_part): the whole data, whatever follows in memory.
  set.data_part = 1;
  set.data_parts = 2;
  set.struct_size = static_cast<uint32_t>(offsetof(am_context_settings, data_part));
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, &set) == AM_OK);
  am_context_data_part(ctx, &part, &parts);
  CHECK((part == 0 && parts == 1));
  am_context_destroy(&ctx);
}

static am_status throws_bad_alloc(am_context *ctx) {
  AM_GUARD(ctx, {
    throw std::bad_alloc();
    return AM_OK;
  });
}

TEST_CASE("am::guarded maps exceptions to status codes") {
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  CHECK(throws_bad_alloc(ctx) == AM_ERR_NO_MEMORY);
  CHECK(std::string(am_context_last_error(ctx)) == "out of memory");
  am_status st = am::guarded(ctx, []() -> am_status { throw std::runtime_error("boom"); });
  CHECK(st == AM_ERR_INTERNAL);
  CHECK(std::string(am_context_last_error(ctx)).find("boom") != std::string::npos);
  CHECK(am::guarded(ctx, []() -> am_status { throw 42; }) == AM_ERR_INTERNAL);
  CHECK(am::guarded(ctx, []() -> am_status { return AM_CANCELLED; }) == AM_CANCELLED);
  CHECK(am::guarded(nullptr, []() -> am_status { throw std::bad_alloc(); }) == AM_ERR_NO_MEMORY);
  am_context_destroy(&ctx);
}

TEST_CASE("all_finite") {
  double v[4] = {0, -1e308, 1e-320, 5};
  CHECK(am::all_finite(v, 4));
  CHECK(am::all_finite(nullptr, 0));
  v[2] = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(am::all_finite(v, 4));
  CHECK(am::all_finite(v, 2));
  v[2] = -std::numeric_limits<double>::infinity();
  CHECK_FALSE(am::all_finite(v, 4));
}
