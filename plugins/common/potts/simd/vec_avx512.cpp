// AVX-512F variant of the Potts kernels (compiled with -mavx512f -mavx2 -mfma).
#include "simd/vec_impl.hpp"
namespace am::potts::simd {
const Kernels *avx512_kernels() { return &make_kernels<xsimd::avx512f>("avx512f"); }
}
