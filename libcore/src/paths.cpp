// attnmech — fixed attention, path vectors and the path-transformed input ξ.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnmech/paths.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"
#include "simd/kernels.hpp"

using am::la::vec;

extern "C" {

AM_API void am_arch_init(am_arch *a, size_t size) {
  am_arch d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.layers = 1;
  d.heads[0] = 1;
  for (auto &w : d.widths) w = 1;
  for (auto &s : d.variances) s = 1;
  am::init_struct(a, size, d);
}

}  // extern "C"

namespace am {

am_status arch_copy(am_context *ctx, const am_arch *in, am_arch *out) {
  if (!in) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "architecture is NULL");
  am_arch_default(out);
  return accept_struct(ctx, in, *out, kMinArch, "am_arch");
}

am_status arch_in(am_context *ctx, const am_arch *in, am_arch *out) {
  if (am_status st = arch_copy(ctx, in, out)) return st;
  const am_arch *a = out;
  if (a->layers < 1 || a->layers > AM_MAX_LAYERS)
    return am::fail(ctx, AM_ERR_DOMAIN, "number of layers %u is outside [1, %d]", a->layers, AM_MAX_LAYERS);
  double htot = 1;
  for (uint32_t l = 0; l < a->layers; ++l) {
    if (a->heads[l] < 1) return am::fail(ctx, AM_ERR_DOMAIN, "layer %u has %u heads; need at least 1", l + 1, a->heads[l]);
    htot *= a->heads[l];
  }
  if (htot > 4096) return am::fail(ctx, AM_ERR_DOMAIN, "%.0f attention paths: more than the 4096 supported", htot);
  for (uint32_t l = 0; l <= a->layers; ++l)
    if (!(a->widths[l] > 0) || !std::isfinite(a->widths[l]))
      return am::fail(ctx, AM_ERR_DOMAIN, "width W_%u = %g must be positive and finite", l, a->widths[l]);
  for (uint32_t l = 0; l <= a->layers + 1; ++l)
    if (!(a->variances[l] > 0) || !std::isfinite(a->variances[l])) {
      if (l == a->layers + 1) return am::fail(ctx, AM_ERR_DOMAIN, "readout variance s_a = %g must be positive and finite", a->variances[l]);
      return am::fail(ctx, AM_ERR_DOMAIN, "variance s_%u = %g must be positive and finite", l, a->variances[l]);
    }
  return AM_OK;
}

am_status heads_in(am_context *ctx, const am_head *heads, size_t n, std::vector<am_head> &out) {
  if (!heads) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "heads is NULL");
  const size_t stride = heads[0].struct_size;
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const am_head *h = reinterpret_cast<const am_head *>(reinterpret_cast<const char *>(heads) + stride * k);
    std::memset(&out[k], 0, sizeof out[k]);
    out[k].struct_size = sizeof out[k];
    if (am_status st = accept_struct(ctx, h, out[k], kMinHead, "am_head")) return st;
    if (h->struct_size != stride)
      return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "head %zu has struct_size %u, head 0 %zu (one size per array)", k,
                      h->struct_size, stride);
  }
  return AM_OK;
}

}  // namespace am

extern "C" {

AM_API am_status am_arch_validate(am_context *ctx, const am_arch *a) {
  am_arch copy;
  return am::arch_in(ctx, a, &copy);
}

AM_API size_t am_arch_paths(const am_arch *in) {
  am_arch copy;
  if (am::arch_copy(nullptr, in, &copy)) return 0;
  const am_arch *a = &copy;
  if (a->layers < 1 || a->layers > AM_MAX_LAYERS) return 0;
  size_t h = 1;
  for (uint32_t l = 0; l < a->layers; ++l) h *= a->heads[l];
  return h;
}

AM_API size_t am_arch_dim(const am_arch *in, uint32_t l) {
  am_arch copy;
  if (am::arch_copy(nullptr, in, &copy)) return 0;
  const am_arch *a = &copy;
  if (l < 1 || l > a->layers + 1) return 0;
  size_t d = 1;
  for (uint32_t k = l; k <= a->layers; ++k) d *= a->heads[k - 1];
  return d;
}

}  // extern "C"

