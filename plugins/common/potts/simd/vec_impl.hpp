// potts_core — the templated kernels of simd/vec.h; included by exactly one TU per ISA (internal linkage).
#pragma once
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "simd/vec.h"

namespace {

template <class Arch>
double exp_shift_sum_impl(double *x, std::size_t n, double shift) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = n - n % W;
  const B bs(shift);
  B acc(0.0);
  for (std::size_t k = 0; k < vend; k += W) {
    const B e = xsimd::exp(B::load_unaligned(x + k) - bs);
    e.store_unaligned(x + k);
    acc += e;
  }
  double s = vend ? xsimd::hadd(acc) : 0.0;
  for (std::size_t k = vend; k < n; ++k) s += (x[k] = std::exp(x[k] - shift));
  return s;
}

// x[k] = f(x[k]) in place: full batches through f, the tail element by element (f takes a batch or a double).
template <class Arch, class F>
void map_inplace(double *x, std::size_t n, F f) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = n - n % W;
  for (std::size_t k = 0; k < vend; k += W) f(B::load_unaligned(x + k)).store_unaligned(x + k);
  for (std::size_t k = vend; k < n; ++k) x[k] = f(x[k]);
}

template <class Arch>
void exp_inplace_impl(double *x, std::size_t n) {
  map_inplace<Arch>(x, n, [](auto v) {
    using std::exp;
    using xsimd::exp;
    return exp(v);
  });
}

template <class Arch>
void log_inplace_impl(double *x, std::size_t n) {
  map_inplace<Arch>(x, n, [](auto v) {
    using std::log;
    using xsimd::log;
    return log(v);
  });
}

template <class Arch>
void axpy_impl(std::size_t n, double a, const double *x, double *y) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = n - n % W;
  const B ba(a);
  for (std::size_t k = 0; k < vend; k += W)
    xsimd::fma(ba, B::load_unaligned(x + k), B::load_unaligned(y + k)).store_unaligned(y + k);
  for (std::size_t k = vend; k < n; ++k) y[k] = std::fma(a, x[k], y[k]);
}

template <class Arch>
void rank1_rows_impl(std::size_t rows, std::size_t n, const double *w, const double *x, double *Y, std::size_t ld) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = n - n % W;
  for (std::size_t j = 0; j < rows; ++j) {
    if (w[j] == 0.0) continue;
    double *y = Y + j * ld;
    const B ba(w[j]);
    for (std::size_t k = 0; k < vend; k += W)
      xsimd::fma(ba, B::load_unaligned(x + k), B::load_unaligned(y + k)).store_unaligned(y + k);
    for (std::size_t k = vend; k < n; ++k) y[k] = std::fma(w[j], x[k], y[k]);
  }
}

// gather/scatter of rows with the row held in NV registers (NV·W = n); the generic loop for other widths.
template <class Arch, int NV>
void gather_fixed(const double *base, const int *offs, std::size_t count, double *acc) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  B a[NV];
  for (int v = 0; v < NV; ++v) a[v] = B::load_unaligned(acc + v * W);
  for (std::size_t k = 0; k < count; ++k) {
    const double *p = base + offs[k];
    for (int v = 0; v < NV; ++v) a[v] += B::load_unaligned(p + v * W);
  }
  for (int v = 0; v < NV; ++v) a[v].store_unaligned(acc + v * W);
}

template <class Arch, int NV>
void scatter_fixed(double *base, const int *offs, std::size_t count, const double *r) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  B x[NV];
  for (int v = 0; v < NV; ++v) x[v] = B::load_unaligned(r + v * W);
  for (std::size_t k = 0; k < count; ++k) {
    double *p = base + offs[k];
    for (int v = 0; v < NV; ++v) (B::load_unaligned(p + v * W) + x[v]).store_unaligned(p + v * W);
  }
}

// The changes between two gathers with the row in NV registers: every register's sum in k order, as the generic
// loop adds them (the same bits), but the NV chains of additions interleave instead of running one after another.
template <class Arch, int NV>
void gather_diff_fixed(const double *base, const int *from, const int *to, std::size_t count, double *acc) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  B a[NV];
  for (int v = 0; v < NV; ++v) a[v] = B::load_unaligned(acc + v * W);
  for (std::size_t k = 0; k < count; ++k) {
    const double *t = base + to[k], *f = base + from[k];
    for (int v = 0; v < NV; ++v) a[v] += B::load_unaligned(t + v * W) - B::load_unaligned(f + v * W);
  }
  for (int v = 0; v < NV; ++v) a[v].store_unaligned(acc + v * W);
}

