// The sequence fits' memory estimates (fit_memory.h) against the peak resident set each fit adds, measured in this
// process (VmHWM reset through clear_refs, as tests/libcore/test_theory_memory.cpp measures the theory's model), and
// the refusal before allocating: a fit whose estimate exceeds AM_MEMORY_LIMIT returns AM_ERR_NO_MEMORY with the sizes
// in its message and touches nothing of the refused size.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>
#include <cblas.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../../memory_limit.hpp"
#include "fit_memory.h"
#include "msa_fit.h"
#include "potts_estimators.h"
#include "vanilla_driver.h"

using namespace am::potts;
using am_test::Ctx;
using am_test::Limit;
using am_test::peak_above;
using am_test::reset_peak;
using am_test::status_kib;

namespace {

struct Rec {
  am_record *r = nullptr;
  Rec() { am_record_create(&r); }
  ~Rec() { am_record_destroy(&r); }
  Rec(const Rec &) = delete;
  Rec &operator=(const Rec &) = delete;
};


// An alignment dataset as the task msa writes it: M random rows of L sites over "-" + 20 letters (C = 21, gap 0).
void alignment_dataset(am_record *ds, size_t M, int L, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> letter(0, 20);
  std::vector<int32_t> t(M * L);
  for (auto &x : t) x = letter(g);
  const size_t sh[2] = {M, (size_t)L};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.data());
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_number(ds, "C", 21);
  am_record_set_number(ds, "L", L);
  am_record_set_array(ds, "tokens", &v);
  const std::vector<double> w(M, 1.0);
  am_record_set_vector(ds, "weights", w.data(), M);
  am_record_set_string(ds, "alphabet", "-ACDEFGHIKLMNPQRSTVWY");
  am_record_set_number(ds, "gap_state", 0);
}

SeqData sequences(size_t M, size_t M_test, int L, int C, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> colour(0, C - 1);
  SeqData d;
  d.L = L, d.C = C, d.M = M, d.M_test = M_test;
  d.train.resize(M * L);
  d.test.resize(M_test * L);
  for (auto &x : d.train) x = colour(g);
  for (auto &x : d.test) x = colour(g);
  return d;
}

// KiB `op` made resident at its peak above what was resident before (0 when it cannot be measured).
template <class F>
long rise_kib(F &&op) {
  const bool ok = reset_peak();
  const long before = status_kib("VmRSS:");
  op();
  return ok && before >= 0 ? status_kib("VmHWM:") - before : 0;
}

// The ratio's bounds: every array the estimates count is written whole (zero-filled or computed) and none is
// counted that is not allocated, so estimate ÷ peak sits near 1; below, allocator rounding and the small work
// vectors the estimates leave out (< 5 %); above, the upper bounds the estimates take (the plan's changed sites
// counted as every site, one worker's scratch per thread of the machine).
constexpr double kLow = 0.9, kHigh = 1.1;

// estimate ÷ measured peak within [kLow, kHigh]; a rise of 0 or less (not measurable here) is only reported.
void check_estimate(const std::string &what, double est, double rise) {
  MESSAGE(what << est / 1e6 << " MB, measured " << rise / 1e6 << " MB");
  if (rise > 0) {
    CHECK(est / rise >= kLow);
    CHECK(est / rise <= kHigh);
  }
}

}  // namespace

