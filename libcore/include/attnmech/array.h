/* attnmech — n-dimensional array descriptors and the NumPy .npy format.
 *
 * am_array is an owning n-d array (C or Fortran order, little-endian f8/f4/i8/i4); am_array_view is
 * a borrowed one. The .npy reader accepts format versions 1.0–3.0, C and Fortran order; anything
 * else (big-endian, object arrays, other dtypes) is a clear AM_ERR_FORMAT. */
#ifndef ATTNMECH_ARRAY_H
#define ATTNMECH_ARRAY_H

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum am_dtype { AM_F64 = 1, AM_F32 = 2, AM_I64 = 3, AM_I32 = 4 } am_dtype;
#define AM_MAX_DIMS 8

typedef struct am_array_view {
  am_dtype dtype;
  uint32_t ndim;
  size_t shape[AM_MAX_DIMS];
  int fortran_order;      /* 0: C order (last index fastest), 1: Fortran order (first index fastest) */
  const void *data;
} am_array_view;

typedef struct am_array am_array;

AM_API size_t am_dtype_size(am_dtype t);
/* The one way to make a view: dtype, ndim (≤ AM_MAX_DIMS; more is clamped to an empty view), shape[0..ndim-1]
 * (NULL when ndim is 0), order and the borrowed data. Added in 3.0. */
AM_API am_array_view am_array_view_make(am_dtype dtype, uint32_t ndim, const size_t *shape, int fortran_order,
                                        const void *data);
/* Number of elements of a view (product of the shape; 1 for ndim 0). */
AM_API size_t am_array_view_count(const am_array_view *v);

/* Owning arrays. am_array_create allocates zeroed storage. */
AM_API am_status am_array_create(am_context *ctx, am_array **out, am_dtype dtype, uint32_t ndim, const size_t *shape,
                                 int fortran_order);
AM_API am_status am_array_from_view(am_context *ctx, am_array **out, const am_array_view *v); /* deep copy */
AM_API void am_array_destroy(am_array **a);
AM_API am_array_view am_array_get_view(const am_array *a);
AM_API void *am_array_data(am_array *a);

/* Copy any numeric view into a dense double buffer in Fortran (column-major) order; `cap` elements. */
AM_API am_status am_array_to_f64_fortran(am_context *ctx, const am_array_view *v, double *out, size_t cap);
/* Same in C order. */
AM_API am_status am_array_to_f64_c(am_context *ctx, const am_array_view *v, double *out, size_t cap);

/* .npy files */
AM_API am_status am_npy_read(am_context *ctx, const char *path, am_array **out);
AM_API am_status am_npy_write(am_context *ctx, const char *path, const am_array_view *v);

#ifdef __cplusplus
}
#endif
#endif
