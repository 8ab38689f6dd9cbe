// attnmech — internal helpers shared by the libcore implementation (not installed, not public API).
//
//   am::fail(ctx, code, fmt, ...)      record a message on ctx (NULL ok) and return code
//   am::guarded(ctx, [&] { ...; return AM_OK; })
//                                      run a lambda returning am_status; std::bad_alloc → AM_ERR_NO_MEMORY,
//                                      any other exception → AM_ERR_INTERNAL (message kept on ctx)
//   AM_GUARD(ctx, { body returning am_status })   the same as a statement-expression-free macro
//   am::all_finite(p, n)               true iff every p[i] is finite
//   am::philox4x32_10(ctr, key, out)   the raw Philox4x32-10 block function (known-answer tests)
#ifndef ATTNMECH_INTERNAL_HPP
#define ATTNMECH_INTERNAL_HPP

#include "attnmech/attnmech.h"

#include <common/text.hpp>  // am::format, am::vformat

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace am {

// am_context_fail with a va_list, and the same with arguments. Inline over the public am_context_fail, so the
// host library (registry, params, run: libattnmech) uses them without reaching into the base library's internals.
inline am_status vfail(am_context *ctx, am_status code, const char *fmt, va_list ap) {
  if (!ctx) return code;
  std::string msg;
  try {
    msg = vformat(fmt, ap);
  } catch (...) {
    return am_context_fail(ctx, code, "%s", "");
  }
  return am_context_fail(ctx, code, "%s", msg.c_str());
}
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline am_status fail(am_context *ctx, am_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const am_status r = vfail(ctx, code, fmt, ap);
  va_end(ap);
  return r;
}

// am_parallel_for on an explicit thread count (the host's `threads` of a run may differ from the context's). Base
// library only (plugin.cpp's am_host.parallel_for).
am_status parallel_for(am_context *ctx, int threads, size_t n, am_parallel_fn fn, void *user);

// Runs f() (which returns am_status) and maps escaping exceptions to status codes + messages.
template <class F>
am_status guarded(am_context *ctx, F &&f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return fail(ctx, AM_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(ctx, AM_ERR_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(ctx, AM_ERR_INTERNAL, "internal error: unknown exception");
  }
}

bool all_finite(const double *p, size_t n);
// A computed result (rows × cols, leading dimension ld) from finite inputs: AM_OK if every entry is finite, else
// AM_ERR_NONFINITE "<what> overflows float64 …" (finite inputs whose products exceed the double range).
am_status check_result(am_context *ctx, const double *a, size_t rows, size_t cols, size_t ld, const char *what);

// Arrays: dtype is one of AM_F64/F32/I64/I32; element count of a shape (false if count·elem_size
// overflows size_t; elem_size 0 = do not check bytes).
bool valid_dtype(int t);
bool shape_count(uint32_t ndim, const size_t *shape, size_t elem_size, size_t *count);

// Plugin parameters (params.cpp): parse one value of p; returns "" on success (numbers in *nums for
// INT/REAL/BOOL/lists, text in *str for STRING/CHOICE) or the reason it is invalid.
std::string parse_param_value(const am_param_def *p, const char *text, std::vector<double> *nums, std::string *str);
const char *plugin_kind_word(uint32_t kind);  // "task" / "estimator" / "plugin"
// Row k of a descriptor's parameter table, walked with the stride params[0].struct_size (docs/abi.md).
// The registry has checked that every row carries the same size, at least sizeof(am_param_def) of ABI 2.
inline const am_param_def *param_at(const am_plugin_desc *d, uint32_t k) {
  const size_t stride = d->params[0].struct_size;
  return reinterpret_cast<const am_param_def *>(reinterpret_cast<const char *>(d->params) + stride * k);
}
// The descriptor's optional `describe`, or NULL when its struct_size does not reach that field.
inline am_status (*describe_of(const am_plugin_desc *d))(am_context *, const am_record *, am_record *) {
  const size_t need = offsetof(am_plugin_desc, describe) + sizeof d->describe;
  return d && d->struct_size >= need ? d->describe : nullptr;
}

// Philox4x32-10: out = block(counter ctr[4], key key[2]).
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
// SplitMix64 finaliser (a bijective 64-bit mix).
uint64_t splitmix64(uint64_t x);

}  // namespace am

// The library side's one early return: AM_TRY(expr) returns expr's status from the enclosing function when it is an
// error (< 0); warnings (> 0, e.g. AM_CONVERGED_ROUNDOFF) and AM_OK fall through.
#define AM_TRY(expr)                       \
  do {                                     \
    const am_status am_try_st_ = (expr);   \
    if (am_try_st_ < 0) return am_try_st_; \
  } while (0)

// AM_GUARD(ctx, { ...; return AM_OK; }) — body is a block that returns am_status.
#define AM_GUARD(ctx, ...) return ::am::guarded((ctx), [&]() -> am_status __VA_ARGS__)

#endif
