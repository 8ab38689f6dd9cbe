// The alignment fit's memory estimate (msa_fit_bytes) against the peak resident set the fit adds (as
// test_fit_memory.cpp measures the other sequence fits), its refusal over AM_MEMORY_LIMIT before the model exists,
// and the estimate's growth with L and the heads.
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fit_memory.h"
#include "../potts/fit_memory_test.hpp"
#include "msa_fit.h"

using namespace am::potts;
using namespace am::msa;
using namespace fit_memory_test;
using am_test::Ctx;
using am_test::Limit;
using am_test::reset_peak;
using am_test::status_kib;

namespace {

// An alignment dataset as the task msa writes it: M random rows of L sites over "-" + 20 letters (C = 21, gap 0).
void alignment_dataset(am_record *ds, size_t M, int L, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> letter(0, 20);
  std::vector<int32_t> t(M * L);
  for (auto &x : t) x = letter(g);
  const size_t sh[2] = {M, (size_t)L};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.data());
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_bool(ds, "alignment", 1);
  am_record_set_number(ds, "C", 21);
  am_record_set_number(ds, "L", L);
  am_record_set_array(ds, "tokens", &v);
  const std::vector<double> w(M, 1.0);
  am_record_set_vector(ds, "weights", w.data(), M);
  am_record_set_string(ds, "alphabet", "-ACDEFGHIKLMNPQRSTVWY");
  am_record_set_number(ds, "gap_state", 0);
}

}  // namespace

TEST_CASE("fit memory: the alignment fit's estimate against the peak RSS it adds (64/16/1 heads, potts model)") {
#if defined(__SANITIZE_ADDRESS__)
  return;  // ASan's allocator keeps freed blocks in quarantine and adds shadow pages: RSS is not the estimate's count
#else
  const Limit unset(nullptr);
  quiet_malloc();
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
    FitOptions f;
    f.model = c.model;
    o.heads = std::max(1, c.heads);
    o.max_iter = 2;
    am_rng rng;
    am_rng_init(&rng, 1, 0);
    const double rise = fit_rise([&](am_record *run) { return run_msa_fit(nullptr, o, f, ds.r, rng, run); });
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


TEST_CASE("fit memory: an alignment fit over AM_MEMORY_LIMIT is refused before its model exists, naming its sizes") {
  Ctx ctx;
  const Limit limit("1G");
  {  // 5 rows × 400 columns, 64 heads: 2.2 GB (the 2 KB file; 3.3 GB before the streamed couplings of 3.8)
    Rec ds, run;
    alignment_dataset(ds.r, 5, 400, 3);
    PLOptions o;
    FitOptions f;
    o.heads = 64;
    am_rng rng;
    am_rng_init(&rng, 1, 0);
    CHECK(rise_kib([&] { CHECK(run_msa_fit(ctx.c, o, f, ds.r, rng, run.r) == AM_ERR_NO_MEMORY); }) < 50 * 1024);
    CAPTURE(ctx.err());
    // model=auto (the default): plmc's model would need 7.46 GB, so factored attention, which needs 2.2 GB
    // (L-BFGS's vectors; the couplings are streamed and, at L·L·C·C = 2^26 doubles, not written: couplings=auto)
    CHECK(ctx.err().find("the alignment fit (64 heads (model=auto: plmc's model needs 7.46 GB), L = 400, C = 20, "
                         "M = 5, M_test = 0) needs 2.2") != std::string::npos);
    CHECK(ctx.err().find("AM_MEMORY_LIMIT allows 1.1 GB") != std::string::npos);
    f.model = "potts";  // plmc's model: L(L−1)/2 blocks of 20 × 20 and L-BFGS over them
    CHECK(run_msa_fit(ctx.c, o, f, ds.r, rng, run.r) == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the alignment fit (model=potts, L = 400, C = 20, M = 5, M_test = 0) needs") !=
          std::string::npos);
  }
}

TEST_CASE("fit memory: the alignment fit's estimate grows with the model (L², heads)") {
  FitShape s;
  s.M = 100, s.L = 100, s.C = 20;
  const double a100 = msa_fit_bytes(s, MsaKind::Factored, 64, true);
  s.L = 200;
  const double a200 = msa_fit_bytes(s, MsaKind::Factored, 64, true);
  // the L²-sized terms dominate; the data (M·L) grows by 2 only and each worker's block of streamed couplings
  // (about 1 MB, kBlockBytes) not at all
  CHECK(a200 / a100 > 3.6);
  CHECK(a200 / a100 < 4.0);
  CHECK(msa_fit_bytes(s, MsaKind::Factored, 128, true) / a200 > 1.5);  // the heads' W (and L-BFGS's copies) grow
  // L-BFGS: 24 vectors of n doubles, θ one more: at 64 heads and L = 200 they are most of the estimate
  const double n = MsaModel::params(MsaKind::Factored, 200, 20, 64, true);
  CHECK(8.0 * 25 * n / a200 > 0.5);
  CHECK(8.0 * 25 * n / a200 < 1.0);
}
