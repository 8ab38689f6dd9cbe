// SSE2 variant of the Potts kernels (compiled with -msse2).
#include "simd/vec_impl.hpp"
namespace am::potts::simd {
const Kernels *sse2_kernels() { return &make_kernels<xsimd::sse2>("sse2"); }
}
