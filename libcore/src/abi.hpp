// attnmech — the one rule for growable public structs (docs/abi.md "One rule for structs that may grow").
//
//   am::accept_struct(ctx, in, out, min_size, name)   an INPUT struct from a caller: `out` already holds the
//       defaults; in->struct_size below the end of struct_size itself or below min_size (the ABI-2.0 minimum,
//       the table below) → AM_ERR_INVALID_ARGUMENT with a message; otherwise the caller's min(struct_size,
//       sizeof(T)) bytes are copied over the defaults (an older caller's missing tail keeps the defaults, a
//       newer caller's unknown tail is ignored) and out.struct_size = sizeof(T).
//   am::emit_struct(ctx, out, value, name)             an OUTPUT struct the caller hands in: out->struct_size
//       (set by the caller) says how many bytes it has; the library writes min(that, sizeof(T)) bytes and
//       leaves out->struct_size = the number of bytes it wrote. Below the end of struct_size → error.
//   am::init_struct(out, caller_size, defaults)        the `*_init(p, sizeof *p)` initialisers behind the
//       am_X_default(&x) macros: the same bounded write for a struct the caller has not sized yet.
//
// ABI-2.0 minimum struct_size of every growable input struct (fields past it are optional: a caller whose
// struct ends earlier gets the defaults for them):
//   am_context_settings  4 (end of struct_size)   every field has a default
//   am_newton_settings   4                         every field has a default
//   am_solve_settings    4                         every field has a default
//   am_arch              offsetof(variances)       variances default to 1 (as am_arch_default)
//   am_head              offsetof(Q)               a bilinear head (form, G, W); Q and K default to NULL
//   am_objective         offsetof(grad_measure)    grad_measure defaults to NULL (max |g_k|)
#ifndef ATTNMECH_ABI_HPP
#define ATTNMECH_ABI_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "internal.hpp"

namespace am {

constexpr size_t kSizeFieldEnd = sizeof(uint32_t);  // every growable struct starts with uint32_t struct_size

constexpr size_t kMinContextSettings = kSizeFieldEnd;
constexpr size_t kMinNewtonSettings = kSizeFieldEnd;
constexpr size_t kMinSolveSettings = kSizeFieldEnd;
constexpr size_t kMinArch = offsetof(am_arch, variances);
constexpr size_t kMinHead = offsetof(am_head, Q);
constexpr size_t kMinObjective = offsetof(am_objective, grad_measure);
// am_theory_engine's first version (3.3) ends with `release`; a member appended later is optional.
constexpr size_t kMinTheoryEngine = offsetof(am_theory_engine, release) + sizeof(void (*)(void *));

template <class T>
am_status accept_struct(am_context *ctx, const T *in, T &out, size_t min_size, const char *name) {
  static_assert(std::is_trivially_copyable<T>::value, "growable structs are plain C structs");
  static_assert(offsetof(T, struct_size) == 0, "struct_size must be the first member");
  const size_t floor = min_size > kSizeFieldEnd ? min_size : kSizeFieldEnd;
  if (in->struct_size < floor)
    return fail(ctx, AM_ERR_INVALID_ARGUMENT,
                "%s.struct_size is %u, smaller than the %zu bytes of its first version (set it to sizeof(%s))", name,
                in->struct_size, floor, name);
  const size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(static_cast<void *>(&out), static_cast<const void *>(in), n);
  out.struct_size = static_cast<uint32_t>(sizeof(T));
  return AM_OK;
}

template <class T>
am_status emit_struct(am_context *ctx, T *out, const T &value, const char *name) {
  static_assert(std::is_trivially_copyable<T>::value, "growable structs are plain C structs");
  static_assert(offsetof(T, struct_size) == 0, "struct_size must be the first member");
  if (out->struct_size < kSizeFieldEnd)
    return fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s.struct_size is %u: the caller sets it to sizeof(%s)", name,
                out->struct_size, name);
  const uint32_t n = out->struct_size < sizeof(T) ? out->struct_size : static_cast<uint32_t>(sizeof(T));
  std::memcpy(static_cast<void *>(out), static_cast<const void *>(&value), n);
  out->struct_size = n;
  return AM_OK;
}

template <class T>
void init_struct(T *out, size_t caller_size, const T &defaults) {
  static_assert(std::is_trivially_copyable<T>::value, "growable structs are plain C structs");
  if (!out || caller_size < kSizeFieldEnd) return;
  const size_t n = caller_size < sizeof(T) ? caller_size : sizeof(T);
  std::memcpy(static_cast<void *>(out), static_cast<const void *>(&defaults), n);
  out->struct_size = static_cast<uint32_t>(n);
}

// Inputs that need more than a copy (paths.cpp): an am_arch accepted and copied (arch_copy) and validated
// (arch_in); an array of n heads walked with the stride heads[0].struct_size into full-size copies.
am_status arch_copy(am_context *ctx, const am_arch *in, am_arch *out);
am_status arch_in(am_context *ctx, const am_arch *in, am_arch *out);
am_status heads_in(am_context *ctx, const am_head *heads, size_t n, std::vector<am_head> &out);

}  // namespace am

#endif
