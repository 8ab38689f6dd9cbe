// attnmech scale benchmark: the kernel alignment's eigenproblem on K MPI ranks — the 30 leading eigenpairs
// (eigenvectors too) of a P×P symmetric positive semi-definite kernel — solved by ScaLAPACK's pdsyevr the way
// plugins/common/scalapack/kernels.cpp calls it, and by ELPA's one-stage and two-stage solvers (docs/scale.md).
// The kernel is K = Z Zᵀ + 1e-3·I with Z a P×256 Gaussian matrix (the same seed on every rank), block-cyclic in
// 64×64 blocks on the engine's grid. Each repetition runs the three methods in turn on a fresh copy of K.
// Per rank and method: CPU seconds (getrusage, user + system) and wall seconds of the call, min and median over
// the repetitions, and the rise of the resident set over the call (VmHWM reset through /proc/self/clear_refs,
// minus VmRSS at the start; outputs and workspace are allocated inside the call); then the 30 eigenvalues against
// pdsyevr's and the residuals max ‖K v − λ v‖ / λ₁ of the eigenvectors. ELPA returns the lowest `nev` eigenpairs,
// so it is given −K (negated with the copy, outside the measurement). CPU time counts Open MPI's busy wait.
//   OPENBLAS_NUM_THREADS=1 mpirun -np 2 build/bench/scale/bench_eigen 4000 3
// ELPA takes its defaults from ELPA_DEFAULT_<key> variables (e.g. ELPA_DEFAULT_real_kernel; mpirun -x to pass them).
// Usage: bench_eigen P [reps (3)]
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <elpa/elpa.h>

#include "dist.hpp"
#include "scale_util.hpp"

namespace {

namespace sp = am::scalapack;
using sp::kOne;

constexpr int kZcols = 256;      // Z's columns: the kernel's rank before the shift
constexpr int kWant = 30;        // leading eigenpairs wanted
constexpr double kShift = 1e-3;  // added to the diagonal
constexpr int kMethods = 3;
constexpr int kBlock = 64;       // the block size (the engine's default, am_context_scalapack_block)
const char *const kNames[kMethods] = {"pdsyevr", "elpa 1-stage", "elpa 2-stage"};

int my_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "bench_eigen: rank %d: %s\n", my_rank(), what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

// The name of an ELPA error code. elpa.h declares elpa_strerr without C linkage, so a C++ caller does not link
// with it; the names come from the header's own list instead.
const char *elpa_error_name(int err) {
#define AM_ELPA_ERROR_NAME(name, value) \
  if (err == (value)) return #name;
  ELPA_FOR_ALL_ERRORS(AM_ELPA_ERROR_NAME)
#undef AM_ELPA_ERROR_NAME
  return "unknown ELPA error";
}

void elpa_ok(int err, const char *what) {
  if (err == ELPA_OK) return;
  char m[300];
  std::snprintf(m, sizeof m, "ELPA %s failed: %s (error %d)", what, elpa_error_name(err), err);
  die(m);
}

// A /proc/self/status field in KiB ("VmRSS:", "VmHWM:"); -1 when absent.
double status_kib(const char *key) {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double v = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0) v = std::strtod(line + n, nullptr);
  std::fclose(f);
  return v;
}

void reset_peak() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f || std::fputs("5", f) < 0) die("cannot reset the peak RSS through /proc/self/clear_refs");
  std::fclose(f);
}

double rusage_cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Sample {
  double cpu = 0, wall = 0, rss_mb = 0;
};

// One call of f on every rank: CPU up to the end of this rank's call, wall up to the end of the slowest rank's.
template <class F>
Sample measure(F &&f) {
  malloc_trim(0);
  MPI_Barrier(MPI_COMM_WORLD);
  reset_peak();
  const double rss0 = status_kib("VmRSS:"), c0 = rusage_cpu();
  const auto w0 = std::chrono::steady_clock::now();
  f();
  Sample s;
  s.cpu = rusage_cpu() - c0;
  s.rss_mb = (status_kib("VmHWM:") - rss0) / 1024.0;
  MPI_Barrier(MPI_COMM_WORLD);
  s.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return s;
}

