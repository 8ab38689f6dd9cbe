// attnmech — a distributed run's kernels phase and memory (engine.hpp): the training kernels' blocks, minima and
// leading eigenpairs computed block-cyclically (from the kernel's factor by pdgeqrf, or by pdsyevr on the kernel),
// the engine's per-rank memory model, and the checks every rank agrees on.
#include <sys/resource.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnmech/metrics.h"
#include "dist.hpp"
#include "engine.hpp"

namespace am::scalapack {

namespace {

// PDSYEVR's documented minimum workspace (its LWORK and LIWORK notes) for k eigenvectors of an n × n matrix.
void pdsyevr_min_work(const Grid &g, double n, double k, double *lwork, double *liwork) {
  const double nb = g.nb, nn = std::max({n, nb, 2.0});
  const double np0 = numroc_d(nn, g.nb, 0, g.nprow), mq0 = numroc_d(std::max({k, nb, 2.0}), g.nb, 0, g.npcol);
  const double procs = double(g.nprow) * g.npcol;
  *lwork = 2 + 5 * n + std::max(18 * nn, np0 * mq0 + 2 * nb * nb) + (2 + std::ceil(k / procs)) * nn;
  *liwork = 12 * std::max({n, procs + 1, 4.0}) + 2 * n;
}

// The same verdict on every rank for a condition each rank tested on its part.
bool all_ranks(bool mine) {
  int in = mine ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return out != 0;
}

// From the lower triangle of the kernel K (its upper part is not the kernel's): the rows and columns `ex` as an m×m
// block and K's smallest element, the same bits on every rank (each entry comes from the one rank holding it; the
// minimum is exact in any order).
void block_and_min(const Shared &e, const Dist &K, const std::vector<size_t> &ex, double *block, double *min) {
  const size_t m = ex.size();
  std::vector<int> pos(size_t(e.P), -1);
  for (size_t a = 0; a < m; ++a) pos[ex[a]] = int(a);
  std::vector<double> B(m * m, 0.0);
  double lo = INFINITY;
  for (int j = 0; j < K.nloc; ++j) {
    const int gj = global_of(j, e.g.nb, e.g.mycol, e.g.npcol);
    for (int i = 0; i < K.mloc; ++i) {
      const int gi = global_of(i, e.g.nb, e.g.myrow, e.g.nprow);
      if (gi < gj) continue;
      const double v = K.a[i + size_t(j) * K.lld];
      lo = std::min(lo, v);
      if (pos[gi] >= 0 && pos[gj] >= 0) B[size_t(pos[gi]) + m * size_t(pos[gj])] = v;
    }
  }
  if (m) sum_all(B.data(), B.size());
  for (size_t b = 0; b < m; ++b)  // ex ascending: entry (a, b) with a ≥ b is in the lower triangle
    for (size_t a = 0; a < b; ++a) B[a + m * b] = B[b + m * a];
  std::copy(B.begin(), B.end(), block);
  MPI_Allreduce(&lo, min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
}

// The eigenpairs pdsyevr is asked for to return k: at least one block's worth (ScaLAPACK 2.x passes the back-
// transformation PDORMTR a workspace sized from the number of eigenvectors, too small for fewer than a block's
// columns: "On entry to PDORMTR parameter number 16 had an illegal value"), at most P.
double eigenpairs_for(double P, double k, int nb) { return std::min(P, std::max(k, double(nb))); }

// The k leading eigenvalues of K (destroyed) and |v·y|/|y| of their eigenvectors, largest first.
am_status leading_eigen(am_context *ctx, Shared &e, Dist &K, size_t k, double *overlaps, double *eigenvalues) {
  bool finite = true;
  for (int j = 0; j < K.nloc; ++j)
    for (int i = 0; i < K.mloc; ++i) finite = finite && std::isfinite(K.a[i + size_t(j) * K.lld]);
  if (!all_ranks(finite)) return am_context_fail(ctx, AM_ERR_NONFINITE, "kernel has non-finite entries");
  Dist Z;  // pdsyevr writes the eigenvectors into a P × P matrix (its Z argument is N × N whatever the range)
  dist_init(e.g, Z, e.P, e.P);
  const int kk = int(eigenpairs_for(e.P, double(k), e.g.nb)), il = e.P - kk + 1;
  const double vl = 0, vu = 0;
  int found = 0, nz = 0, info = 0;
  std::vector<double> w(static_cast<size_t>(e.P));
  // The documented minimum workspace, not a query's "optimal" size: with that much PDSYNTRD copies the whole matrix
  // to a √K × √K grid — on 2 or 3 ranks to one process, a whole P×P — and reduces it there.
  double lmin = 0, limin = 0;
  pdsyevr_min_work(e.g, e.P, double(kk), &lmin, &limin);
  const int lwork = int(std::min(double(INT_MAX), lmin)), liwork = int(std::min(double(INT_MAX), limin));
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  pdsyevr_("V", "I", "L", &e.P, K.a.data(), &kOne, &kOne, K.desc, &vl, &vu, &il, &e.P, &found, &nz, w.data(), Z.a.data(),
           &kOne, &kOne, Z.desc, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  if (!all_ranks(info == 0 && found == kk && nz == kk))
    return am_context_fail(ctx, AM_ERR_INTERNAL, "ScaLAPACK pdsyevr failed on the kernel (INFO = %d, %d of %d "
                           "eigenpairs)", info, found, kk);
  work = std::vector<double>();
  K.a = std::vector<double>();  // destroyed by pdsyevr
  const int kn = int(k), jz = kk - kn + 1;  // the k largest: the last k of the kk found (ascending)
  const double one = 1.0, zero = 0.0;
  Dist ov;  // Zᵀy over those columns
  dist_init(e.g, ov, kn, 1);
  pdgemm_("T", "N", &kn, &kOne, &e.P, &one, Z.a.data(), &kOne, &jz, Z.desc, e.y.a.data(), &kOne, &kOne, e.y.desc,
          &zero, ov.a.data(), &kOne, &kOne, ov.desc);
  std::vector<double> v(k);
  gather(e.g, ov, v.data(), false);
  double yy = 0;
  for (int i = 0; i < e.y.mloc && e.y.nloc > 0; ++i) yy += e.y.a[i] * e.y.a[i];
  sum_all(&yy, 1);
  MPI_Bcast(w.data(), kk, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // every rank holds W; rank 0's bits for all of them
  const double ny = std::sqrt(yy);
  for (size_t r = 0; r < k; ++r) {
    const size_t c = k - 1 - r;  // ascending: the largest first
    overlaps[r] = ny > 0 ? std::fabs(v[c]) / ny : 0.0;
    eigenvalues[r] = w[size_t(jz - 1) + c];
  }
  return AM_OK;
}

// ScaLAPACK's workspace query (LWORK = −1) answer as a size, at least 1.
int queried(double w) { return std::max(1, int(std::min(double(INT_MAX), std::ceil(w)))); }

// Q's Householder vectors and R in Z (P × r, destroyed), τ, and Qᵀy (P × 1) for the thin QR Z = Q R.
am_status thin_qr(am_context *ctx, Shared &e, Dist &Z, std::vector<double> &tau, Dist &qy) {
  const int r = Z.n;
  tau.assign(size_t(std::max(1, Z.nloc)), 0.0);  // LOCc(JA + min(M, N) − 1) ≤ Z's local columns
  int info = 0, lwork = -1;
  double q = 0;
  pdgeqrf_(&e.P, &r, Z.a.data(), &kOne, &kOne, Z.desc, tau.data(), &q, &lwork, &info);
  lwork = queried(q);
  std::vector<double> work(static_cast<size_t>(lwork));
  pdgeqrf_(&e.P, &r, Z.a.data(), &kOne, &kOne, Z.desc, tau.data(), work.data(), &lwork, &info);
  if (!all_ranks(info == 0))
    return am_context_fail(ctx, AM_ERR_INTERNAL, "ScaLAPACK pdgeqrf failed on the kernel's factor (INFO = %d)", info);
  dist_init(e.g, qy, e.P, 1);
  qy.a = e.y.a;
  lwork = -1;
  pdormqr_("L", "T", &e.P, &kOne, &r, Z.a.data(), &kOne, &kOne, Z.desc, tau.data(), qy.a.data(), &kOne, &kOne, qy.desc,
           &q, &lwork, &info, 1, 1);
  lwork = queried(q);
  work.assign(static_cast<size_t>(lwork), 0.0);
  pdormqr_("L", "T", &e.P, &kOne, &r, Z.a.data(), &kOne, &kOne, Z.desc, tau.data(), qy.a.data(), &kOne, &kOne, qy.desc,
           work.data(), &lwork, &info, 1, 1);
  if (!all_ranks(info == 0))
    return am_context_fail(ctx, AM_ERR_INTERNAL, "ScaLAPACK pdormqr failed on the kernel's factor (INFO = %d)", info);
  return AM_OK;
}

// The k leading eigenvalues of K_U = Z Zᵀ (Z = Ξ_w·L, P × r, k ≤ r < P; destroyed) and the overlaps of their
// eigenvectors, as the serial am_theory_alignment (libcore/src/alignment.cpp) takes them: after the thin QR Z = Q R,
// K_U's eigenvalues are those of R Rᵀ (r×r) and v·y = w·(Qᵀy). R Rᵀ (one PSYRK) and Qᵀy are gathered on every
// rank; rank 0 takes the eigenpairs (am_kernel_alignment of R Rᵀ against Qᵀy's first r entries, whose norm then
// rescales the overlaps to |y|) and broadcasts them: the same bits on every rank.
am_status factor_eigen(am_context *ctx, Shared &e, Dist &Z, size_t k, double *overlaps, double *eigenvalues) {
  const int r = Z.n;
  std::vector<double> tau;
  Dist qy, R, B;
  if (am_status st = thin_qr(ctx, e, Z, tau, qy)) return st;
  dist_init(e.g, R, r, r);  // R: the upper triangle of Z's first r rows (the rest zero)
  pdlacpy_("U", &r, &r, Z.a.data(), &kOne, &kOne, Z.desc, R.a.data(), &kOne, &kOne, R.desc, 1);
  Z.a = std::vector<double>();
  dist_init(e.g, B, r, r);
  const double one = 1.0, zero = 0.0;
  pdsyrk_("L", "N", &r, &r, &one, R.a.data(), &kOne, &kOne, R.desc, &zero, B.a.data(), &kOne, &kOne, B.desc);
  std::vector<double> G(size_t(r) * size_t(r)), c(size_t(e.P));
  gather(e.g, B, G.data(), true);
  gather(e.g, qy, c.data(), false);
  double yy = 0, cc = 0;
  for (int i = 0; i < e.y.mloc && e.y.nloc > 0; ++i) yy += e.y.a[i] * e.y.a[i];
  sum_all(&yy, 1);
  for (int i = 0; i < r; ++i) cc += c[size_t(i)] * c[size_t(i)];
  am_status st = AM_OK;
  if (e.g.rank == 0) {
    st = am_kernel_alignment(ctx, G.data(), size_t(r), size_t(r), c.data(), k, overlaps, eigenvalues);
    const double scale = yy > 0 ? std::sqrt(cc / yy) : 0.0;  // |w·c|/|c| → |w·c|/|y|
    for (size_t i = 0; i < k && st == AM_OK; ++i) overlaps[i] *= scale;
  }
  if ((st = agree(ctx, st))) return st;
  MPI_Bcast(overlaps, int(k), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(eigenvalues, int(k), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return AM_OK;
}

}  // namespace

void drop_factor(Shared &s) {
  s.factored = false;
  s.gamma.a = std::vector<double>();
}

am_status kernel_summary(am_context *ctx, Shared &s, const double *U1, const std::vector<size_t> &examples, size_t k,
                         double *block, double *min, double *overlaps, double *eigenvalues) {
  return guarded([&]() -> am_status {
    if (k > size_t(s.P))
      return am_context_fail(ctx, AM_ERR_SHAPE, "asked for %zu principal components of a %d×%d kernel", k, s.P, s.P);
    s.factored = false;
    // The kernel itself only for the blocks the plots draw; the eigenpairs from its factor when it is narrower
    // than the kernel and U1 has a Cholesky factor (factor_eigen), else from the kernel (leading_eigen).
    const bool blocks = !examples.empty();
    if (blocks) {
      build_kernel(s, U1, s.gamma);
      block_and_min(s, s.gamma, examples, block, min);
    }
    if (k == 0) return AM_OK;
    std::vector<double> L;
    if (size_t(s.NH) < size_t(s.P) && k <= size_t(s.NH) && u_cholesky(s, U1, &L)) {
      s.gamma.a = std::vector<double>();
      Dist Z;
      combine_paths(s, L.data(), true, Z);
      return factor_eigen(ctx, s, Z, k, overlaps, eigenvalues);
    }
    if (!blocks) build_kernel(s, U1, s.gamma);
    return leading_eigen(ctx, s, s.gamma, k, overlaps, eigenvalues);
  });
}

am_status prekernel_summary(am_context *ctx, Shared &s, size_t path, const std::vector<size_t> &examples,
                            double *block, double *min) {
  return guarded([&]() -> am_status {
    if (path >= size_t(s.H)) return am_context_fail(ctx, AM_ERR_SHAPE, "path %zu outside [0, %d)", path, s.H);
    s.factored = false;
    dist_init(s.g, s.gamma, s.P, s.P);
    const double h = s.H, zero = 0.0;
    const int ja = 1 + s.N0 * int(path);
    pdsyrk_("L", "N", &s.P, &s.N0, &h, s.xi.a.data(), &kOne, &ja, s.xi.desc, &zero, s.gamma.a.data(), &kOne, &kOne,
            s.gamma.desc);
    block_and_min(s, s.gamma, examples, block, min);
    return AM_OK;
  });
}

double rank_bytes(size_t P, size_t N0, size_t H, size_t Pt, bool subsets, bool kernels, size_t k, int block) {
  const Grid g = grid_shape(ranks(), rank(), block);
  const double p = double(P), nh = double(N0) * double(H), t = double(Pt);
  const auto L = [&g](double m, double n) { return local_doubles(g, m, n); };
  const double resident = L(p, nh) + 2 * L(p, 1);       // ξ, y, α
  const double gamma = L(p, p);                          // Γ's factor (the kernels' phase reuses it)
  const double solve = gamma + L(p, nh) + L(nh, nh) + L(nh, 1);  // whitening: B̃ = L⁻¹Ξ_w, M, b (Z_w before it)
  // Predictions: Z_w, the test inputs' ξ and the train × test kernel beside Γ; a path subset's engine (at most H
  // paths) does the same beside the main engine's resident part (whose factor is dropped by then).
  const double predict = t > 0 ? gamma + L(p, t) + L(p, nh) + L(t, nh) + L(t, 1) : 0;
  const double subset = subsets && t > 0 ? resident + predict : 0;
  double kern = 0;
  if (kernels) {
    kern = gamma + L(p, nh);  // building one kernel: Z_w beside it
    if (k > 0 && nh < p && double(k) <= nh) {  // from the factor: Z, τ, Qᵀy, R and R Rᵀ, both gathered, pdgeqrf's work
      const double r = nh, qr_work = g.nb * (numroc_d(p, g.nb, 0, g.nprow) + numroc_d(r, g.nb, 0, g.npcol) + g.nb);
      kern = std::max(kern, L(p, r) + L(r, 1) + L(p, 1) + 2 * L(r, r) + 2 * r * r + p + qr_work);
      kern = std::max(kern, 3 * r * r + 2 * r * double(k) + 40 * r + p);  // rank 0's am_kernel_alignment of R Rᵀ
    } else if (k > 0) {
      double lw = 0, liw = 0;
      pdsyevr_min_work(g, p, eigenpairs_for(p, double(k), g.nb), &lw, &liw);
      kern = std::max(kern, gamma + L(p, p) + lw + liw / 2 + p + L(double(k), 1));
    }
  }
  return 8.0 * (resident + std::max({solve, predict, subset, kern}));
}

am_status agree(am_context *ctx, am_status mine) {
  if (!distributing()) return mine;
  const int me = rank();
  int bad = mine != AM_OK ? me : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return AM_OK;
  int code = int(mine), len = 0;
  std::string msg;
  if (me == first) {
    const char *m = am_context_last_error(ctx);
    msg = m ? m : "";
    len = int(msg.size());
  }
  MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  msg.resize(size_t(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  if (me == first && first == 0) return mine;
  return first == 0 ? am_context_fail(ctx, am_status(code), "%s", msg.c_str())
                    : am_context_fail(ctx, am_status(code), "rank %d: %s", first, msg.c_str());
}

am_status check_node(am_context *ctx, am_status mine, double bytes, const char *what) {
  if (!distributing()) return mine;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &node);
  int n = 1, r = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_rank(node, &r);
  std::vector<double> all(static_cast<size_t>(n));  // summed in rank order on the node's first rank: the same total on all
  MPI_Gather(&bytes, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, node);
  double total = 0;
  for (double b : all) total += b;
  MPI_Bcast(&total, 1, MPI_DOUBLE, 0, node);
  MPI_Comm_free(&node);
  struct rlimit as {};
  const bool as_limit = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
  if (mine != AM_OK || n < 2 || std::getenv("AM_MEMORY_LIMIT") || as_limit) return mine;
  char w[400];
  std::snprintf(w, sizeof w, "the %d ranks on this node together (each %s)", n, what);
  return am_memory_check(ctx, total, w, nullptr);
}

}  // namespace am::scalapack