namespace {

am_status check_head(am_context *ctx, const am_head *h, size_t N0) {
  if (!h) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "head is NULL");
  if (h->form == AM_HEAD_BILINEAR) {
    if (!h->W) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "bilinear head has no W matrix");
    if (!am::all_finite(h->W, N0 * N0)) return am::fail(ctx, AM_ERR_NONFINITE, "head matrix W has non-finite entries");
  } else if (h->form == AM_HEAD_QK) {
    if (!h->Q || !h->K || h->G == 0) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "query/key head needs Q, K and G > 0");
    if (!am::all_finite(h->Q, h->G * N0) || !am::all_finite(h->K, h->G * N0))
      return am::fail(ctx, AM_ERR_NONFINITE, "head matrices Q/K have non-finite entries");
  } else {
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "unknown head form %d", (int)h->form);
  }
  return AM_OK;
}

// Ω for one head and one example; work must hold max(N0, 2G)·S doubles.
void attention_one(const am_head &h, size_t N0, size_t S, const double *X, double *Omega, double *work) {
  if (h.form == AM_HEAD_BILINEAR) {
    // T = W X (N0×S); logits = Xᵀ T, so logits[s,t] = x_sᵀ W x_t (key s on the left, query t on the right).
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)N0, (int)S, (int)N0, 1.0, h.W, (int)N0, X, (int)N0, 0.0,
                work, (int)N0);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)S, (int)S, (int)N0, 1.0, X, (int)N0, work, (int)N0, 0.0,
                Omega, (int)S);
  } else {
    const size_t G = h.G;
    double *kx = work, *qx = work + G * S;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)G, (int)S, (int)N0, 1.0, h.K, (int)G, X, (int)N0, 0.0, kx,
                (int)G);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)G, (int)S, (int)N0, 1.0, h.Q, (int)G, X, (int)N0, 0.0, qx,
                (int)G);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)S, (int)S, (int)G, 1.0 / std::sqrt((double)G), kx, (int)G,
                qx, (int)G, 0.0, Omega, (int)S);
  }
  am::simd::active().softmax_columns(S, S, Omega, S);
}

// One column t of Ω (the query t's weights over keys) into col (S), work ≥ max(N0, G) + G·S.
void attention_column(const am_head &h, size_t N0, size_t S, const double *X, size_t t, double *col, double *work) {
  const double *xt = X + t * N0;
  if (h.form == AM_HEAD_BILINEAR) {
    // col[s] = x_sᵀ (W x_t)
    cblas_dgemv(CblasColMajor, CblasNoTrans, (int)N0, (int)N0, 1.0, h.W, (int)N0, xt, 1, 0.0, work, 1);
    cblas_dgemv(CblasColMajor, CblasTrans, (int)N0, (int)S, 1.0, X, (int)N0, work, 1, 0.0, col, 1);
  } else {
    const size_t G = h.G;
    double *q = work, *kx = work + G;
    cblas_dgemv(CblasColMajor, CblasNoTrans, (int)G, (int)N0, 1.0, h.Q, (int)G, xt, 1, 0.0, q, 1);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)G, (int)S, (int)N0, 1.0, h.K, (int)G, X, (int)N0, 0.0, kx,
                (int)G);
    cblas_dgemv(CblasColMajor, CblasTrans, (int)G, (int)S, 1.0 / std::sqrt((double)G), kx, (int)G, q, 1, 0.0, col, 1);
  }
  am::simd::active().softmax_columns(S, 1, col, S);
}

size_t work_size(const am_arch &a, const am_head *heads, size_t N0, size_t S) {
  size_t n = 0, G = 0;
  for (uint32_t l = 0; l < a.layers; ++l) n += a.heads[l];
  for (size_t k = 0; k < n; ++k)
    if (heads[k].form == AM_HEAD_QK) G = std::max(G, heads[k].G);
  return std::max(N0, 2 * G) * S + std::max(N0, G);
}

