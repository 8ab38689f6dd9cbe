// attnmech — version.h at run time: the library's version, plugin ABI and soname numbers (generated into version.h
// from meson.build), and the SIMD kernel set the dispatcher chose for this process.
#include "attnmech/version.h"
#include "simd/kernels.hpp"  // am::simd::active

#include <cstdint>

#define AM_STR2(x) #x
#define AM_STR(x) AM_STR2(x)

extern "C" {

const char *am_version(void) {
  return AM_STR(AM_VERSION_MAJOR) "." AM_STR(AM_VERSION_MINOR) "." AM_STR(AM_VERSION_PATCH);
}

uint32_t am_abi_version(void) { return AM_ABI_VERSION; }

uint32_t am_soversion(void) { return AM_SOVERSION; }

const char *am_simd_level(void) { return am::simd::active().name; }

}  // extern "C"
