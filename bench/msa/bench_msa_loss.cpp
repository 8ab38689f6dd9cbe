// bench/msa: one weighted loss+gradient of the alignment fit at protein size against the dgemm rate measured in
// the same run and against the collapsed factored model of the potts task (FactoredModel, the path the issue
// measured at 0.16 of the dgemm rate at L = 200, C = 21).
//
// Usage: bench_msa_loss [--reps N] [--L 200] [--C 21] [--M 3000] [--heads 8,64] [--fresh 0.2] [--collapsed 1]
//                       [--site-block 0] [--threads 1,2]
// (--collapsed 0 skips the collapsed model; --site-block sets the alignment fit's sites per streamed block.)
// Run with OPENBLAS_NUM_THREADS unset or 2: the one-thread rows set BLAS to 1 thread and use this thread's CPU
// time; the two-thread rows use wall time with 2 workers and 2 BLAS threads (dgemm measured the same way).
// Tokens: each row copies the previous one except a fraction `fresh` of its sites (as alignments do: DHFR's
// greedy chain changes 20.5 % of the tokens), 10 % gaps (missing), random weights in [0.2, 1].
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "factored.h"
#include "msa_model.h"

extern "C" void openblas_set_num_threads(int);

using namespace am::potts;
using namespace am::msa;

namespace {

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double cpu_thread() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

struct Stats {
  std::vector<double> v;
  double min() const { return *std::min_element(v.begin(), v.end()); }
  double median() const {
    std::vector<double> s(v);
    std::sort(s.begin(), s.end());
    return s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  }
};

// Times f() reps times: thread CPU time with one thread, wall time with more.
template <class F>
Stats timed(int threads, int reps, F f) {
  Stats s;
  f();  // warm-up
  for (int r = 0; r < reps; ++r) {
    const double t0 = threads == 1 ? cpu_thread() : wall();
    f();
    s.v.push_back((threads == 1 ? cpu_thread() : wall()) - t0);
  }
  return s;
}

double dgemm_rate(int threads, int reps) {
  const int n = 2000;
  std::vector<double> A((size_t)n * n, 0.5), B((size_t)n * n, 0.25), C((size_t)n * n, 0.0);
  const Stats s = timed(threads, reps, [&] {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
  });
  return 2.0 * n * n * (double)n / s.min();
}

// A loop of `threads` std::threads over [0, n) in contiguous chunks (the host's split).
ParallelFor thread_loop(int threads) {
  if (threads <= 1) return nullptr;
  return [threads](size_t n, const std::function<void(size_t, size_t, int)> &f) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const size_t b = n * t / threads, e = n * (t + 1) / threads;
      if (b < e) pool.emplace_back([&f, b, e, t] { f(b, e, t); });
    }
    for (auto &th : pool) th.join();
  };
}

struct Data {
  int L, C;
  size_t M;
  std::vector<int32_t> tok, tok_full;  // tok: gaps as −1 (C − 1 colours); tok_full: the gap as colour 0
  std::vector<double> w;
};

Data make_data(int L, int C, size_t M, double fresh) {
  Data d{L, C, M, {}, {}, {}};
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  d.tok_full.resize(M * L);
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i) {
      const bool copy = mu > 0 && am_rng_uniform(&rng) > fresh;
      d.tok_full[mu * L + i] = copy ? d.tok_full[(mu - 1) * L + i]
                                    : (am_rng_uniform(&rng) < 0.1 ? 0 : 1 + (int32_t)am_rng_below(&rng, C - 1));
    }
  d.tok.resize(d.tok_full.size());
  for (size_t k = 0; k < d.tok.size(); ++k) d.tok[k] = d.tok_full[k] - 1;  // gap (0) → −1
  d.w.resize(M);
  for (auto &x : d.w) x = 0.2 + 0.8 * am_rng_uniform(&rng);
  return d;
}

