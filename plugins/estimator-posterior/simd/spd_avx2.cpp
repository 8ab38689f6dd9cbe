// avx2 variant of the small SPD kernels (compiled with its own ISA flags, simd/meson in ../meson.build).
#include "simd/spd_impl.hpp"
namespace am::posterior::simd {
const SpdKernels *spd_avx2_kernels() { return &make_spd_kernels<xsimd::fma3<xsimd::avx2>>("avx2+fma"); }
}  // namespace am::posterior::simd
