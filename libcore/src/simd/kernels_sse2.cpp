// SSE2 variant of the SIMD kernels (compiled with -msse2).
#include "simd/kernels_impl.hpp"
namespace am::simd {
const kernel_table *sse2_table() { return &make_table<xsimd::sse2>("sse2"); }
}
