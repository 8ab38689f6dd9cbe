// attnmech — contexts: last error message, log and progress sinks; version queries; am:: helpers.
#include "abi.hpp"
#include "internal.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

struct am_context {
  am_context_settings s;
  std::string last_error;
  std::string scope;               // "[scope] " prefix of log lines and progress labels ("" = none)
  std::atomic<int> cancelled{0};   // lock-free: am_context_cancel may run in a signal handler
};
static_assert(std::atomic<int>::is_always_lock_free, "am_context_cancel must be async-signal-safe");


namespace am {

bool all_finite(const double *p, size_t n) {
  if (!p) return n == 0;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

am_status check_result(am_context *ctx, const double *a, size_t rows, size_t cols, size_t ld, const char *what) {
  for (size_t j = 0; j < cols; ++j)
    if (!all_finite(a + j * ld, rows))
      return fail(ctx, AM_ERR_NONFINITE, "%s overflows float64 (non-finite entries from finite inputs): rescale the "
                  "inputs", what);
  return AM_OK;
}

am_status parallel_for(am_context *ctx, int threads, size_t n, am_parallel_fn fn, void *user) {
  if (!fn) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_parallel_for: NULL function");
  if (n == 0) return AM_OK;
  const size_t nt = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  if (nt <= 1) {
    fn(user, 0, n, 0);
    return AM_OK;
  }
  std::vector<std::thread> pool;
  try {
    pool.reserve(nt - 1);
    for (size_t t = 1; t < nt; ++t)
      pool.emplace_back(fn, user, n * t / nt, n * (t + 1) / nt, static_cast<int>(t));
  } catch (...) {
    for (auto &th : pool) th.join();
    return am::fail(ctx, AM_ERR_NO_MEMORY, "am_parallel_for: cannot start %zu threads", nt);
  }
  fn(user, 0, n / nt, 0);
  for (auto &th : pool) th.join();
  return AM_OK;
}

}  // namespace am

namespace {

// AM_MEMORY_LIMIT: bytes, or a number with a K/M/G/T suffix (powers of 1024); <= 0 when unset or unreadable.
double memory_limit_from_env() {
  const char *v = std::getenv("AM_MEMORY_LIMIT");
  if (!v || !*v) return 0;
  char *end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || !(x > 0)) return 0;
  switch (*end) {
    case 'T': case 't': x *= 1024.0; [[fallthrough]];
    case 'G': case 'g': x *= 1024.0; [[fallthrough]];
    case 'M': case 'm': x *= 1024.0; [[fallthrough]];
    case 'K': case 'k': x *= 1024.0; break;
    default: break;
  }
  return x;
}

std::string gigabytes(double b) { return am::format("%.1f GB", b / 1e9); }

// RLIMIT_AS in bytes (the soft limit: what mmap is refused beyond); 0 when unlimited or unknown.
double address_space_limit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(rl.rlim_cur);
}

// Calls sink(label) with the label the context's scope prefixes ("[scope] label"); a nonzero return cancels.
template <class Sink>
int report_scoped(am_context *ctx, const char *label, Sink sink) {
  int stop = 0;
  if (ctx->scope.empty()) {
    stop = sink(label ? label : "");
  } else {
    try {
      const std::string l = "[" + ctx->scope + "] " + (label ? label : "");
      stop = sink(l.c_str());
    } catch (...) {
      stop = sink(label ? label : "");
    }
  }
  if (stop) ctx->cancelled.store(1);
  return ctx->cancelled.load() != 0;
}

}  // namespace

extern "C" {

void am_context_settings_init(am_context_settings *s, size_t size) {
  am_context_settings d{};
  d.struct_size = sizeof d;
  am::init_struct(s, size, d);
}

am_status am_context_create(am_context **out, const am_context_settings *s) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  am_context_settings set;
  am_context_default_settings(&set);
  // No context exists yet to carry a message: a bad struct_size is the status alone.
  if (s && am::accept_struct<am_context_settings>(nullptr, s, set, am::kMinContextSettings, "am_context_settings"))
    return AM_ERR_INVALID_ARGUMENT;
  if (set.threads < 0) return AM_ERR_INVALID_ARGUMENT;
  am_context *c = new (std::nothrow) am_context();
  if (!c) return AM_ERR_NO_MEMORY;
  c->s = set;
  *out = c;
  return AM_OK;
}

void am_context_destroy(am_context **ctx) {
  if (!ctx || !*ctx) return;
  delete *ctx;
  *ctx = nullptr;
}

const char *am_context_last_error(const am_context *ctx) { return ctx ? ctx->last_error.c_str() : ""; }

