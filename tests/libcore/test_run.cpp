// The run API (attnmech/run.h) is re-entrant: runs in two threads of one process, each with its own context,
// sharing one registry, give exactly the documents they give alone (bit for bit, timings aside), and a cancel
// from another thread stops only the run of that context. BLAS is pinned to one thread (am_blas_threads_set):
// OpenBLAS's thread count is process-global, the library never changes it behind the caller's back.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attnmech/attnmech.h"

namespace {

struct Registry {
  am_registry *r = nullptr;
  Registry() {
    REQUIRE(am_registry_create(&r) == AM_OK);
    REQUIRE(am_registry_discover(nullptr, r, nullptr) == AM_OK);  // AM_PLUGIN_PATH: the build tree's plugins
  }
  ~Registry() { am_registry_destroy(&r); }
};

using Sets = std::vector<std::pair<const char *, const char *>>;

// One run with its own context; the document (or NULL) and the status.
struct Run {
  am_record *doc = nullptr;
  am_status st = AM_OK;
  std::string err;
  ~Run() { am_record_destroy(&doc); }
};

am_context *make_context() {
  am_context *ctx = nullptr;
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = 1;
  REQUIRE(am_context_create(&ctx, &cs) == AM_OK);
  return ctx;
}

// Runs task/estimator on `ctx` (the caller's; NULL: a context of its own for this run).
void execute(const am_registry *reg, const char *task, const char *est, const Sets &sets, Run *out,
             am_context *ctx = nullptr) {
  am_context *own = ctx ? nullptr : make_context();
  if (!ctx) ctx = own;
  am_run_spec *spec = nullptr;
  am_run_spec_create(&spec);
  am_run_spec_set_task(spec, task);
  if (est) am_run_spec_set_estimator(spec, est);
  for (const auto &kv : sets) am_run_spec_set(spec, kv.first, kv.second);
  out->st = am_run_execute(ctx, reg, spec, &out->doc);
  out->err = am_context_last_error(ctx);
  am_run_spec_destroy(&spec);
  am_context_destroy(&own);
}

bool is_timing(const char *key) {
  const size_t n = key ? std::strlen(key) : 0;
  return key && std::strstr(key, "time") && n > 2 && std::strcmp(key + n - 2, "_s") == 0;
}

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

// Bit-for-bit equality of two documents, timings aside; `where` collects the first difference.
bool same(const am_record *a, const am_record *b, const std::string &at, std::string *where) {
  const am_record_type t = am_record_type_of(a);
  if (t != am_record_type_of(b)) return *where = at + ": types differ", false;
  switch (t) {
    case AM_REC_NUMBER:
    case AM_REC_BOOL:
      if (!same_number(am_record_number(a), am_record_number(b))) return *where = at, false;
      return true;
    case AM_REC_STRING:
      if (std::strcmp(am_record_string(a), am_record_string(b)) != 0) return *where = at, false;
      return true;
    case AM_REC_ARRAY: {
      am_array_view va, vb;
      am_record_array(a, &va);
      am_record_array(b, &vb);
      const size_t n = am_array_view_count(&va);
      if (va.dtype != vb.dtype || va.ndim != vb.ndim || n != am_array_view_count(&vb) ||
          std::memcmp(va.shape, vb.shape, sizeof va.shape) != 0 ||
          std::memcmp(va.data, vb.data, n * am_dtype_size(va.dtype)) != 0)
        return *where = at + " (array)", false;
      return true;
    }
    case AM_REC_OBJECT:
    case AM_REC_LIST: {
      if (am_record_size(a) != am_record_size(b)) return *where = at + ": sizes differ", false;
      for (size_t i = 0; i < am_record_size(a); ++i) {
        const char *ka = am_record_key(a, i);
        if (ka && (!am_record_key(b, i) || std::strcmp(ka, am_record_key(b, i)) != 0))
          return *where = at + ": keys differ", false;
        if (is_timing(ka)) continue;
        if (!same(am_record_at(a, i), am_record_at(b, i), at + "." + (ka ? ka : std::to_string(i)), where))
          return false;
      }
      return true;
    }
    default: return true;
  }
}

const Sets kMarkov = {{"P", "30"}, {"P_test", "40"}, {"widths_scan", "10,100,1000"}, {"seed", "5"}, {"threads", "1"}};
const Sets kPotts = {{"L", "6"}, {"C", "4"}, {"M", "120"}, {"M_test", "150"}, {"burnin", "20"},
                     {"equilibration_test", "0"}, {"max_iter", "40"}, {"threads", "1"}};

}  // namespace

