// array.cpp: creation, views, copies and conversions to f64 in C and Fortran order.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "attnmech/attnmech.h"

TEST_CASE("conversions to f64 in C and Fortran order (3-d transposition)") {
  // logical [2, 3, 4] with value 100 i + 10 j + k, stored in Fortran order
  size_t shape[3] = {2, 3, 4};
  am_array *a = nullptr;
  REQUIRE(am_array_create(nullptr, &a, AM_I32, 3, shape, 1) == AM_OK);
  auto *p = static_cast<int32_t *>(am_array_data(a));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) p[i + 2 * (j + 3 * k)] = 100 * i + 10 * j + k;
  am_array_view v = am_array_get_view(a);
  std::vector<double> c(24), f(24);
  REQUIRE(am_array_to_f64_c(nullptr, &v, c.data(), 24) == AM_OK);
  REQUIRE(am_array_to_f64_fortran(nullptr, &v, f.data(), 24) == AM_OK);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        CHECK(c[(i * 3 + j) * 4 + k] == 100 * i + 10 * j + k);
        CHECK(f[i + 2 * (j + 3 * k)] == 100 * i + 10 * j + k);
      }
  CHECK(am_array_to_f64_c(nullptr, &v, c.data(), 23) == AM_ERR_BUFFER_TOO_SMALL);
  am_array *b = nullptr;
  REQUIRE(am_array_from_view(nullptr, &b, &v) == AM_OK);
  am_array_view bv = am_array_get_view(b);
  CHECK(bv.data != v.data);
  CHECK(bv.fortran_order == 1);
  CHECK(std::memcmp(bv.data, v.data, 24 * sizeof(int32_t)) == 0);
  am_array_destroy(&b);
  am_array_destroy(&a);
  CHECK(a == nullptr);
  am_array_destroy(nullptr);
  CHECK(am_dtype_size(AM_F64) == 8);
  CHECK(am_dtype_size(AM_I32) == 4);
  // zeroed storage; 0-d arrays have one element
  REQUIRE(am_array_create(nullptr, &a, AM_F64, 0, nullptr, 0) == AM_OK);
  v = am_array_get_view(a);
  CHECK(am_array_view_count(&v) == 1);
  CHECK(static_cast<double *>(am_array_data(a))[0] == 0.0);
  am_array_destroy(&a);
  CHECK(am_array_create(nullptr, &a, static_cast<am_dtype>(9), 0, nullptr, 0) == AM_ERR_INVALID_ARGUMENT);
  size_t huge[2] = {SIZE_MAX / 2, 4};
  CHECK(am_array_create(nullptr, &a, AM_F64, 2, huge, 0) != AM_OK);
  CHECK(a == nullptr);
}
