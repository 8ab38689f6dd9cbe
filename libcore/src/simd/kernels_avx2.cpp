// AVX2+FMA variant of the SIMD kernels (compiled with -mavx2 -mfma).
#include "simd/kernels_impl.hpp"
namespace am::simd {
const kernel_table *avx2_table() { return &make_table<xsimd::fma3<xsimd::avx2>>("avx2+fma"); }
}