TEST_CASE("run API: two runs in two threads equal the runs alone, bit for bit") {
  const int saved_blas = am_blas_threads_set(1);
  Registry reg;
  Run alone_m, alone_p;
  execute(reg.r, "markov", nullptr, kMarkov, &alone_m);
  REQUIRE_MESSAGE(alone_m.st == AM_OK, alone_m.err);
  execute(reg.r, "potts", "pseudolikelihood", kPotts, &alone_p);
  REQUIRE_MESSAGE(alone_p.st == AM_OK, alone_p.err);
  // The same run twice at once, and two different runs at once.
  Run m1, m2, m3, p1;
  {
    std::thread a([&] { execute(reg.r, "markov", nullptr, kMarkov, &m1); });
    std::thread b([&] { execute(reg.r, "markov", nullptr, kMarkov, &m2); });
    a.join();
    b.join();
  }
  {
    std::thread a([&] { execute(reg.r, "markov", nullptr, kMarkov, &m3); });
    std::thread b([&] { execute(reg.r, "potts", "pseudolikelihood", kPotts, &p1); });
    a.join();
    b.join();
  }
  for (Run *r : {&m1, &m2, &m3}) {
    REQUIRE_MESSAGE(r->st == AM_OK, r->err);
    std::string where;
    CHECK_MESSAGE(same(alone_m.doc, r->doc, "", &where), "markov differs at " << where);
  }
  REQUIRE_MESSAGE(p1.st == AM_OK, p1.err);
  std::string where;
  CHECK_MESSAGE(same(alone_p.doc, p1.doc, "", &where), "potts differs at " << where);
  if (saved_blas > 0) am_blas_threads_set(saved_blas);
}

TEST_CASE("run API: am_context_cancel from another thread stops that run only") {
  const int saved_blas = am_blas_threads_set(1);
  Registry reg;
  // A long posterior run (a million draws: minutes) that only a cancel ends, beside a short theory run.
  const Sets slow = {{"P", "30"}, {"P_test", "40"}, {"widths_scan", "10"}, {"chains", "2"}, {"warmup", "1"},
                     {"samples", "1000000"}, {"threads", "1"}};
  Run cancelled, other, alone;
  am_context *slow_ctx = make_context();  // made here, so cancelling it races with nothing
  std::thread a([&] { execute(reg.r, "markov", "posterior", slow, &cancelled, slow_ctx); });
  std::thread b([&] { execute(reg.r, "markov", nullptr, kMarkov, &other); });
  b.join();  // the short run ends while the long one samples
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  am_context_cancel(slow_ctx);
  a.join();
  am_context_destroy(&slow_ctx);
  CHECK(cancelled.st == AM_CANCELLED);
  REQUIRE(cancelled.doc != nullptr);
  CHECK(std::string(am_record_string(am_record_get(cancelled.doc, "status"))) == "cancelled");
  REQUIRE_MESSAGE(other.st == AM_OK, other.err);
  execute(reg.r, "markov", nullptr, kMarkov, &alone);
  std::string where;
  CHECK_MESSAGE(same(alone.doc, other.doc, "", &where), "the run beside the cancelled one differs at " << where);
  if (saved_blas > 0) am_blas_threads_set(saved_blas);
}
