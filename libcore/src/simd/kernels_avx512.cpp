// AVX-512F variant of the SIMD kernels (compiled with -mavx512f -mavx2 -mfma).
#include "simd/kernels_impl.hpp"
namespace am::simd {
const kernel_table *avx512_table() { return &make_table<xsimd::avx512f>("avx512f"); }
}
