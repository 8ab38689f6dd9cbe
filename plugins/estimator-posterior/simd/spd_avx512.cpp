// avx512 variant of the small SPD kernels (compiled with its own ISA flags, simd/meson in ../meson.build).
#include "simd/spd_impl.hpp"
namespace am::posterior::simd {
const SpdKernels *spd_avx512_kernels() { return &make_spd_kernels<xsimd::avx512f>("avx512f"); }
}  // namespace am::posterior::simd
