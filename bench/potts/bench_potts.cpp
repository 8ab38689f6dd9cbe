// bench/potts — the Potts fit and sampler against their own past and against plmc (a peer, never a dependency).
//   1. one full-batch loss+gradient of the factored model vs the dgemm rate measured in the same run;
//   2. Gibbs sweeps per second (one chain, one thread) at L = C = 20 and L = 200, C = 21;
//   3. the factored pseudo-likelihood fit (the estimator's L-BFGS with its stopping rule) against plmc on the same
//      sequences: CPU seconds and the pair-score correlation of the couplings with the truth β·J·U — with the
//      default stopping rule, the rule before 3.8 (stop_tol 0.1), the long fit, and (with plmc) the fit stopped at the
//      first L-BFGS iteration whose pair score reaches plmc's best: the ratio at equal accuracy; at protein size also
//      the window rule without its progress guard (stop_progress=0, the rule before the alignment fit added the guard: on these weak couplings
//      the guard decides the stop, 78 iterations instead of 19 — tests/plugins/common/potts/test_stopping.cpp).
// Usage: bench_potts [--quick] [--reps N] [--threads T] [--cases 1000,3000,10000,protein]
//   PLMC=/path/to/plmc  the plmc binary (built beside the project from debbiemarkslab/plmc with plain `make`);
//                       without it the plmc columns are skipped. PLMC_LE="100,30,10" the -le values tried.
//   BENCH_TMP=dir       where the FASTA and parameter files for plmc go (default /tmp); BENCH_KEEP=1 keeps them.
// Run with OPENBLAS_NUM_THREADS=1 (the single-thread figures use this thread's CPU time).
// Reconstruction: couplings of every pair i < j as a C×C block in the zero-sum gauge (row and column means of the
// block removed) against the truth β J_ij U_ab in the same gauge: Pearson correlation over all i < j, a, b
// ("couplings") and of the per-pair Frobenius norms ("pair scores", the figure of issue 15).
// attnmech's coupling is the symmetrised product ½ Σ_h (A^h_ij V^h_ab + A^h_ji V^h_ba); plmc's is e_ij(a, b) from
// its parameter file (-o). CPU time: getrusage of this process (attnmech, all its threads) and of the plmc child.
// The machine may be shared: every timing is repeated (--reps, default 3) and reported as min / median.
#include <cblas.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "potts_data.h"
#include "potts_estimators.h"
#include "pair_scores.hpp"
#include "potts_model.h"

using namespace am::potts;
using namespace am::potts::bench;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds of the calling thread (the single-thread timings: robust to other processes on a shared machine).
double cpu_thread() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

double cpu_self() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + 1e-6 * u.ru_utime.tv_usec + u.ru_stime.tv_sec + 1e-6 * u.ru_stime.tv_usec;
}

struct Stats {
  std::vector<double> v;
  void add(double x) { v.push_back(x); }
  double min() const { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }
  double median() const {
    if (v.empty()) return NAN;
    std::vector<double> s(v);
    std::sort(s.begin(), s.end());
    return s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  }
};

// Sustained dgemm rate (flop/s), best of a few repetitions.
double dgemm_rate(int n, int m_, int k, int reps) {
  std::vector<double> A((size_t)n * k, 0.5), B((size_t)k * m_, 0.25), C((size_t)n * m_, 0.0);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpu_thread();  // run with OPENBLAS_NUM_THREADS=1: the product stays on this thread
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, m_, k, 1.0, A.data(), n, B.data(), k, 0.0, C.data(), n);
    best = std::min(best, cpu_thread() - t0);
  }
  return 2.0 * n * m_ * k / best;
}

void case_loss(int L, int C, size_t M, double rate_sq, int reps) {
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  std::vector<int32_t> tok(M * L);
  for (auto &t : tok) t = (int32_t)am_rng_below(&rng, C);
  FactoredModel fm(L, C, 1);
  std::vector<double> th(fm.n_params()), g(th.size());
  am_rng_fill_normal(&rng, th.data(), th.size());
  fm.loss(th.data(), tok.data(), M, g.data());  // warm-up
  Stats t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpu_thread();
    fm.loss(th.data(), tok.data(), M, g.data());
    t.add(cpu_thread() - t0);
  }
  const double flops = fm.flops(M);
  std::printf("loss+grad L=%d C=%d M=%zu (1 thread, thread CPU time): min %.2f ms, median %.2f ms over %d; dgemm flops %.3g -> "
              "%.2f of the dgemm rate %.2f GF/s\n",
              L, C, M, t.min() * 1e3, t.median() * 1e3, reps, flops, flops / rate_sq / t.min(), rate_sq * 1e-9);
}