void one_case(const Data &d, int H, int threads, int reps, double rate, bool collapsed, size_t site_block) {
  FactoredModel old(d.L, d.C, H);
  old.set_parallel(thread_loop(threads));
  std::vector<double> th0(old.n_params()), g0(th0.size());
  am_rng rng;
  am_rng_init(&rng, 4, 0);
  am_rng_fill_normal(&rng, th0.data(), th0.size());
  Stats so;
  if (collapsed) so = timed(threads, reps, [&] { old.loss(th0.data(), d.tok_full.data(), d.M, g0.data(), 1e-3); });
  else so.v.assign(1, NAN);  // --collapsed 0: the alignment fit only

  MsaModel m(MsaKind::Factored, d.L, d.C - 1, H, true);
  m.set_parallel(thread_loop(threads));
  m.set_logit_scale(d.L / 8.0);
  const MsaPlan plan = make_msa_plan(d.tok.data(), d.M, d.L, thread_loop(threads));
  const MsaBatch b{d.M, d.tok.data(), d.w.data(), &plan};
  std::vector<double> th(m.n_params()), g(th.size());
  m.init(th.data(), b, rng, 0.1);
  for (size_t k = m.fields_size(); k < th.size(); ++k) th[k] += 0.1 * am_rng_normal(&rng);
  if (site_block > 0) m.set_site_block(site_block);
  const Stats sn = timed(threads, reps, [&] { m.objective(th.data(), b, 0.01, 16.0, g.data()); });
  const double fo = old.flops(d.M), fn = m.flops(d.M);
  std::printf("H=%-3d threads=%d | collapsed (potts path, C=%d): min %.3f s, median %.3f s, %.2f of dgemm | alignment "
              "fit (C=%d, fields, weights, plan): min %.3f s, median %.3f s, %.2f of dgemm by its own count "
              "(%.3g flop), %.2f by the collapsed model's count | %.1fx faster\n",
              H, threads, d.C, so.min(), so.median(), fo / so.min() / rate, d.C - 1, sn.min(), sn.median(),
              fn / sn.min() / rate, fn, fo / sn.min() / rate, so.min() / sn.min());
}

}  // namespace

int main(int argc, char **argv) {
  int reps = 3, L = 200, C = 21;
  size_t M = 3000;
  double fresh = 0.2;
  std::string heads = "8,64", thread_list = "1,2";
  bool collapsed = true;
  size_t site_block = 0;  // the alignment fit's sites per streamed block (0 = its automatic choice)
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a], v = argv[a + 1];
    if (k == "--reps") reps = std::atoi(v.c_str());
    else if (k == "--L") L = std::atoi(v.c_str());
    else if (k == "--C") C = std::atoi(v.c_str());
    else if (k == "--M") M = (size_t)std::atol(v.c_str());
    else if (k == "--heads") heads = v;
    else if (k == "--fresh") fresh = std::atof(v.c_str());
    else if (k == "--collapsed") collapsed = std::atoi(v.c_str()) != 0;
    else if (k == "--site-block") site_block = (size_t)std::atol(v.c_str());
    else if (k == "--threads") thread_list = v;
  }
  const Data d = make_data(L, C, M, fresh);
  std::printf("bench_msa_loss: L=%d C=%d M=%zu, %.0f%% of the tokens redrawn per row, min/median of %d\n", L, C, M,
              100 * fresh, reps);
  for (int threads : {1, 2}) {
    if (thread_list.find(std::to_string(threads)) == std::string::npos) continue;
    openblas_set_num_threads(threads);
    const double rate = dgemm_rate(threads, reps);
    std::printf("dgemm (n = 2000, %d thread%s): %.2f GF/s\n", threads, threads > 1 ? "s" : "", rate * 1e-9);
    for (size_t p = 0; p < heads.size();) {
      const size_t q = heads.find(',', p);
      one_case(d, std::atoi(heads.substr(p, q - p).c_str()), threads, reps, rate, collapsed, site_block);
      p = q == std::string::npos ? heads.size() : q + 1;
    }
  }
  return 0;
}
