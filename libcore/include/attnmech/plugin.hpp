// attnmech — the C++ plugin SDK: a header-only layer over the C ABI of plugin.h (docs/writing-a-plugin.md).
//
//   struct Opt { long n = 0; double mu = 0; };                       // the plugin's options
//   constexpr am::sdk::Param<Opt> kParams[] = {                      // declared once: C table + binding
//       am::sdk::param<&Opt::n>("n", "1000", "number of draws", 1, 1e9),
//       am::sdk::param<&Opt::mu>("mu", "0", "mean")};
//   struct Example {                                                 // the instance
//     Example(const am::sdk::Host &host, const Opt &opt);
//     void estimate(const am_record *dataset, am_record *run);       // estimator (or make_dataset for a task)
//     static void describe(const am_record *results, am_record *report);   // optional: plots, summary
//   };
//   constexpr am_plugin_desc kDesc = am::sdk::estimator<Example, kParams>("example", "1.0", "one line", AM_DATA_NONE);
//   AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
//
// Rows may bind a member of a member (param<&Opt::shape, &Shape::L>), an enum (with its choices) or a numeric
// type of the same shape (.as(AM_PARAM_INT_LIST) on a std::vector<double>). Library code that tests also call
// without a host takes a ParallelFor: host.loop(), or serial_loop() / threads_loop(n) / context_loop(ctx).
//
// Everything is constexpr or a template instantiated in the plugin: no static constructors, nothing exported
// but am_plugin_entry (with the pkg-config recipe's visibility flags). Errors: throw am::sdk::Error(status,
// message) — or return an am_status from estimate/make_dataset — and the one mapper (guard) turns every
// exception into a status with a message naming the plugin; no exception crosses the C ABI.
#ifndef ATTNMECH_PLUGIN_HPP
#define ATTNMECH_PLUGIN_HPP

#include "base.h"  // the base library: what a plugin links (docs/design.md); never the registry or run API

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace am {
namespace sdk {

// ------------------------------------------------------------------ errors

// A status with a message; thrown anywhere in plugin code, turned into (status, message) by guard().
struct Error : std::runtime_error {
  am_status status;
  Error(am_status st, const std::string &msg) : std::runtime_error(msg), status(st) {}
};

// Throws Error(st, "<what>: <record/context message>") when st is an error.
inline void check(am_status st, const char *what, const char *detail = nullptr) {
  if (st >= 0) return;
  std::string msg = what ? what : "";
  const char *d = detail && *detail ? detail : am_status_string(st);
  throw Error(st, msg.empty() ? d : msg + ": " + d);
}

// Throws Error(st, <ctx's last message>) when st is an error: for C calls that leave their message on a context.
inline void check_context(am_context *ctx, am_status st) {
  if (st < 0) check(st, nullptr, am_context_last_error(ctx));
}

// The SDK side's one early return, for plugin and tool code written with status codes rather than exceptions:
// AM_SDK_TRY(expr) returns expr's status from the enclosing function when it is an error (< 0).
#define AM_SDK_TRY(expr)                       \
  do {                                         \
    const am_status am_sdk_try_st_ = (expr);   \
    if (am_sdk_try_st_ < 0) return am_sdk_try_st_; \
  } while (0)

// A view of contiguous doubles (C order unless fortran), through libcore's one constructor am_array_view_make.
inline am_array_view f64_view(const double *data, std::initializer_list<size_t> shape, bool fortran = false) {
  return am_array_view_make(AM_F64, static_cast<uint32_t>(shape.size()), shape.size() ? shape.begin() : nullptr,
                            fortran ? 1 : 0, data);
}

// The one exception → status mapper. f returns am_status or void; `name` (may be NULL) prefixes messages.
template <class F>
am_status guard(am_context *ctx, const char *name, F &&f) noexcept {
  const char *sep = name && *name ? ": " : "";
  if (!name) name = "";
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return AM_OK;
    } else {
      return f();
    }
  } catch (const Error &e) {
    return am_context_fail(ctx, e.status, "%s%s%s", name, sep, e.what());
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "%s%sout of memory", name, sep);
  } catch (const std::exception &e) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "%s%sinternal error: %s", name, sep, e.what());
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "%s%sinternal error: unknown exception", name, sep);
  }
}