template <class Arch, int NV>
void scatter_diff_fixed(double *base, const int *from, const int *to, std::size_t count, const double *p) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  B x[NV];
  for (int v = 0; v < NV; ++v) x[v] = B::load_unaligned(p + v * W);
  for (std::size_t k = 0; k < count; ++k) {
    double *f = base + from[k], *t = base + to[k];
    for (int v = 0; v < NV; ++v) (B::load_unaligned(f + v * W) + x[v]).store_unaligned(f + v * W);
    for (int v = 0; v < NV; ++v) (B::load_unaligned(t + v * W) - x[v]).store_unaligned(t + v * W);
  }
}

// Calls f(std::integral_constant<int, nv>) for a row of nv registers, 1 ≤ nv ≤ 8; false for other widths.
template <class F>
bool with_register_count(std::size_t nv, F f) {
  switch (nv) {
    case 1: f(std::integral_constant<int, 1>{}); return true;
    case 2: f(std::integral_constant<int, 2>{}); return true;
    case 3: f(std::integral_constant<int, 3>{}); return true;
    case 4: f(std::integral_constant<int, 4>{}); return true;
    case 5: f(std::integral_constant<int, 5>{}); return true;
    case 6: f(std::integral_constant<int, 6>{}); return true;
    case 7: f(std::integral_constant<int, 7>{}); return true;
    case 8: f(std::integral_constant<int, 8>{}); return true;
    default: return false;
  }
}

template <class Arch>
void gather_rows_impl(const double *base, const int *offs, std::size_t count, std::size_t n, double *acc) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  if (with_register_count(n / W, [&](auto nv) { gather_fixed<Arch, decltype(nv)::value>(base, offs, count, acc); }))
    return;
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; a += W)
      (B::load_unaligned(acc + a) + B::load_unaligned(base + offs[k] + a)).store_unaligned(acc + a);
}

template <class Arch>
void scatter_rows_impl(double *base, const int *offs, std::size_t count, std::size_t n, const double *r) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  if (with_register_count(n / W, [&](auto nv) { scatter_fixed<Arch, decltype(nv)::value>(base, offs, count, r); }))
    return;
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; a += W)
      (B::load_unaligned(base + offs[k] + a) + B::load_unaligned(r + a)).store_unaligned(base + offs[k] + a);
}

template <class Arch>
void gather_diff_impl(const double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                      double *acc) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  if (with_register_count(n / W,
                          [&](auto nv) { gather_diff_fixed<Arch, decltype(nv)::value>(base, from, to, count, acc); }))
    return;
  for (std::size_t a = 0; a < n; a += W) {
    B s = B::load_unaligned(acc + a);
    for (std::size_t k = 0; k < count; ++k)
      s += B::load_unaligned(base + to[k] + a) - B::load_unaligned(base + from[k] + a);
    s.store_unaligned(acc + a);
  }
}

template <class Arch>
void scatter_diff_impl(double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                       const double *p) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  if (with_register_count(n / W,
                          [&](auto nv) { scatter_diff_fixed<Arch, decltype(nv)::value>(base, from, to, count, p); }))
    return;
  for (std::size_t k = 0; k < count; ++k) {
    double *f = base + from[k], *t = base + to[k];
    for (std::size_t a = 0; a < n; a += W) {
      const B x = B::load_unaligned(p + a);
      (B::load_unaligned(f + a) + x).store_unaligned(f + a);
      (B::load_unaligned(t + a) - x).store_unaligned(t + a);
    }
  }
}

template <class Arch>
const am::potts::simd::Kernels &make_kernels(const char *name) {
  static const am::potts::simd::Kernels t{name, xsimd::batch<double, Arch>::size, &exp_shift_sum_impl<Arch>,
                                      &exp_inplace_impl<Arch>, &log_inplace_impl<Arch>, &axpy_impl<Arch>,
                                      &rank1_rows_impl<Arch>, &gather_rows_impl<Arch>,
                                      &scatter_rows_impl<Arch>, &gather_diff_impl<Arch>,
                                      &scatter_diff_impl<Arch>};
  return t;
}

}  // namespace
