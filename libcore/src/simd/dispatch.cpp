// Runtime choice of the SIMD kernel table (compiled for the baseline ISA only).
#include <cstdlib>
#include <cstring>
#include <xsimd/config/xsimd_config.hpp>
#include <xsimd/config/xsimd_cpuid.hpp>
#include "attnmech/version.h"
#include "simd/kernels.hpp"

namespace am::simd {

#ifndef AM_HAVE_AVX2_KERNELS
const kernel_table *avx2_table() { return nullptr; }
#endif
#ifndef AM_HAVE_AVX512_KERNELS
const kernel_table *avx512_table() { return nullptr; }
#endif

namespace {
struct registry {
  const kernel_table *tables[4];
  std::size_t n = 0;
  const kernel_table *chosen = nullptr;
  registry() {
    const auto cpu = xsimd::available_architectures();
    tables[n++] = &scalar_table();
#if defined(__x86_64__) || defined(__i386__)
    if (cpu.sse2 && sse2_table()) tables[n++] = sse2_table();
    if (cpu.fma3_avx2 && avx2_table()) tables[n++] = avx2_table();
    if (cpu.avx512f && avx512_table()) tables[n++] = avx512_table();
#endif
    chosen = tables[n - 1];
    if (const char *force = std::getenv("AM_SIMD")) {
      for (std::size_t i = 0; i < n; ++i)
        if (std::strncmp(tables[i]->name, force, std::strlen(force)) == 0 && force[0]) chosen = tables[i];
    }
  }
};
const registry &reg() {
  static const registry r;  // function-local: initialised on first use, thread-safe
  return r;
}
}  // namespace

std::size_t table_count() { return reg().n; }
const kernel_table &table_at(std::size_t i) { return *reg().tables[i < reg().n ? i : reg().n - 1]; }
const kernel_table &active() { return *reg().chosen; }

}  // namespace am::simd

