// attnmech — owning n-d arrays and conversions to dense f64 buffers.
#include "internal.hpp"

#include <cstdlib>
#include <cstring>

struct am_array {
  am_array_view view;  // view.data points at `data`
  void *data;
};

namespace am {

bool valid_dtype(int t) { return t == AM_F64 || t == AM_F32 || t == AM_I64 || t == AM_I32; }

// Number of elements of a shape; false on overflow of size_t (also counting `elem` bytes per element).
bool shape_count(uint32_t ndim, const size_t *shape, size_t elem, size_t *count) {
  size_t n = 1;
  bool zero = false;
  for (uint32_t d = 0; d < ndim; ++d) {
    if (shape[d] == 0) zero = true;
  }
  if (zero) {
    *count = 0;
    return true;
  }
  for (uint32_t d = 0; d < ndim; ++d) {
    if (shape[d] > SIZE_MAX / n) return false;
    n *= shape[d];
  }
  if (elem && n > SIZE_MAX / elem) return false;
  *count = n;
  return true;
}

}  // namespace am

namespace {

inline double load_as_double(const void *base, am_dtype t, size_t i) {
  switch (t) {
    case AM_F64: return static_cast<const double *>(base)[i];
    case AM_F32: return static_cast<double>(static_cast<const float *>(base)[i]);
    case AM_I64: return static_cast<double>(static_cast<const int64_t *>(base)[i]);
    case AM_I32: return static_cast<double>(static_cast<const int32_t *>(base)[i]);
  }
  return 0.0;
}

// Copy v into out (count elements) in C (want_fortran = 0) or Fortran (1) order.
am_status to_f64(am_context *ctx, const am_array_view *v, double *out, size_t cap, int want_fortran, const char *fn) {
  if (!v) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: NULL view", fn);
  if (!am::valid_dtype(v->dtype)) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: bad dtype %d", fn, (int)v->dtype);
  if (v->ndim > AM_MAX_DIMS)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: %u dimensions (at most %d)", fn, v->ndim, AM_MAX_DIMS);
  size_t n = 0;
  if (!am::shape_count(v->ndim, v->shape, am_dtype_size(v->dtype), &n))
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: array size overflows", fn);
  if (cap < n)
    return am::fail(ctx, AM_ERR_BUFFER_TOO_SMALL, "%s: buffer of %zu elements for an array of %zu", fn, cap, n);
  if (n == 0) return AM_OK;
  if (!v->data || !out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: NULL data", fn);
  const bool same = v->ndim <= 1 || (v->fortran_order != 0) == (want_fortran != 0);
  if (same) {
    if (v->dtype == AM_F64) {
      std::memcpy(out, v->data, n * sizeof(double));
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = load_as_double(v->data, v->dtype, i);
    }
    return AM_OK;
  }
  // Transpose: walk the destination in its order with an odometer over the multi-index and
  // compute the source offset from the source strides.
  const uint32_t nd = v->ndim;
  size_t sstride[AM_MAX_DIMS];  // source stride of each logical dimension
  if (v->fortran_order) {
    size_t s = 1;
    for (uint32_t d = 0; d < nd; ++d) { sstride[d] = s; s *= v->shape[d]; }
  } else {
    size_t s = 1;
    for (uint32_t d = nd; d-- > 0;) { sstride[d] = s; s *= v->shape[d]; }
  }
  // Destination order: fastest dimension first.
  uint32_t order[AM_MAX_DIMS];
  for (uint32_t k = 0; k < nd; ++k) order[k] = want_fortran ? k : nd - 1 - k;
  size_t idx[AM_MAX_DIMS] = {0};
  size_t src = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i] = load_as_double(v->data, v->dtype, src);
    for (uint32_t k = 0; k < nd; ++k) {
      uint32_t d = order[k];
      if (++idx[d] < v->shape[d]) { src += sstride[d]; break; }
      src -= (idx[d] - 1) * sstride[d];
      idx[d] = 0;
    }
  }
  return AM_OK;
}

}  // namespace