// ------------------------------------------------------------------ RAII for every am_* handle

template <class T, void (*Destroy)(T **)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T *p) : p_(p) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  Handle(Handle &&o) noexcept : p_(o.release()) {}
  Handle &operator=(Handle &&o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  ~Handle() { Destroy(&p_); }
  T *get() const { return p_; }
  T **out() {  // for create functions: am_record_create(r.out())
    reset();
    return &p_;
  }
  T *release() {
    T *q = p_;
    p_ = nullptr;
    return q;
  }
  void reset(T *q = nullptr) {
    Destroy(&p_);
    p_ = q;
  }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T *p_ = nullptr;
};

using Record = Handle<am_record, am_record_destroy>;
using Array = Handle<am_array, am_array_destroy>;
using Context = Handle<am_context, am_context_destroy>;
using Theory = Handle<am_theory, am_theory_destroy>;

// A new empty record root (throws on out of memory).
inline Record make_record() {
  Record r;
  check(am_record_create(r.out()), "record");
  return r;
}

// ------------------------------------------------------------------ records: typed put/get that throw

inline void put(am_record *o, const char *key, double v) { check(am_record_set_number(o, key, v), key); }
inline void put(am_record *o, const char *key, int v) { put(o, key, static_cast<double>(v)); }
inline void put(am_record *o, const char *key, long v) { put(o, key, static_cast<double>(v)); }
inline void put(am_record *o, const char *key, size_t v) { put(o, key, static_cast<double>(v)); }
inline void put(am_record *o, const char *key, bool v) { check(am_record_set_bool(o, key, v ? 1 : 0), key); }
inline void put(am_record *o, const char *key, const char *s) { check(am_record_set_string(o, key, s), key); }
inline void put(am_record *o, const char *key, const std::string &s) { put(o, key, s.c_str()); }
inline void put(am_record *o, const char *key, const std::vector<double> &v) {
  check(am_record_set_vector(o, key, v.data(), v.size()), key);
}
// A column-major rows×cols matrix (ld = rows).
inline void put_matrix(am_record *o, const char *key, const std::vector<double> &m, size_t rows, size_t cols) {
  if (m.size() < rows * cols) throw Error(AM_ERR_SHAPE, std::string(key) + ": matrix smaller than rows x cols");
  check(am_record_set_matrix(o, key, m.data(), rows, cols, rows), key);
}
// Child object / list under key (created if absent).
inline am_record *object(am_record *o, const char *key) {
  am_record *c = am_record_object(o, key);
  if (!c) throw Error(AM_ERR_FORMAT, std::string(key) + ": not an object (or out of memory)");
  return c;
}
inline am_record *list(am_record *o, const char *key) {
  am_record *c = am_record_list(o, key);
  if (!c) throw Error(AM_ERR_FORMAT, std::string(key) + ": not a list (or out of memory)");
  return c;
}
inline am_record *append_object(am_record *l) {
  am_record *c = am_record_append_object(l);
  if (!c) throw Error(AM_ERR_FORMAT, "not a list (or out of memory)");
  return c;
}
inline double get_number(const am_record *o, const char *key) {
  double v = NAN;
  check(am_record_get_number(o, key, &v), key);
  return v;
}
inline std::string get_string(const am_record *o, const char *key) {
  const char *s = nullptr;
  check(am_record_get_string(o, key, &s), key);
  return s ? s : "";
}
inline std::vector<double> get_vector(const am_record *o, const char *key) {
  size_t n = 0;
  check(am_record_get_vector(o, key, nullptr, 0, &n), key);
  std::vector<double> v(n);
  if (n) check(am_record_get_vector(o, key, v.data(), n, &n), key);
  return v;
}