// K = Z Zᵀ + kShift·I, both triangles (ELPA reads the whole matrix, pdsyevr its lower triangle).
sp::Dist make_kernel(const sp::Grid &g, int P) {
  const std::vector<double> Zw = scale_bench::gaussian(size_t(P) * kZcols, 11, 1.0 / std::sqrt(double(kZcols)));
  sp::Dist Z, K;
  sp::dist_init(g, Z, P, kZcols);
  sp::scatter(g, Z, Zw.data(), size_t(P));
  sp::dist_init(g, K, P, P);
  const int r = kZcols;
  const double one = 1.0, zero = 0.0;
  pdgemm_("N", "T", &P, &P, &r, &one, Z.a.data(), &kOne, &kOne, Z.desc, Z.a.data(), &kOne, &kOne, Z.desc, &zero,
          K.a.data(), &kOne, &kOne, K.desc);
  sp::for_diagonal(g, K, [&K](int i, int j) { K.a[i + size_t(j) * K.lld] += kShift; });
  return K;
}

// A method's eigenpairs: column first + c of Z (0-based) is an eigenvector with eigenvalue sign·w[first + c],
// c = 0 … kWant − 1.
struct Out {
  sp::Dist Z;
  std::vector<double> w;
  int first = 0;
  double sign = 1;
};

// PDSYEVR's documented minimum workspace for k eigenvectors of an n × n matrix (as kernels.cpp).
void pdsyevr_min_work(const sp::Grid &g, double n, double k, double *lwork, double *liwork) {
  const double nb = g.nb, nn = std::max({n, nb, 2.0});
  const double np0 = sp::numroc_d(nn, g.nb, 0, g.nprow), mq0 = sp::numroc_d(std::max({k, nb, 2.0}), g.nb, 0, g.npcol);
  const double procs = double(g.nprow) * g.npcol;
  *lwork = 2 + 5 * n + std::max(18 * nn, np0 * mq0 + 2 * nb * nb) + (2 + std::ceil(k / procs)) * nn;
  *liwork = 12 * std::max({n, procs + 1, 4.0}) + 2 * n;
}

