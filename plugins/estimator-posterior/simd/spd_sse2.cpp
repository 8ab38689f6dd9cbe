// sse2 variant of the small SPD kernels (compiled with its own ISA flags, simd/meson in ../meson.build).
#include "simd/spd_impl.hpp"
namespace am::posterior::simd {
const SpdKernels *spd_sse2_kernels() { return &make_spd_kernels<xsimd::sse2>("sse2"); }
}  // namespace am::posterior::simd