// Gibbs sweeps per second of one chain on one thread: the from-scratch reference sweep (the sampler before
// issue 15) and GibbsChain (incremental fields, vectorised conditionals), same model, same run.
void case_gibbs(int L, int C, int sweeps, int reps) {
  TaskOptions to;
  to.L = L;
  to.C = C;
  am_rng task_rng;
  am_rng_init(&task_rng, 0, 1);
  Model m;
  draw_model(nullptr, to, task_rng, 0, &m);
  std::vector<int32_t> s(L);
  std::vector<int> perm(L);
  std::vector<double> work(L + C);
  am_rng r;
  am_rng_init(&r, 5, 0);
  random_state(m, s.data(), &r);
  GibbsChain chain(m);
  chain.set_state(s.data());
  Stats ref, inc;
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = cpu_thread();
    for (int k = 0; k < sweeps; ++k) gibbs_sweep(m, s.data(), &r, perm.data(), work.data());
    ref.add((cpu_thread() - t0) / sweeps);
    t0 = cpu_thread();
    for (int k = 0; k < sweeps; ++k) chain.sweep(&r);
    inc.add((cpu_thread() - t0) / sweeps);
  }
  std::printf("Gibbs L=%d C=%d, sweeps/s (one chain, one thread, thread CPU time, min / median time over %d): reference %.0f / %.0f, "
              "incremental %.0f / %.0f -> %.2fx (best)\n",
              L, C, reps, 1.0 / ref.min(), 1.0 / ref.median(), 1.0 / inc.min(), 1.0 / inc.median(),
              ref.min() / inc.min());
}

// ---- plmc ---------------------------------------------------------------------------------------------------

const char kLetters[] = "ACDEFGHIKLMNPQRSTVWYBJOUXZ";  // colour c -> letter c (C <= 26)

bool write_plmc_fasta(const std::string &path, const int32_t *tok, size_t M, int L) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::string line(L, 'A');
  for (size_t mu = 0; mu < M; ++mu) {
    for (int i = 0; i < L; ++i) line[i] = kLetters[tok[mu * L + i]];
    std::fprintf(f, ">s%zu\n%s\n", mu, line.c_str());
  }
  return std::fclose(f) == 0;
}

// Runs plmc; returns its CPU seconds (user + sys of the child) or < 0 on failure.
double run_plmc(const std::string &bin, const std::string &fasta, const std::string &params, int C, double le,
                double *wall) {
  char les[32];
  std::snprintf(les, sizeof les, "%g", le);
  const std::string alphabet(kLetters, kLetters + C);
  const double t0 = now();
  std::fflush(stdout);  // the child must not inherit (and flush) our buffered output
  const pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout) || !std::freopen("/dev/null", "w", stderr)) _exit(127);
    execl(bin.c_str(), bin.c_str(), "-o", params.c_str(), "-a", alphabet.c_str(), "-t", "-1", "-le", les, "-lh",
          "0.01", fasta.c_str(), (char *)nullptr);
    _exit(127);
  }
  if (pid < 0) return -1;
  int status = 0;
  rusage u{};
  if (wait4(pid, &status, 0, &u) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  *wall = now() - t0;
  return u.ru_utime.tv_sec + 1e-6 * u.ru_utime.tv_usec + u.ru_stime.tv_sec + 1e-6 * u.ru_stime.tv_usec;
}

