// tests/property — the property-based harness for the numerics: random problems over shapes the
// project's tasks never make, through the public API. Every case either succeeds with finite numbers that pass
// an independent check, or returns a non-OK status with a non-empty message.
//
// Environment (outside CI):
//   AM_PROPERTY_CASES=N   total cases over all areas (e.g. 1e6), spread in the CI run's proportions
//   AM_PROPERTY_SEED=S    the run's seed (default 23; every case's own seed derives from S, the area and its index)
//   AM_PROPERTY_CASE=area:i   replay one case (the line a failure prints), with its parameters echoed
//   AM_PROPERTY_VERBOSE=1 print every refusal's message
#pragma once
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <unistd.h>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

namespace prop {

// A case's random source; every draw worth knowing for a replay is noted in `log`.
struct Gen {
  std::mt19937_64 g;
  std::string log;
  explicit Gen(uint64_t seed) : g(seed) {}
  double unif() { return (double)(g() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u = unif() + 1e-300, v = unif();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  size_t integer(size_t lo, size_t hi) { return lo + (size_t)(g() % (uint64_t)(hi - lo + 1)); }  // [lo, hi]
  double log_uniform(double lo, double hi) { return lo * std::pow(hi / lo, unif()); }
  bool chance(double p) { return unif() < p; }
  // Index drawn with the given weights.
  size_t pick(std::initializer_list<double> w) {
    double total = 0;
    for (double x : w) total += x;
    double r = unif() * total;
    size_t i = 0;
    for (double x : w) {
      if (r < x) return i;
      r -= x;
      ++i;
    }
    return w.size() - 1;
  }
  void note(const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
  {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!log.empty()) log += ' ';
    log += buf;
    if (echo) std::printf("  %s\n", buf), std::fflush(stdout);  // a replay shows each draw before it is used
  }
  bool echo = false;
};

// A case's verdict: empty = passed; `refused` names the status of an accepted refusal (non-OK with a message).
struct Outcome {
  std::string failure;
  std::string refused;
};

inline std::string format(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
inline std::string format(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

inline uint64_t mix(uint64_t x) {  // SplitMix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t run_seed() {
  const char *s = std::getenv("AM_PROPERTY_SEED");
  return s && *s ? std::strtoull(s, nullptr, 0) : 23;
}

// Cases of one area: its CI count, or its share of AM_PROPERTY_CASES (ci_total: all areas' CI counts).
inline size_t case_count(size_t ci_count, size_t ci_total) {
  const char *s = std::getenv("AM_PROPERTY_CASES");
  if (!s || !*s) return ci_count;
  const double n = std::strtod(s, nullptr);
  return n > 0 ? (size_t)std::ceil(n * (double)ci_count / (double)ci_total) : ci_count;
}

// Case counts of the CI run (the whole harness: ≥ 10⁴ cases, a few minutes under ASan on 2 cores).
constexpr size_t kCiAlignment = 4000, kCiTheory = 5000, kCiNpy = 120, kCiPotts = 3000, kCiEdges = 600, kCiMsa = 150;
constexpr size_t kCiTotal = kCiAlignment + kCiTheory + kCiNpy + kCiPotts + kCiEdges + kCiMsa;

inline uint64_t area_key(const char *area) {  // FNV-1a of the area's name (the same on every platform)
  uint64_t k = 1469598103934665603ull;
  for (const char *c = area; *c; ++c) k = (k ^ (unsigned char)*c) * 1099511628211ull;
  return k & 0xffffffffu;
}
inline uint64_t case_seed(uint64_t seed, const char *area, size_t i) {
  return mix(seed ^ mix(area_key(area) + 0x100000000ull * i));
}

// One case exactly as run_cases draws it (a regression test of the case that found a defect).
template <class F>
Outcome replay(const char *area, size_t i, F body, uint64_t seed = 23) {
  Gen gen(case_seed(seed, area, i));
  const Outcome o = body(gen);
  INFO("parameters: " << gen.log);
  CHECK_MESSAGE(o.failure.empty(), o.failure);
  return o;
}

// A crash (a signal, or a sanitizer's abort) first writes the running case's replay line to stderr, then goes on to
// the handler that was there before (doctest's report).
constexpr size_t kCrashLine = 256;
inline char *crash_line() {
  static char line[kCrashLine] = "";
  return line;
}
struct CrashReport {
  static constexpr int kSignals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
  static struct sigaction *previous() {
    static struct sigaction prev[5];
    return prev;
  }
  static void handler(int sig) {
    const char *l = crash_line();
    ssize_t ignored = write(1, l, std::strlen(l));  // stdout: the edges area captures stderr around its calls
    ignored = write(2, l, std::strlen(l));
    (void)ignored;
    for (int k = 0; k < 5; ++k)
      if (kSignals[k] == sig) sigaction(sig, &previous()[k], nullptr);
    raise(sig);
  }
  CrashReport() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = &handler;
    for (int k = 0; k < 5; ++k) sigaction(kSignals[k], &sa, &previous()[k]);
  }
  ~CrashReport() {
    for (int k = 0; k < 5; ++k) sigaction(kSignals[k], &previous()[k], nullptr);
    crash_line()[0] = 0;
  }
};

// Runs `n` cases of `area`: body(Gen&) → Outcome. A failure prints the seed, the replay variable and the
// case's parameters; the summary line counts the successes and the refusals by status. Returns the successes.
template <class F>
size_t run_cases(const char *area, size_t ci_count, F body) {
  const uint64_t seed = run_seed();
  size_t n = case_count(ci_count, kCiTotal), first = 0;
  bool replay = false;
  if (const char *c = std::getenv("AM_PROPERTY_CASE")) {
    const char *colon = std::strrchr(c, ':');
    if (!colon || std::string(c, colon) != area) return 1;
    first = std::strtoull(colon + 1, nullptr, 10);
    n = first + 1;
    replay = true;
  }
  const CrashReport crash_report;
  const auto t0 = std::chrono::steady_clock::now();
  size_t ok = 0, failed = 0;
  std::map<std::string, size_t> refused;
  for (size_t i = first; i < n; ++i) {
    Gen gen(case_seed(seed, area, i));
    gen.echo = replay;
    std::snprintf(crash_line(), kCrashLine, "\nproperty %s case %zu crashed (replay: AM_PROPERTY_SEED=%llu AM_PROPERTY_CASE=%s:%zu)\n",
                  area, i, (unsigned long long)seed, area, i);
    const Outcome out = body(gen);
    if (!out.failure.empty()) {
      ++failed;
      FAIL_CHECK("property " << std::string(area) << " case " << i << " failed (replay: AM_PROPERTY_SEED=" << seed
                             << " AM_PROPERTY_CASE=" << std::string(area) << ":" << i << ")\n  parameters: " << gen.log
                             << "\n  " << out.failure);
      if (failed >= 10) break;
    } else if (!out.refused.empty()) {
      ++refused[out.refused];
    } else {
      ++ok;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string r;
  for (const auto &kv : refused) r += format(" %s %zu", kv.first.c_str(), kv.second);
  std::printf("property %s: %zu cases (seed %llu) in %.1f s: %zu ok, %zu failed, refused:%s\n", area, n - first,
              (unsigned long long)seed, secs, ok, failed, r.empty() ? " none" : r.c_str());
  std::fflush(stdout);
  return ok;  // the caller requires some successes: a harness that only sees refusals checks nothing
}

// A non-OK status is acceptable when the context carries a message: the case ends as a refusal.
inline Outcome refusal(am_context *ctx, am_status st, const char *call) {
  const char *msg = am_context_last_error(ctx);
  if (!msg || !*msg) return {format("%s returned %s with an empty message", call, am_status_string(st)), ""};
  if (std::getenv("AM_PROPERTY_VERBOSE")) std::printf("  refused: %s: %s: %s\n", call, am_status_string(st), msg);
  return {"", am_status_string(st)};
}

inline bool finite(const std::vector<double> &v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

inline double max_abs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

struct Context {
  am_context *ctx = nullptr;
  Context() {
    am_context_settings s;
    am_context_default_settings(&s);
    s.threads = 1;
    am_context_create(&ctx, &s);
  }
  ~Context() { am_context_destroy(&ctx); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
};

}  // namespace prop
