// AVX2+FMA variant of the Potts kernels (compiled with -mavx2 -mfma).
#include "simd/vec_impl.hpp"
namespace am::potts::simd {
const Kernels *avx2_kernels() { return &make_kernels<xsimd::fma3<xsimd::avx2>>("avx2+fma"); }
}