TEST_CASE("fit memory: the alignment fit's estimate against the peak RSS it adds (64/16/1 heads, potts model)") {
#if defined(__SANITIZE_ADDRESS__)
  return;  // ASan's allocator keeps freed blocks in quarantine and adds shadow pages: RSS is not the estimate's count
#else
  const Limit unset(nullptr);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);  // large blocks mmapped fresh and returned when freed
  mallopt(M_PERTURB, 0);               // meson test sets MALLOC_PERTURB_, which would make reserved pages resident
  struct Case {
    const char *model;
    int heads, L;
    size_t M;
  };
  // the L-BFGS state dominates (64, 16 heads), the outputs dominate (1 head: J and its copy), plmc's model
  for (const Case c : {Case{"factored", 64, 56, 30}, Case{"factored", 16, 100, 30}, Case{"factored", 1, 100, 30},
                       Case{"potts", 0, 48, 30}}) {
    CAPTURE(c.model);
    CAPTURE(c.heads);
    Rec ds;
    alignment_dataset(ds.r, c.M, c.L, 5);
    PLOptions o;
    o.model = c.model;
    o.heads = std::max(1, c.heads);
    o.max_iter = 2;
    am_rng rng;
    am_rng_init(&rng, 1, 0);
    am_record *run = nullptr;
    am_status st = AM_OK;
    const double rise = peak_above(
        [&] {
          am_record_create(&run);
          st = run_msa_fit(nullptr, o, ds.r, rng, run);
        },
        [&] { am_record_destroy(&run); });
    am_record_destroy(&run);
    REQUIRE(st == AM_OK);
    if (rise < 0) return;  // clear_refs not writable: nothing to compare
    FitShape s;
    s.M = c.M, s.L = c.L, s.C = 20, s.workers = 1;  // gaps missing: 20 letters; serial (no loop)
    const bool potts = std::string(c.model) == "potts";
    const double est = msa_fit_bytes(s, potts ? MsaKind::Potts : MsaKind::Factored, o.heads, true);
    MESSAGE(std::string(c.model) << " " << o.heads << " heads, L = " << c.L << ": estimate " << est / 1e6 << " MB, measured "
                    << rise / 1e6 << " MB");
    CHECK(est / rise >= kLow);
    CHECK(est / rise <= kHigh);
  }
#endif
}

TEST_CASE("fit memory: the collapsed, uncollapsed and vanilla fits' estimates against the peak RSS they add") {
#if defined(__SANITIZE_ADDRESS__)
  return;
#else
  const Limit unset(nullptr);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_PERTURB, 0);
  am_rng rng;
  am_rng_init(&rng, 2, 0);
  am_record *run = nullptr;
  am_status st = AM_OK;
  const auto fresh = [&] { am_record_destroy(&run); };
  FitShape s;
  s.workers = 1;  // the options' loop is empty: the fits run serially
  {  // collapsed, 8 heads, L-BFGS: its 24 vectors of n = 8·(L² + C²) dominate
    const SeqData d = sequences(100, 20, 160, 21, 7);
    PLOptions o;
    o.heads = 8;
    o.max_iter = 2;
    const double rise = peak_above(
        [&] {
          am_record_create(&run);
          st = run_pseudolikelihood(nullptr, o, d, rng, run);
        },
        fresh);
    REQUIRE(st == AM_OK);
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    const double est = collapsed_fit_bytes(s, o.heads, true);
    check_estimate("collapsed, 8 heads, L = 160: estimate ", est, rise);
  }
  {  // uncollapsed at a = 0.5, d = L = 120: the key and value tables, L-BFGS, the copy collapsed() makes
    const SeqData d = sequences(10, 4, 120, 21, 8);
    PLOptions o;
    o.a = 0.5;
    o.max_iter = 2;
    const double rise = peak_above(
        [&] {
          am_record_create(&run);
          st = run_pseudolikelihood(nullptr, o, d, rng, run);
        },
        fresh);
    REQUIRE(st == AM_OK);
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    const double est = mixed_fit_bytes(s, 120, true);
    check_estimate("uncollapsed, d = 120: estimate ", est, rise);
  }
  {  // vanilla, one layer, L = 150: every layer's activations of a chunk of max(128, L) masked copies
    const SeqData d = sequences(6, 2, 150, 21, 9);  // few sequences: each costs L forward passes of a chunk
    VanillaOptions o;
    o.epochs = 1;
    o.batch = 4;
    const double rise = peak_above(
        [&] {
          am_record_create(&run);
          st = run_vanilla(nullptr, o, d, rng, run);
        },
        fresh);
    REQUIRE(st == AM_OK);
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    VanillaConfig cfg;
    cfg.L = d.L, cfg.C = d.C, cfg.d = o.d, cfg.layers = o.layers;
    const double est = vanilla_fit_bytes(s, cfg, (size_t)o.batch, true, false);
    check_estimate("vanilla, L = 150: estimate ", est, rise);
  }
  am_record_destroy(&run);
#endif
}