// ------------------------------------------------------------------ the parameter table, bound once

namespace detail {
template <class T>
struct member_of;
template <class C, class T>
struct member_of<T C::*> {
  using cls = C;
  using type = T;
};
template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
struct is_vec : std::false_type {};
template <class T>
struct is_vec<std::vector<T>> : std::true_type {};

template <class T>
constexpr am_param_type type_of(bool choice) {
  if constexpr (std::is_same_v<T, bool>) return AM_PARAM_BOOL;
  else if constexpr (is_int_v<T>) return AM_PARAM_INT;
  else if constexpr (std::is_floating_point_v<T>) return AM_PARAM_REAL;
  else if constexpr (std::is_same_v<T, std::string>) return choice ? AM_PARAM_CHOICE : AM_PARAM_STRING;
  else if constexpr (std::is_enum_v<T>) return AM_PARAM_CHOICE;
  else if constexpr (is_vec<T>::value && is_int_v<typename T::value_type>) return AM_PARAM_INT_LIST;
  else if constexpr (is_vec<T>::value && std::is_floating_point_v<typename T::value_type>) return AM_PARAM_REAL_LIST;
  else static_assert(sizeof(T) == 0, "parameter member must be bool, an integer, a floating type, std::string "
                                     "or a std::vector of integers or doubles");
}

// The member reached from an options object by the chain M, Ms... (param<&Opt::shape, &Shape::L>: opt.shape.L).
template <auto M, auto... Ms>
struct member_path {
  using cls = typename member_of<decltype(M)>::cls;
  static auto &ref(cls &o) { return ((o.*M) .* ... .* Ms); }
  using type = std::remove_reference_t<decltype(ref(std::declval<cls &>()))>;
};

// Index of `word` among the '|'-separated `choices`, -1 if absent.
inline long choice_index(const char *choices, const std::string &word) {
  long i = 0;
  for (const char *p = choices ? choices : ""; ; ++i) {
    const char *bar = std::strchr(p, '|');
    const size_t len = bar ? static_cast<size_t>(bar - p) : std::strlen(p);
    if (word.size() == len && word.compare(0, len, p, len) == 0) return i;
    if (!bar) return -1;
    p = bar + 1;
  }
}

// Copies the validated value of row `def` from the host's params record into the member M, Ms... of opt.
template <auto M, auto... Ms>
void bind(void *opt, const am_record *params, const am_param_def &def) {
  using P = member_path<M, Ms...>;
  using T = typename P::type;
  const char *name = def.name;
  auto &dst = P::ref(*static_cast<typename P::cls *>(opt));
  if constexpr (std::is_same_v<T, bool>) dst = get_number(params, name) != 0;
  else if constexpr (is_int_v<T> || std::is_floating_point_v<T>) dst = static_cast<T>(get_number(params, name));
  else if constexpr (std::is_same_v<T, std::string>) dst = get_string(params, name);
  else if constexpr (std::is_enum_v<T>) {  // the position of the chosen word in the row's choices
    const std::string word = get_string(params, name);
    const long i = choice_index(def.choices, word);
    if (i < 0) throw Error(AM_ERR_USAGE, std::string(name) + ": '" + word + "' is not one of " + def.choices);
    dst = static_cast<T>(i);
  } else {
    const std::vector<double> v = get_vector(params, name);
    dst.assign(v.begin(), v.end());
  }
}
}  // namespace detail

// One row: the C row (am_param_def) followed by its binding. def.struct_size is sizeof(Param), so the host
// walks the table with this stride and reads only the am_param_def part (docs/abi.md).
template <class Opt>
struct Param {
  using opt_type = Opt;
  am_param_def def;
  void (*bind)(void *opt, const am_record *params, const am_param_def &def);