// The engine's call (kernels.cpp leading_eigen): the max(kWant, one block) largest eigenpairs by index range, the
// documented minimum workspace (the query's size makes PDSYNTRD gather the matrix on one process on 2–3 ranks).
// A is destroyed.
void run_pdsyevr(const sp::Grid &g, sp::Dist &A, Out &o) {
  const int P = A.m, kk = std::min(P, std::max(kWant, g.nb)), il = P - kk + 1, query = -1;
  sp::dist_init(g, o.Z, P, P);
  o.w.assign(size_t(P), 0.0);
  const double vl = 0, vu = 0;
  int found = 0, nz = 0, info = 0, iq = 0;
  double wq = 0;
  pdsyevr_("V", "I", "L", &P, A.a.data(), &kOne, &kOne, A.desc, &vl, &vu, &il, &P, &found, &nz, o.w.data(),
           o.Z.a.data(), &kOne, &kOne, o.Z.desc, &wq, &query, &iq, &query, &info, 1, 1, 1);
  double lmin = 0, limin = 0;
  pdsyevr_min_work(g, P, kk, &lmin, &limin);
  const int lwork = int(std::min(double(INT_MAX), lmin));
  const int liwork = int(std::min(double(INT_MAX), std::max(double(iq), limin)));
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  pdsyevr_("V", "I", "L", &P, A.a.data(), &kOne, &kOne, A.desc, &vl, &vu, &il, &P, &found, &nz, o.w.data(),
           o.Z.a.data(), &kOne, &kOne, o.Z.desc, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  if (info != 0 || found != kk || nz != kk) {
    char m[200];
    std::snprintf(m, sizeof m, "pdsyevr failed (INFO = %d, %d and %d of %d eigenpairs)", info, found, nz, kk);
    die(m);
  }
  o.first = kk - kWant;  // ascending: the largest kWant are the last found
  o.sign = 1;
}

// ELPA on −K (in A, destroyed): its lowest kWant eigenpairs, all eigenvalues in w (ascending), the eigenvectors in
// the first kWant columns of Z (which ELPA wants as large as A).
void run_elpa(const sp::Grid &g, sp::Dist &A, int solver, Out &o) {
  int err = 0;
  elpa_t h = elpa_allocate(&err);
  elpa_ok(err, "elpa_allocate");
  const struct {
    const char *key;
    int value;
  } keys[] = {{"na", A.m},
              {"nev", kWant},
              {"local_nrows", A.mloc},
              {"local_ncols", A.nloc},
              {"nblk", g.nb},
              {"mpi_comm_parent", int(MPI_Comm_c2f(MPI_COMM_WORLD))},
              {"process_row", g.myrow},
              {"process_col", g.mycol},
              {"blacs_context", g.ctxt}};
  for (const auto &kv : keys) {
    elpa_set(h, kv.key, kv.value, &err);
    elpa_ok(err, kv.key);
  }
  elpa_ok(elpa_setup(h), "elpa_setup");
  elpa_set(h, "solver", solver, &err);
  elpa_ok(err, "solver");
  sp::dist_init(g, o.Z, A.m, A.m);
  o.w.assign(size_t(A.m), 0.0);
  elpa_eigenvectors(h, A.a.data(), o.w.data(), o.Z.a.data(), &err);
  elpa_ok(err, "elpa_eigenvectors");
  elpa_deallocate(h, &err);
  elpa_ok(err, "elpa_deallocate");
  o.first = 0;
  o.sign = -1;
}

void run_method(int m, const sp::Grid &g, sp::Dist &A, Out &o) {
  if (m == 0)
    run_pdsyevr(g, A, o);
  else
    run_elpa(g, A, m == 1 ? ELPA_SOLVER_1STAGE : ELPA_SOLVER_2STAGE, o);
}

struct Check {
  std::vector<double> top;  // the kWant eigenvalues, decreasing
  double residual = 0;      // max over them of ‖K v − λ v‖ / λ₁
};

Check check_pairs(const sp::Grid &g, const sp::Dist &K, const Out &o) {
  const int P = K.m, n = kWant, jz = o.first + 1;
  const double one = 1.0, zero = 0.0;
  sp::Dist V, R;
  sp::dist_init(g, V, P, n);
  sp::dist_init(g, R, P, n);
  pdgeadd_("N", &P, &n, &one, o.Z.a.data(), &kOne, &jz, o.Z.desc, &zero, V.a.data(), &kOne, &kOne, V.desc);
  pdgemm_("N", "N", &P, &n, &P, &one, K.a.data(), &kOne, &kOne, K.desc, V.a.data(), &kOne, &kOne, V.desc, &zero,
          R.a.data(), &kOne, &kOne, R.desc);
  std::vector<double> lam(static_cast<size_t>(n)), ss(static_cast<size_t>(n), 0.0);
  for (int c = 0; c < n; ++c) lam[size_t(c)] = o.sign * o.w[size_t(o.first + c)];
  for (int j = 0; j < R.nloc; ++j) {
    const size_t c = size_t(sp::global_of(j, g.nb, g.mycol, g.npcol));
    for (int i = 0; i < R.mloc; ++i) {
      const size_t at = size_t(i) + size_t(j) * size_t(R.lld);
      const double r = R.a[at] - lam[c] * V.a[at];
      ss[c] += r * r;
    }
  }
  sp::sum_all(ss.data(), ss.size());
  Check ch;
  ch.top = lam;
  std::sort(ch.top.begin(), ch.top.end(), [](double a, double b) { return a > b; });
  for (double s : ss) ch.residual = std::max(ch.residual, std::sqrt(s) / ch.top[0]);
  return ch;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr int kStats = 7;  // per rank and method: CPU min, median; wall min, median; RSS rise min, median, max

std::vector<double> rank_stats(const std::vector<Sample> (&samples)[kMethods]) {
  std::vector<double> st;
  for (const auto &ss : samples) {
    std::vector<double> cpu, wall, rss;
    for (const Sample &s : ss) {
      cpu.push_back(s.cpu);
      wall.push_back(s.wall);
      rss.push_back(s.rss_mb);
    }
    st.insert(st.end(), {*std::min_element(cpu.begin(), cpu.end()), median(cpu),
                         *std::min_element(wall.begin(), wall.end()), median(wall),
                         *std::min_element(rss.begin(), rss.end()), median(rss),
                         *std::max_element(rss.begin(), rss.end())});
  }
  return st;
}

// Rank 0: a line per method and rank, then the ratios to pdsyevr (CPU: the ranks' medians summed; wall: median;
// memory: the largest rise of any rank and repetition).
void print_table(int P, int K, int reps, const std::vector<double> &all, const Check (&checks)[kMethods]) {
  const char *threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("P = %d, K = %d ranks, %d × %d block-cyclic blocks, %d repetitions, OPENBLAS_NUM_THREADS=%s; the %d "
              "leading eigenpairs of Z Zᵀ + %g·I (Z: P × %d); λ₁ = %.6g, λ₃₀ = %.6g\n", P, K, kBlock,
              kBlock, reps, threads ? threads : "unset", kWant, kShift, kZcols, checks[0].top[0],
              checks[0].top[size_t(kWant - 1)]);
  std::printf("%-13s %4s %9s %9s %9s %9s %9s %9s %9s %10s %10s\n", "method", "rank", "cpu min", "cpu med", "wall min",
              "wall med", "rss min", "rss med", "rss max", "eig rdiff", "residual");
  double cpu[kMethods] = {}, wall[kMethods] = {}, rss[kMethods] = {};
  for (int m = 0; m < kMethods; ++m) {
    double rd = 0;
    for (int c = 0; c < kWant; ++c) {
      const double ref = checks[0].top[size_t(c)];
      rd = std::max(rd, std::fabs(checks[m].top[size_t(c)] - ref) / std::fabs(ref));
    }
    for (int r = 0; r < K; ++r) {
      const double *s = &all[size_t(r) * kMethods * kStats + size_t(m) * kStats];
      std::printf("%-13s %4d %8.3fs %8.3fs %8.3fs %8.3fs %7.1fMB %7.1fMB %7.1fMB %10.2e %10.2e\n", kNames[m], r, s[0],
                  s[1], s[2], s[3], s[4], s[5], s[6], rd, checks[m].residual);
      cpu[m] += s[1];
      wall[m] = std::max(wall[m], s[3]);
      rss[m] = std::max(rss[m], s[6]);
    }
  }
  for (int m = 1; m < kMethods; ++m)
    std::printf("%s / pdsyevr: CPU %.3f, wall %.3f, peak RSS rise %.3f\n", kNames[m], cpu[m] / cpu[0],
                wall[m] / wall[0], rss[m] / rss[0]);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int K = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  const int P = argc > 1 ? std::atoi(argv[1]) : 0, reps = argc > 2 ? std::atoi(argv[2]) : 3;
  if (P < kWant || reps < 1) die("usage: bench_eigen P [reps (3)], P ≥ 30");
  if (elpa_init(ELPA_API_VERSION) != ELPA_OK) die("ELPA does not support the API version of its header");
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);  // a fixed threshold: large blocks go back to the system when freed
  const sp::Grid g = sp::make_grid(kBlock);
  const sp::Dist Kd = make_kernel(g, P);
  std::vector<Sample> samples[kMethods];
  Check checks[kMethods];
  for (int rep = 0; rep < reps; ++rep)
    for (int m = 0; m < kMethods; ++m) {
      sp::Dist A = Kd;
      if (m > 0)
        for (double &x : A.a) x = -x;
      Out o;
      samples[m].push_back(measure([&] { run_method(m, g, A, o); }));
      A.a = std::vector<double>();
      if (rep == 0) checks[m] = check_pairs(g, Kd, o);
    }
  const std::vector<double> mine = rank_stats(samples);
  std::vector<double> all(mine.size() * size_t(K));
  MPI_Gather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), int(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (my_rank() == 0) print_table(P, K, reps, all, checks);
  int err = 0;
  elpa_uninit(&err);
  Cblacs_gridexit(g.ctxt);
  MPI_Finalize();
  return 0;
}