TEST_CASE("fit memory: a fit over AM_MEMORY_LIMIT is refused before its model exists, naming its sizes") {
  Ctx ctx;
  const Limit limit("1G");
  {  // 5 rows × 400 columns, 64 heads: 3.3 GB (the 2 KB file)
    Rec ds, run;
    alignment_dataset(ds.r, 5, 400, 3);
    PLOptions o;
    o.heads = 64;
    am_rng rng;
    am_rng_init(&rng, 1, 0);
    CHECK(rise_kib([&] { CHECK(run_msa_fit(ctx.c, o, ds.r, rng, run.r) == AM_ERR_NO_MEMORY); }) < 50 * 1024);
    CAPTURE(ctx.err());
    CHECK(ctx.err().find("the alignment fit (64 heads, L = 400, C = 20, M = 5, M_test = 0) needs 3.") !=
          std::string::npos);
    CHECK(ctx.err().find("AM_MEMORY_LIMIT allows 1.1 GB") != std::string::npos);
    o.model = "potts";  // plmc's model: L(L−1)/2 blocks of 20 × 20 and L-BFGS over them
    CHECK(run_msa_fit(ctx.c, o, ds.r, rng, run.r) == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the alignment fit (model=potts, L = 400, C = 20, M = 5, M_test = 0) needs") !=
          std::string::npos);
  }
  {
    const SeqData d = sequences(50, 10, 1000, 21, 4);
    am_rng rng;
    am_rng_init(&rng, 1, 0);
    Rec run;
    PLOptions o;
    o.heads = 16;  // 16·10^6 W entries: L-BFGS alone holds 3 GB
    CHECK(rise_kib([&] { CHECK(run_pseudolikelihood(ctx.c, o, d, rng, run.r) == AM_ERR_NO_MEMORY); }) < 50 * 1024);
    CHECK(ctx.err().find("the pseudolikelihood fit (collapsed, 16 heads, L = 1000, C = 21, M = 50, M_test = 10) needs") !=
          std::string::npos);
    o.heads = 1;
    o.a = 0.5;  // d = L = 1000: 4·L·C·d doubles of keys and values alone are 0.7 GB
    CHECK(run_pseudolikelihood(ctx.c, o, d, rng, run.r) == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the pseudolikelihood fit (uncollapsed, d = 1000, L = 1000") != std::string::npos);
    VanillaOptions vo;  // one layer's attention of 1000 masked copies: 8 GB
    CHECK(rise_kib([&] { CHECK(run_vanilla(ctx.c, vo, d, rng, run.r) == AM_ERR_NO_MEMORY); }) < 50 * 1024);
    CHECK(ctx.err().find("the vanilla fit (1 layer, d = 20, L = 1000, C = 21, M = 50, M_test = 10) needs") !=
          std::string::npos);
  }
}

TEST_CASE("fit memory: the estimates grow with the model (L², heads, layers)") {
  FitShape s;
  s.M = 100, s.L = 100, s.C = 20;
  const double a100 = msa_fit_bytes(s, MsaKind::Factored, 64, true);
  s.L = 200;
  const double a200 = msa_fit_bytes(s, MsaKind::Factored, 64, true);
  CHECK(a200 / a100 > 3.8);  // the L²-sized terms dominate; the data (M·L) grows by 2 only
  CHECK(a200 / a100 < 4.0);
  CHECK(msa_fit_bytes(s, MsaKind::Factored, 128, true) / a200 > 1.5);  // the heads' W (and L-BFGS's copies) grow
  // L-BFGS: 24 vectors of n doubles, θ one more: at 64 heads and L = 200 they are most of the estimate
  const double n = MsaModel::params(MsaKind::Factored, 200, 20, 64, true);
  CHECK(8.0 * 25 * n / a200 > 0.5);
  CHECK(8.0 * 25 * n / a200 < 1.0);
  VanillaConfig c1;
  c1.L = 200, c1.C = 21, c1.layers = 1;
  VanillaConfig c3 = c1;
  c3.layers = 3;
  const double per_layer = VanillaModel::work_bytes(c3) - VanillaModel::work_bytes(c1);
  CHECK(per_layer > 2 * 8.0 * 200 * 200 * 200);  // two more layers' attention maps of a chunk of 200 copies
}