  // The same row with another numeric type of the same shape, e.g. an integer list held in a
  // std::vector<double>: param<&Opt::widths>(...).as(AM_PARAM_INT_LIST). Other changes do not compile.
  constexpr Param as(am_param_type type) const {
    const auto scalar = [](am_param_type t) { return t == AM_PARAM_INT || t == AM_PARAM_REAL; };
    const auto listed = [](am_param_type t) { return t == AM_PARAM_INT_LIST || t == AM_PARAM_REAL_LIST; };
    if (!(scalar(def.type) && scalar(type)) && !(listed(def.type) && listed(type)))
      throw std::logic_error("Param::as: only INT <-> REAL and INT_LIST <-> REAL_LIST");
    Param p = *this;
    p.def.type = type;
    return p;
  }
};

// A row for member M of the options struct — or for a member of a member: param<&Opt::shape, &Shape::L>. The
// type (int, real, bool, string, choice, lists) follows the member's C++ type; `choices` ("a|b|c") makes a
// string member a choice; an enum member is a choice bound to the position of the chosen word in `choices`
// (required). min > max = unbounded.
template <auto M, auto... Ms>
constexpr Param<typename detail::member_path<M, Ms...>::cls> param(const char *name, const char *default_value,
                                                                  const char *help, double min = 1, double max = 0,
                                                                  const char *choices = nullptr) {
  using T = typename detail::member_path<M, Ms...>::type;
  using C = typename detail::member_path<M, Ms...>::cls;
  if (std::is_enum_v<T> && !choices) throw std::logic_error("param: an enum member needs its choices");
  return Param<C>{{static_cast<uint32_t>(sizeof(Param<C>)), name, detail::type_of<T>(choices != nullptr),
                   default_value, help, min, max, choices},
                  &detail::bind<M, Ms...>};
}

// Fills an options struct from the host's validated parameters.
template <class Opt, size_t N>
void parse(const Param<Opt> (&table)[N], const am_record *params, Opt *opt) {
  for (const auto &row : table) row.bind(opt, params, row.def);
}

// ------------------------------------------------------------------ the host

// A parallel loop handed to library code that also runs without a plugin host (tests, benchmarks):
// pf(n, f) runs f(begin, end, worker) over contiguous chunks of [0, n) and returns when all are done; worker 0
// runs on the calling thread. Host::loop() gives the host's, serial_loop() one chunk on the calling thread.
using ChunkFn = std::function<void(size_t begin, size_t end, int worker)>;
using ParallelFor = std::function<void(size_t n, const ChunkFn &f)>;