// Path vectors of one example into A (S × H_tot). omega: S·S scratch per head of one layer;
// bufs: two S × H_tot buffers.
void paths_one(const am_arch &a, const am_head *heads, am_readout readout, size_t N0, size_t S, const double *X,
               double *A, double *omega, double *work, double *buf0, double *buf1) {
  const auto &k = am::simd::active();
  const uint32_t L = a.layers;
  // head index offsets per layer
  size_t first[AM_MAX_LAYERS + 1];
  first[0] = 0;
  for (uint32_t l = 0; l < L; ++l) first[l + 1] = first[l] + a.heads[l];
  // Last layer: ω_h = Ω^(L)_h r.
  double *cur = (L == 1) ? A : buf0;
  size_t D = a.heads[L - 1];
  for (uint32_t h = 0; h < a.heads[L - 1]; ++h) {
    double *col = cur + h * S;
    if (readout == AM_READOUT_MEAN) {
      attention_one(heads[first[L - 1] + h], N0, S, X, omega, work);
      for (size_t s = 0; s < S; ++s) {
        double acc = 0;
        for (size_t t = 0; t < S; ++t) acc += omega[s + t * S];
        col[s] = acc / (double)S;
      }
    } else {
      // Ω r with r = e_t selects one query column: compute only that column of the logits
      // (O(N0² + N0·S) instead of O(N0²·S) for a bilinear head).
      attention_column(heads[first[L - 1] + h], N0, S, X, readout == AM_READOUT_LAST ? S - 1 : 0, col, work);
    }
  }
  // Layers L−1 … 1: A_(h, π') = Ω^(l)_h A_π', h most significant.
  for (int l = (int)L - 2; l >= 0; --l) {
    double *next = (l == 0) ? A : (cur == buf0 ? buf1 : buf0);
    for (uint32_t h = 0; h < a.heads[l]; ++h) {
      attention_one(heads[first[l] + h], N0, S, X, omega, work);
      k.small_gemm(S, D, S, omega, S, cur, S, next + h * D * S, S);
    }
    D *= a.heads[l];
    cur = next;
  }
}

// Validates the inputs and hands back full-size copies of the architecture and the heads (the caller's structs
// may be of an older, smaller version: docs/abi.md).
am_status check_common(am_context *ctx, const am_arch *arch_in, const am_head *heads_in, am_readout readout, size_t N0,
                       size_t S, const double *X, am_arch *arch, std::vector<am_head> &heads) {
  am_status st = am::arch_in(ctx, arch_in, arch);
  if (st) return st;
  if (!heads_in || !X) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "heads or X is NULL");
  if (N0 == 0 || S == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty input: N0 = %zu, S = %zu", N0, S);
  if (readout != AM_READOUT_LAST && readout != AM_READOUT_FIRST && readout != AM_READOUT_MEAN)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "unknown readout %d", (int)readout);
  size_t n = 0;
  for (uint32_t l = 0; l < arch->layers; ++l) n += arch->heads[l];
  if ((st = am::heads_in(ctx, heads_in, n, heads))) return st;
  for (size_t k = 0; k < n; ++k)
    if ((st = check_head(ctx, &heads[k], N0))) return st;
  return AM_OK;
}

// am_xi's loop body: examples [P·c/nt, P·(c+1)/nt) for each chunk c of [begin, end) (am_parallel_for).
struct xi_job {
  const am_arch *arch;
  const am_head *heads;
  am_readout readout;
  size_t P, N0, S, H, ws, nt;
  double scale;
  const double *X;
  double *xi;
  std::atomic<bool> failed{false};
};

void xi_chunks(void *user, size_t begin, size_t end, int /*worker*/) {
  xi_job &j = *static_cast<xi_job *>(user);
  try {
    const size_t S = j.S, N0 = j.N0, H = j.H, P = j.P;
    vec omega(S * S), work(j.ws), b0(S * H), b1(S * H), A(S * H), XA(N0 * H);
    const auto &k = am::simd::active();
    for (size_t c = begin; c < end; ++c)
      for (size_t mu = P * c / j.nt; mu < P * (c + 1) / j.nt; ++mu) {
        const double *Xm = j.X + mu * N0 * S;
        paths_one(*j.arch, j.heads, j.readout, N0, S, Xm, A.data(), omega.data(), work.data(), b0.data(), b1.data());
        k.small_gemm(N0, H, S, Xm, N0, A.data(), S, XA.data(), N0);
        for (size_t p = 0; p < H; ++p)
          for (size_t i = 0; i < N0; ++i) j.xi[mu + P * (i + N0 * p)] = j.scale * XA[i + N0 * p];
      }
  } catch (...) {
    j.failed = true;
  }
}

}  // namespace