// e_ij(a, b) from plmc's parameter file (format of plmc's OutputParametersFull: float32 blocks), zero-sum gauged.
bool read_plmc_couplings(const std::string &path, int L, int C, size_t nseq, std::vector<double> &e) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  int32_t head[5];
  bool ok = std::fread(head, sizeof(int32_t), 5, f) == 5 && head[0] == L && head[1] == C;
  // theta, lh, le, lg, nEff (float), alphabet (C bytes), weights (nseq + skipped floats), focus seq (L bytes),
  // offsets (L int32), fi (L C floats), hi (L C floats), fij (pairs C C floats), eij (pairs C C floats)
  const size_t P = (size_t)L * (L - 1) / 2;
  const long skip = 5 * 4 + C + (long)(head[2] + head[3]) * 4 + L + 4L * L + 2L * 4 * L * C + (long)(4 * P * C * C);
  (void)nseq;
  ok = ok && std::fseek(f, skip, SEEK_CUR) == 0;
  std::vector<float> buf(P * C * C);
  ok = ok && std::fread(buf.data(), sizeof(float), buf.size(), f) == buf.size();
  std::fclose(f);
  if (!ok) return false;
  e.assign(buf.begin(), buf.end());
  zero_sum(e, L, C);
  return true;
}

// ---- the fit comparison ---------------------------------------------------------------------------------------

struct Case {
  const char *name;
  int L, C;
  size_t M;
  double beta;
};

// The estimator's collapsed fit as the pseudolikelihood plugin runs it (W = 0, V ~ N(0, 1e-4)).
struct AttnFit {
  double cpu = 0, wall = 0, corr = 0, fcorr = 0, loss = 0;
  int iterations = 0, evaluations = 0;
  std::string status, reason;
};

// trace != nullptr: the pair-score correlation after every iteration (untimed use only: it costs a gauge per step).
AttnFit fit_attn(const Model &m, const std::vector<int32_t> &tok, size_t M, const PLOptions &po,
                 std::vector<double> *trace = nullptr) {
  FactoredModel fm(m.L, m.C, 1);
  std::vector<double> th(fm.n_params(), 0.0);
  am_rng rng;
  am_rng_init(&rng, 0, 2);
  am_rng_fill_normal(&rng, fm.V(th.data(), 0), (size_t)m.C * m.C);
  for (int k = 0; k < m.C * m.C; ++k) fm.V(th.data(), 0)[k] *= 1e-2;
  AttnFit r;
  const double c0 = cpu_self(), t0 = now();
  const std::vector<double> t = truth_couplings(m), tf = frobenius_scores(t, m.C);
  IterationCallback cb = nullptr;
  if (trace)
    cb = [&](int, double, double, const double *x, double) {
      trace->push_back(pearson(frobenius_scores(factored_couplings(fm, x), m.C), tf));
      return true;
    };
  const LbfgsResult res = fit_factored(fm, th, tok.data(), M, po, cb);
  r.cpu = cpu_self() - c0;
  r.wall = now() - t0;
  r.iterations = res.iterations;
  r.evaluations = res.evaluations;
  r.loss = res.f;
  r.status = lbfgs_status_string(res.status);
  r.reason = res.reason;
  const std::vector<double> e = factored_couplings(fm, th.data());
  r.corr = pearson(e, t);
  r.fcorr = pearson(frobenius_scores(e, m.C), tf);
  return r;
}