namespace detail {
// Calls launch(tramp, user), a C parallel loop over chunks, with tramp running f(begin, end, worker); an
// exception in a chunk is rethrown after every chunk has finished (the one of the lowest worker).
template <class F, class Launch>
void run_chunks(F &f, int workers, Launch &&launch) {
  struct Ctx {
    F *f;
    std::vector<std::exception_ptr> errs;  // one slot per worker
  } c{&f, std::vector<std::exception_ptr>(static_cast<size_t>(std::max(1, workers)))};
  auto tramp = [](void *user, size_t b, size_t e, int w) {
    auto *cc = static_cast<Ctx *>(user);
    try {
      (*cc->f)(b, e, w);
    } catch (...) {
      if (static_cast<size_t>(w) < cc->errs.size()) cc->errs[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  check(launch(tramp, &c), "parallel_for");
  for (auto &e : c.errs)
    if (e) std::rethrow_exception(e);
}
}  // namespace detail

// libcore's am_parallel_for on a context's threads (`threads` setting), for library code run by a program or
// a test without a plugin host.
inline ParallelFor context_loop(am_context *ctx) {
  return [ctx](size_t n, const ChunkFn &f) {
    detail::run_chunks(f, am_context_threads(ctx),
                       [&](am_parallel_fn tramp, void *user) { return am_parallel_for(ctx, n, tramp, user); });
  };
}

// The same on a context of its own with n threads (0 = all cores), which the loop keeps alive.
inline ParallelFor threads_loop(int n) {
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.threads = n;
  am_context *c = nullptr;
  check(am_context_create(&c, &cs), "threads_loop");
  const std::shared_ptr<am_context> ctx(c, [](am_context *p) { am_context_destroy(&p); });
  return [ctx](size_t k, const ChunkFn &f) { context_loop(ctx.get())(k, f); };
}

inline ParallelFor serial_loop() {
  return [](size_t n, const ChunkFn &f) {
    if (n) f(0, n, 0);
  };
}

class Host {
 public:
  explicit Host(const am_host *h) : h_(h) {}
  const am_host *raw() const { return h_; }
  am_context *ctx() const { return h_->ctx; }
  const am_record *params() const { return h_->params; }
  uint64_t seed() const { return h_->seed; }
  int threads() const { return h_->threads; }
  // This instance's random stream; split it per chain/thread with am_rng_split.
  am_rng rng() const {
    am_rng r;
    am_host_rng(h_, &r);
    return r;
  }
  // Progress report; true means "stop" (cancel): return AM_CANCELLED with what you have.
  bool progress(double done, double total, const char *label) const {
    return am_context_progress(h_->ctx, done, total, label) != 0;
  }
  // An open-ended loop's iteration and its stopping rule's measure against the target it must reach (Added in 3.5;
  // am_context_convergence); true means "stop".
  bool convergence(double iter, double measure, double target, const char *label) const {
    return am_context_convergence(h_->ctx, iter, measure, target, label) != 0;
  }
  bool cancelled() const { return am_context_cancelled(h_->ctx) != 0; }
  template <class... A>
  void log(am_log_level level, const char *fmt, A... args) const {
    am_context_log(h_->ctx, level, fmt, args...);
  }
  // f(begin, end, worker) over [0, n) on the host's threads (contiguous chunks; the split depends only on n
  // and the thread count). An exception in one chunk is rethrown here after every chunk has finished.
  template <class F>
  void parallel_for(size_t n, F &&f) const {
    if (!h_->parallel_for) {  // a host without the service: one chunk here
      if (n) f(size_t{0}, n, 0);
      return;
    }
    const int workers = std::max({1, am_context_threads(h_->ctx), h_->threads});
    detail::run_chunks(f, workers, [&](am_parallel_fn tramp, void *user) {
      return h_->parallel_for(h_, n, tramp, user);
    });
  }
  // The host's parallel_for as a ParallelFor for library code (valid while the host is).
  ParallelFor loop() const {
    return [h = *this](size_t n, const ChunkFn &f) { h.parallel_for(n, f); };
  }

 private:
  const am_host *h_;
};

// Sets BLAS's (process-global) thread count for a scope, e.g. 1 inside work that runs its own threads.
// Without a host (library code called from tests) through libcore's am_blas_threads_set.
class BlasThreads {
 public:
  BlasThreads(const Host &h, int n) : BlasThreads(h.raw()->blas_threads_set, n) {}
  explicit BlasThreads(int n) : BlasThreads(&am_blas_threads_set, n) {}
  ~BlasThreads() {
    if (set_ && saved_ > 0) set_(saved_);
  }
  BlasThreads(const BlasThreads &) = delete;
  BlasThreads &operator=(const BlasThreads &) = delete;

 private:
  BlasThreads(int (*set)(int), int n) : set_(set), saved_(set ? set(n) : 0) {}
  int (*set_)(int);
  int saved_;
};

// ------------------------------------------------------------------ descriptors from a class

namespace detail {
template <class T, class = void>
struct has_describe : std::false_type {};
template <class T>
struct has_describe<T, std::void_t<decltype(T::describe(std::declval<const am_record *>(),
                                                        std::declval<am_record *>()))>> : std::true_type {};

template <class Opt>
struct Box {  // what the host holds: the host, the options, the plugin's object
  const am_host *host;
  Opt opt;
  void *obj;
};

template <class T, class Opt, const auto &Table>
am_status create(const am_host *host, void **out) {
  if (!host || !out) return AM_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return guard(host->ctx, nullptr, [&] {
    auto box = std::make_unique<Box<Opt>>(Box<Opt>{host, Opt{}, nullptr});
    if (host->params) parse(Table, host->params, &box->opt);
    box->obj = new T(Host(host), box->opt);
    *out = box.release();
  });
}

template <class T, class Opt>
void destroy(void *p) {
  auto *box = static_cast<Box<Opt> *>(p);
  if (!box) return;
  delete static_cast<T *>(box->obj);
  delete box;
}

template <class T, class = void>
struct takes_inputs : std::false_type {};
template <class T>
struct takes_inputs<T, std::void_t<decltype(std::declval<T &>().estimate(
                           std::declval<const am_record *>(), std::declval<const am_record *>(),
                           std::declval<am_record *>()))>> : std::true_type {};

template <class T, class Opt>
am_status estimate(void *p, const am_record *dataset, const am_record *inputs, am_record *run) {
  if (!p || !inputs || !run) return AM_ERR_INVALID_ARGUMENT;
  auto *box = static_cast<Box<Opt> *>(p);
  return guard(box->host->ctx, nullptr, [&] {
    T *obj = static_cast<T *>(box->obj);
    if constexpr (takes_inputs<T>::value) return obj->estimate(dataset, inputs, run);
    else return obj->estimate(dataset, run);  // an estimator without per-run inputs
  });
}

template <class T, class Opt>
am_status make_dataset(void *p, am_record *dataset, am_record *extras) {
  if (!p || !dataset || !extras) return AM_ERR_INVALID_ARGUMENT;
  auto *box = static_cast<Box<Opt> *>(p);
  return guard(box->host->ctx, nullptr, [&] { return static_cast<T *>(box->obj)->make_dataset(dataset, extras); });
}

template <class T>
am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  return guard(ctx, nullptr, [&] { return T::describe(results, report); });
}

template <class T>
constexpr auto describe_fn() -> am_status (*)(am_context *, const am_record *, am_record *) {
  if constexpr (has_describe<T>::value) return &describe<T>;
  else return nullptr;
}

template <class Opt, size_t N>
constexpr size_t count(const Param<Opt> (&)[N]) {
  return N;
}
}  // namespace detail

template <const auto &Table>
using opt_of = typename std::remove_cv_t<std::remove_reference_t<decltype(Table[0])>>::opt_type;

// Descriptor of an estimator class T: T(const Host &, const Opt &) (once per run spec); estimate(dataset, inputs,
// run) — or estimate(dataset, run) when it needs no per-run inputs — returning void or am_status (throw Error for
// failures), called once per width; optional static describe(results, report).
template <class T, const auto &Table>
constexpr am_plugin_desc estimator(const char *name, const char *version, const char *description,
                                   uint32_t data_kinds) {
  using Opt = opt_of<Table>;
  return am_plugin_desc{AM_ABI_VERSION, sizeof(am_plugin_desc), AM_PLUGIN_ESTIMATOR, name, version, description,
                        &Table[0].def, static_cast<uint32_t>(detail::count(Table)), data_kinds, nullptr,
                        &detail::create<T, Opt, Table>, &detail::destroy<T, Opt>, nullptr,
                        &detail::estimate<T, Opt>, detail::describe_fn<T>()};
}

// Descriptor of a task class T: T(const Host &, const Opt &); make_dataset(dataset, extras) returning void or
// am_status; optional static describe(results, report).
template <class T, const auto &Table>
constexpr am_plugin_desc task(const char *name, const char *version, const char *description, uint32_t data_kind,
                              const char *default_estimator) {
  using Opt = opt_of<Table>;
  return am_plugin_desc{AM_ABI_VERSION, sizeof(am_plugin_desc), AM_PLUGIN_TASK, name, version, description,
                        &Table[0].def, static_cast<uint32_t>(detail::count(Table)), data_kind, default_estimator,
                        &detail::create<T, Opt, Table>, &detail::destroy<T, Opt>,
                        &detail::make_dataset<T, Opt>, nullptr, detail::describe_fn<T>()};
}

}  // namespace sdk
}  // namespace am

#endif