extern "C" {

AM_API am_status am_attention(am_context *ctx, const am_head *head_in, size_t N0, size_t S, const double *X,
                              double *Omega) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!X || !Omega) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "X or Omega is NULL");
    if (N0 == 0 || S == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty input: N0 = %zu, S = %zu", N0, S);
    std::vector<am_head> head;
    am_status st = am::heads_in(ctx, head_in, 1, head);
    if (st) return st;
    if ((st = check_head(ctx, &head[0], N0))) return st;
    if (!am::all_finite(X, N0 * S)) return am::fail(ctx, AM_ERR_NONFINITE, "input X has non-finite entries");
    vec work(std::max(N0, 2 * head[0].G) * S);
    attention_one(head[0], N0, S, X, Omega, work.data());
    return am::check_result(ctx, Omega, S, S, S, "the attention (its logits)");
  });
}

AM_API am_status am_path_vectors(am_context *ctx, const am_arch *arch_in, const am_head *heads_in, am_readout readout,
                                 size_t N0, size_t S, const double *X, double *A) {
  return am::guarded(ctx, [&]() -> am_status {
    am_arch arch;
    std::vector<am_head> heads;
    am_status st = check_common(ctx, arch_in, heads_in, readout, N0, S, X, &arch, heads);
    if (st) return st;
    if (!A) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "A is NULL");
    if (!am::all_finite(X, N0 * S)) return am::fail(ctx, AM_ERR_NONFINITE, "input X has non-finite entries");
    const size_t H = am_arch_paths(&arch);
    vec omega(S * S), work(work_size(arch, heads.data(), N0, S)), b0(S * H), b1(S * H);
    paths_one(arch, heads.data(), readout, N0, S, X, A, omega.data(), work.data(), b0.data(), b1.data());
    return am::check_result(ctx, A, S, H, S, "the path vectors (the attention logits)");
  });
}

AM_API am_status am_xi(am_context *ctx, const am_arch *arch_in, const am_head *heads_in, am_readout readout, size_t P,
                       size_t N0, size_t S, const double *X, double *xi) {
  return am::guarded(ctx, [&]() -> am_status {
    am_arch arch;
    std::vector<am_head> heads;
    am_status st = check_common(ctx, arch_in, heads_in, readout, N0, S, X, &arch, heads);
    if (st) return st;
    if (!xi) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "xi is NULL");
    if (P == 0) return am::fail(ctx, AM_ERR_SHAPE, "no examples (P = 0)");
    for (size_t mu = 0; mu < P; ++mu)
      if (!am::all_finite(X + mu * N0 * S, N0 * S))
        return am::fail(ctx, AM_ERR_NONFINITE, "example %zu of the input has non-finite entries", mu);
    xi_job job;
    job.arch = &arch;
    job.heads = heads.data();
    job.readout = readout;
    job.P = P;
    job.N0 = N0;
    job.S = S;
    job.H = am_arch_paths(&arch);
    job.ws = work_size(arch, heads.data(), N0, S);
    job.scale = std::sqrt(arch.variances[0] / ((double)N0 * (double)job.H));
    job.X = X;
    job.xi = xi;
    // At least 8 examples per chunk; one chunk per thread of the context (each example's ξ is computed alone,
    // so the split never changes a bit). The chunks run on libcore's one loop machinery, am_parallel_for.
    job.nt = std::min<size_t>(static_cast<size_t>(std::max(1, am_context_threads(ctx))), std::max<size_t>(1, P / 8));
    if ((st = am_parallel_for(ctx, job.nt, &xi_chunks, &job))) return st;
    if (job.failed) return am::fail(ctx, AM_ERR_NO_MEMORY, "out of memory while computing path vectors");
    return am::check_result(ctx, xi, P * N0 * job.H, 1, P * N0 * job.H, "ξ (the attention logits or x·A)");
  });
}

}  // extern "C"