extern "C" {

size_t am_dtype_size(am_dtype t) {
  switch (t) {
    case AM_F64: return 8;
    case AM_F32: return 4;
    case AM_I64: return 8;
    case AM_I32: return 4;
  }
  return 0;
}

am_array_view am_array_view_make(am_dtype dtype, uint32_t ndim, const size_t *shape, int fortran_order,
                                 const void *data) {
  am_array_view v{};
  v.dtype = dtype;
  v.fortran_order = fortran_order ? 1 : 0;
  v.data = data;
  if (ndim > AM_MAX_DIMS || (ndim > 0 && !shape)) return v;  // ndim 0, no data: am_array_view_count says 1 → callers
  v.ndim = ndim;                                              // check the data pointer; an oversize shape stays empty
  for (uint32_t i = 0; i < ndim; ++i) v.shape[i] = shape[i];
  return v;
}

size_t am_array_view_count(const am_array_view *v) {
  if (!v || v->ndim > AM_MAX_DIMS) return 0;
  size_t n = 0;
  if (!am::shape_count(v->ndim, v->shape, 0, &n)) return 0;
  return n;
}

am_status am_array_create(am_context *ctx, am_array **out, am_dtype dtype, uint32_t ndim, const size_t *shape,
                          int fortran_order) {
  if (!out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_create: NULL output");
  *out = nullptr;
  if (!am::valid_dtype(dtype)) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_create: bad dtype %d", (int)dtype);
  if (ndim > AM_MAX_DIMS)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_create: %u dimensions (at most %d)", ndim, AM_MAX_DIMS);
  if (ndim > 0 && !shape) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_create: NULL shape");
  size_t n = 0;
  const size_t es = am_dtype_size(dtype);
  if (!am::shape_count(ndim, shape, es, &n))
    return am::fail(ctx, AM_ERR_NO_MEMORY, "am_array_create: array size overflows");
  auto *a = static_cast<am_array *>(std::calloc(1, sizeof(am_array)));
  if (!a) return am::fail(ctx, AM_ERR_NO_MEMORY, "out of memory");
  a->data = std::calloc(n > 0 ? n : 1, es);
  if (!a->data) {
    std::free(a);
    return am::fail(ctx, AM_ERR_NO_MEMORY, "out of memory allocating an array of %zu elements", n);
  }
  a->view = am_array_view_make(dtype, ndim, shape, (fortran_order != 0 && ndim > 1) ? 1 : 0, a->data);
  *out = a;
  return AM_OK;
}

am_status am_array_from_view(am_context *ctx, am_array **out, const am_array_view *v) {
  if (!out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_from_view: NULL output");
  *out = nullptr;
  if (!v) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_from_view: NULL view");
  am_array *a = nullptr;
  am_status st = am_array_create(ctx, &a, v->dtype, v->ndim, v->shape, v->fortran_order);
  if (st != AM_OK) return st;
  size_t bytes = am_array_view_count(&a->view) * am_dtype_size(v->dtype);
  if (bytes > 0) {
    if (!v->data) {
      am_array_destroy(&a);
      return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_array_from_view: NULL data");
    }
    std::memcpy(a->data, v->data, bytes);
  }
  *out = a;
  return AM_OK;
}

void am_array_destroy(am_array **a) {
  if (!a || !*a) return;
  std::free((*a)->data);
  std::free(*a);
  *a = nullptr;
}

am_array_view am_array_get_view(const am_array *a) {
  if (!a) return am_array_view_make(AM_F64, 0, nullptr, 0, nullptr);
  return a->view;
}

void *am_array_data(am_array *a) { return a ? a->data : nullptr; }

am_status am_array_to_f64_fortran(am_context *ctx, const am_array_view *v, double *out, size_t cap) {
  return to_f64(ctx, v, out, cap, 1, "am_array_to_f64_fortran");
}

am_status am_array_to_f64_c(am_context *ctx, const am_array_view *v, double *out, size_t cap) {
  return to_f64(ctx, v, out, cap, 0, "am_array_to_f64_c");
}

}  // extern "C"