void case_fit(const Case &c, int reps, int threads, const char *plmc, const std::vector<double> &les,
              const std::string &tmp) {
  TaskOptions to;
  to.L = c.L;
  to.C = c.C;
  to.beta = c.beta;
  am_rng task_rng;
  am_rng_init(&task_rng, 0, 1);  // the CLI's task stream for seed 0
  Model m;
  draw_model(nullptr, to, task_rng, 0, &m);
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = threads;
  am_context *ctx = nullptr;
  am_context_create(&ctx, &cs);
  am_host host;
  am_host_init(&host, ctx, nullptr, 0, 0, threads);
  const ParallelFor pf = host_parallel_for(am::sdk::Host(&host));
  SampleOptions so;
  so.parallel = pf;
  if (c.L > 50) so.thin = 10;  // protein-sized: one thinned chain (independent chains would take minutes)
  am_rng rtrain;
  am_rng_split(&task_rng, 2, &rtrain);
  std::vector<int32_t> tok;
  double t0 = now();
  sample(nullptr, m, c.M, so, rtrain, tok);
  std::printf("\n[%s] L=%d C=%d M=%zu beta=%g: sampled in %.1f s (%s); eps*(train) %.5f\n", c.name, c.L, c.C, c.M, c.beta, now() - t0,
              so.thin ? "one chain, thin 10" : "independent chains, 300 sweeps", epsilon_star(m, tok.data(), c.M));
  std::vector<double> truth = truth_couplings(m);
  // plmc first: its best pair score (over the -le values) is the accuracy attnmech's capped fit must reach.
  double plmc_best = NAN, plmc_best_cpu = NAN, plmc_best_cpu_med = NAN, plmc_best_le = NAN;
  if (plmc) {
    const std::string fasta = tmp + "/bench_potts_" + c.name + ".fasta";
    const std::string params = tmp + "/bench_potts_" + c.name + ".params";
    if (!write_plmc_fasta(fasta, tok.data(), c.M, c.L)) {
      std::printf("  plmc: cannot write %s\n", fasta.c_str());
    } else {
      for (double le : les) {
        Stats cpu, wall;
        double corr = NAN, fcorr = NAN;
        for (int k = 0; k < reps; ++k) {
          double w = 0;
          const double t = run_plmc(plmc, fasta, params, c.C, le, &w);
          if (t < 0) {
            std::printf("  plmc -le %g failed\n", le);
            break;
          }
          cpu.add(t);
          wall.add(w);
          std::vector<double> e;
          if (k == 0 && read_plmc_couplings(params, c.L, c.C, c.M, e)) {
            corr = pearson(e, truth);
            fcorr = pearson(frobenius_scores(e, c.C), frobenius_scores(truth, c.C));
          }
        }
        if (cpu.v.empty()) continue;
        std::printf("  plmc -le %-5g: CPU %.3f s min / %.3f median, wall %.3f / %.3f; corr: couplings %.4f, pair "
                    "scores %.4f\n",
                    le, cpu.min(), cpu.median(), wall.min(), wall.median(), corr, fcorr);
        std::printf("  RESULT %s plmc_le %g cpu_min %.4f cpu_med %.4f corr %.4f fcorr %.4f\n", c.name, le, cpu.min(),
                    cpu.median(), corr, fcorr);
        if (std::isfinite(fcorr) && !(fcorr <= plmc_best)) {
          plmc_best = fcorr;
          plmc_best_cpu = cpu.min();
          plmc_best_cpu_med = cpu.median();
          plmc_best_le = le;
        }
      }
      if (!std::getenv("BENCH_KEEP")) {  // BENCH_KEEP=1 keeps the FASTA and the last parameter file
        std::remove(fasta.c_str());
        std::remove(params.c_str());
      }
    }
  } else {
    std::printf("  plmc: skipped (set PLMC=/path/to/plmc)\n");
  }
  // attnmech: (0) the default stopping rule; (1) the long fit (the rule off: ftol 1e-10, 5000 iterations);
  // (2) with plmc: the same fit stopped at the first iteration whose pair score reaches plmc's best (found by an
  // untimed traced fit; L-BFGS is deterministic, so the capped fit ends at the same iterate) — time to equal accuracy.
  PLOptions fast, longfit, matched, unguarded, before;
  fast.parallel = longfit.parallel = matched.parallel = unguarded.parallel = before.parallel = pf;  // as the plugin
  longfit.stop_tol = 0.0;
  before.stop_tol = 0.1;  // the default before 3.8 (issue 41.5)
  unguarded.stop_progress = 0.0;  // the window rule alone (issue 39.5)
  int k_match = -1;
  if (std::isfinite(plmc_best)) {
    std::vector<double> trace;
    fit_attn(m, tok, c.M, longfit, &trace);
    for (size_t k = 0; k < trace.size() && k_match < 0; ++k)
      if (trace[k] >= plmc_best) k_match = static_cast<int>(k) + 1;
    std::printf("  attnmech pair score by iteration:");
    for (size_t k = 0; k < trace.size() && k < 40; ++k) std::printf(" %.3f", trace[k]);
    std::printf("%s\n", trace.size() > 40 ? " ..." : "");
    matched.max_iter = k_match;
  }
  // 0 default rule, 1 long fit (not at protein size: hours), 2 to plmc's accuracy, 3 the rule without its guard,
  // 4 the default before 3.8 (stop_tol 0.1)
  const PLOptions *variants[] = {&fast, &longfit, &matched, &unguarded, &before};
  for (int variant = 0; variant < 5; ++variant) {
    if ((variant == 1 && c.L > 50) || (variant == 2 && k_match <= 0) || (variant == 3 && c.L <= 50)) continue;
    const PLOptions &po = *variants[variant];
    Stats cpu, wall;
    AttnFit r;
    for (int k = 0; k < (variant == 1 ? 1 : reps); ++k) {
      r = fit_attn(m, tok, c.M, po);
      cpu.add(r.cpu);
      wall.add(r.wall);
    }
    const char *labels[] = {"stop rule", "long fit", "to plmc's", "no guard", "tol 0.1"};
    const char *label = labels[variant];
    std::printf("  attnmech %-10s (%d threads): CPU %.3f s min / %.3f median, wall %.3f / %.3f; %d it, %d evals, "
                "loss %.6f, corr: couplings %.4f, pair scores %.4f [%s]\n    stopped: %s\n",
                label, threads, cpu.min(), cpu.median(), wall.min(), wall.median(), r.iterations, r.evaluations, r.loss,
                r.corr, r.fcorr, r.status.c_str(), r.reason.c_str());
    if (variant == 0)
      std::printf("  RESULT %s attnmech cpu_min %.4f cpu_med %.4f corr %.4f fcorr %.4f\n", c.name, cpu.min(),
                  cpu.median(), r.corr, r.fcorr);
    if ((variant == 0 || variant == 4) && std::isfinite(plmc_best))
      std::printf("  RATIO %s %s: plmc best (-le %g, pair %.4f) / attnmech (pair %.4f) = %.1fx min, %.1fx median\n",
                  c.name, variant == 0 ? "default rule" : "rule before 3.8 (stop_tol 0.1)", plmc_best_le, plmc_best,
                  r.fcorr, plmc_best_cpu / cpu.min(), plmc_best_cpu_med / cpu.median());
    if (variant == 2)
      std::printf("  RATIO %s equal accuracy: plmc best (-le %g, pair %.4f) / attnmech after %d iterations (pair "
                  "%.4f) = %.1fx\n",
                  c.name, plmc_best_le, plmc_best, k_match, r.fcorr, plmc_best_cpu / cpu.min());
  }
  am_context_destroy(&ctx);
}

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = s.find(',', p);
    out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = false;
  int reps = 3, threads = 2;
  std::string cases = "1000,3000,10000,protein";
  for (int k = 1; k < argc; ++k) {
    if (!std::strcmp(argv[k], "--quick")) quick = true;
    else if (!std::strcmp(argv[k], "--reps") && k + 1 < argc) reps = std::atoi(argv[++k]);
    else if (!std::strcmp(argv[k], "--threads") && k + 1 < argc) threads = std::atoi(argv[++k]);
    else if (!std::strcmp(argv[k], "--cases") && k + 1 < argc) cases = argv[++k];
  }
  std::printf("bench_potts: %d repetitions, min / median (the machine may be shared: compare figures of one run)\n",
              reps);
  const double rate = dgemm_rate(600, 600, 600, quick ? 5 : 20);
  case_loss(20, 20, 3000, rate, quick ? 3 : 20);
  case_loss(200, 21, 5000, rate, quick ? 1 : 5);
  case_gibbs(20, 20, quick ? 2000 : 20000, reps);
  case_gibbs(200, 21, quick ? 20 : 200, reps);
  if (quick) return 0;
  const char *plmc = std::getenv("PLMC");
  if (plmc && access(plmc, X_OK) != 0) {
    std::printf("PLMC=%s is not executable: plmc skipped\n", plmc);
    plmc = nullptr;
  }
  std::vector<double> les = {100, 30, 10};
  if (const char *s = std::getenv("PLMC_LE")) {
    les.clear();
    for (const auto &x : split(s)) les.push_back(std::atof(x.c_str()));
  }
  const std::string tmp = std::getenv("BENCH_TMP") ? std::getenv("BENCH_TMP") : "/tmp";
  for (const auto &name : split(cases)) {
    if (name == "protein") {
      // β = 1: at β = 2 the L = 200 Sinkhorn model orders (ε* 0.23 nats, top colour frequency > 0.5)
      case_fit({"protein", 200, 21, 5000, 1.0}, reps, threads, plmc, les, tmp);
    } else {
      static std::string label;
      label = "M" + name;
      case_fit({label.c_str(), 20, 20, (size_t)std::atol(name.c_str()), 2.0}, reps, threads, plmc, les, tmp);
    }
  }
  return 0;
}
