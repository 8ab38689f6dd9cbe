// The memory estimates of the collapsed and uncollapsed pseudo-likelihood fits (fit_memory.h) against the peak
// resident set each fit adds, measured in this process (VmHWM reset through clear_refs, as
// tests/libcore/test_theory_memory.cpp measures the theory's model), and the refusal before allocating: a fit whose
// estimate exceeds AM_MEMORY_LIMIT returns AM_ERR_NO_MEMORY with the sizes in its message and touches nothing of the
// refused size. The alignment fit's: test_msa_memory.cpp; the vanilla transformer's: tests/plugins/estimator-vanilla.
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
#include "fit_memory_test.hpp"
#include "potts_estimators.h"

using namespace am::potts;
using namespace fit_memory_test;
using am_test::Ctx;
using am_test::Limit;

TEST_CASE("fit memory: the collapsed and uncollapsed fits' estimates against the peak RSS they add") {
#if defined(__SANITIZE_ADDRESS__)
  return;
#else
  const Limit unset(nullptr);
  quiet_malloc();
  am_rng rng;
  am_rng_init(&rng, 2, 0);
  FitShape s;
  s.workers = 1;  // the options' loop is empty: the fits run serially
  {  // collapsed, 8 heads, L-BFGS: its 24 vectors of n = 8·(L² + C²) dominate
    const SeqData d = sequences(100, 20, 160, 21, 7);
    PLOptions o;
    o.heads = 8;
    o.max_iter = 2;
    const double rise = fit_rise([&](am_record *run) { return run_pseudolikelihood(nullptr, o, d, rng, run); });
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    const double est = collapsed_fit_bytes(s, o.heads, true);
    check_estimate("collapsed, 8 heads, L = 160: estimate ", est, rise);
  }
  {  // uncollapsed at a = 0.5, d = L = 120: the key and value tables, L-BFGS, the copy collapsed() makes
    const SeqData d = sequences(10, 4, 120, 21, 8);
    PLOptions o;
    o.a = 0.5;
    o.max_iter = 2;
    const double rise = fit_rise([&](am_record *run) { return run_pseudolikelihood(nullptr, o, d, rng, run); });
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    const double est = mixed_fit_bytes(s, 120, true);
    check_estimate("uncollapsed, d = 120: estimate ", est, rise);
  }
#endif
}

TEST_CASE("fit memory: a pseudo-likelihood fit over AM_MEMORY_LIMIT is refused before its model exists, naming its sizes") {
  Ctx ctx;
  const Limit limit("1G");
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
  }
}