int am_context_threads(const am_context *ctx) {
  int t = ctx ? ctx->s.threads : 0;
  if (t > 0) return t;
  unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

void am_context_log(am_context *ctx, am_log_level level, const char *fmt, ...) {
  if (!ctx || !ctx->s.log || !fmt) return;
  try {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = am::vformat(fmt, ap);
    va_end(ap);
    if (!ctx->scope.empty()) msg = "[" + ctx->scope + "] " + msg;
    ctx->s.log(ctx->s.log_user, level, msg.c_str());
  } catch (...) {
    // logging must never fail a computation
  }
}

int am_context_progress(am_context *ctx, double done, double total, const char *label) {
  if (!ctx) return 0;
  if (!ctx->s.progress) return ctx->cancelled.load() != 0;
  return report_scoped(ctx, label,
                       [&](const char *l) { return ctx->s.progress(ctx->s.progress_user, done, total, l); });
}

int am_context_convergence(am_context *ctx, double iter, double measure, double target, const char *label) {
  if (!ctx) return 0;
  if (ctx->s.convergence)
    return report_scoped(ctx, label, [&](const char *l) {
      return ctx->s.convergence(ctx->s.convergence_user, iter, measure, target, l);
    });
  return am_context_progress(ctx, iter, 0.0, label);  // a count without a total: never a share of the cap
}

void am_free(void *p) { std::free(p); }

void am_context_cancel(am_context *ctx) {
  if (ctx) ctx->cancelled.store(1);
}

int am_context_cancelled(const am_context *ctx) { return ctx && ctx->cancelled.load() != 0; }

void am_context_reset_cancel(am_context *ctx) {
  if (ctx) ctx->cancelled.store(0);
}

am_status am_context_set_scope(am_context *ctx, const char *scope) {
  if (!ctx) return AM_ERR_INVALID_ARGUMENT;
  try {
    ctx->scope = scope ? scope : "";
  } catch (...) {
    return AM_ERR_NO_MEMORY;
  }
  return AM_OK;
}

am_status am_parallel_for(am_context *ctx, size_t n, am_parallel_fn fn, void *user) {
  return am::parallel_for(ctx, am_context_threads(ctx), n, fn, user);
}


int am_blas_threads_set(int n) {
  using set_fn = void (*)(int);
  using get_fn = int (*)(void);
  // Looked up at run time: libcore links "a BLAS", and only OpenBLAS has these entry points.
  static const auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  static const auto get = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!set || !get) return 0;
  const int prev = get();
  if (n > 0 && n != prev) set(n);
  return prev;
}


am_status am_memory_check(am_context *ctx, double bytes, const char *what, double *budget) {
  const double env = memory_limit_from_env();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double phys = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
  const double as = address_space_limit();
  const bool by_as = !(env > 0) && as > 0 && (!(phys > 0) || as < phys);
  const double limit = env > 0 ? env : by_as ? as : phys;
  if (budget) *budget = limit;
  if (!(limit > 0) || bytes <= limit) return AM_OK;
  return am::fail(ctx, AM_ERR_NO_MEMORY, "%s needs %s; %s %s (%s)", what ? what : "this run", gigabytes(bytes).c_str(),
                  env > 0 ? "AM_MEMORY_LIMIT allows" : by_as ? "the address-space limit (ulimit -v) allows" : "this machine has",
                  gigabytes(limit).c_str(),
                  by_as ? "raise ulimit -v" : "set AM_MEMORY_LIMIT=..., e.g. 64G, to allow more");
}

am_status am_address_space_check(am_context *ctx) {
  const double as = address_space_limit();
  if (!(as > 0)) return AM_OK;
  // OpenBLAS sizes its thread pool when it loads (OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS, OMP_NUM_THREADS, else the
  // processors) and reserves memory for each pool thread; running with more than one thread reserves more buffers.
  int pool = 0;
  for (const char *v : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (pool <= 0 && std::getenv(v)) pool = std::atoi(std::getenv(v));
  if (pool <= 0) pool = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int used = std::max(1, am_blas_threads_set(0));
  pool = std::max(pool, used);
  // Measured with the default `attnmech run` (OpenBLAS 0.3, pthreads, x86-64, 2 processors; docs/reliability.md):
  // OPENBLAS_NUM_THREADS=1 works from ulimit -v 475000 KiB, no variable (pool 2, 1 used) from 1012500, pool 2 with
  // 2 used from 2400000; below, OpenBLAS retries its buffer mmap forever. 512 MiB per pool thread + 2 GiB per
  // further thread in use covers the three with some room.
  const double mib = 1024.0 * 1024;
  const double need = 512 * mib * pool + 2048 * mib * (used - 1);
  if (as >= need) return AM_OK;
  return am::fail(ctx, AM_ERR_NO_MEMORY,
                  "the address-space limit (ulimit -v) is %s; OpenBLAS with %d thread%s (%d in use) needs at least %s "
                  "(it reserves its buffers up front and cannot run below that): raise ulimit -v to %.0f or more",
                  gigabytes(as).c_str(), pool, pool == 1 ? "" : "s", used, gigabytes(need).c_str(), need / 1024);
}

am_status am_context_fail(am_context *ctx, am_status code, const char *fmt, ...) {
  if (!ctx) return code;
  va_list ap;
  va_start(ap, fmt);
  try {
    ctx->last_error = am::vformat(fmt, ap);
  } catch (...) {
    // Out of memory while formatting: no detail rather than a half-written message.
    ctx->last_error.clear();
  }
  va_end(ap);
  return code;
}


int am_context_distribute(const am_context *ctx) {
  return ctx && ctx->s.distribute == AM_DISTRIBUTE_OFF ? AM_DISTRIBUTE_OFF : AM_DISTRIBUTE_AUTO;
}

void am_context_data_part(const am_context *ctx, int *part, int *parts) {
  const bool set = ctx && ctx->s.data_parts > 1 && ctx->s.data_part >= 0 && ctx->s.data_part < ctx->s.data_parts;
  if (part) *part = set ? ctx->s.data_part : 0;
  if (parts) *parts = set ? ctx->s.data_parts : 1;
}

int am_context_scalapack_block(const am_context *ctx) {
  const int b = ctx ? ctx->s.scalapack_block : 0;
  return b == 0 ? 64 : std::clamp(b, 8, 1024);
}

}  // extern "C"
