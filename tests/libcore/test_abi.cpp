// The one struct_size rule (docs/abi.md): every growable input struct, passed as the ABI-2.0 minimum prefix
// (an older caller), has its prefix used and its tail filled with defaults — whatever the bytes past
// struct_size hold; a struct_size below the minimum fails with a message; a larger (newer) struct is accepted.
// Output structs (reports, initialisers, am_dataset_arch) write nothing past the caller's struct_size.
// The frozen value types (am_array_view, am_rng) keep their sizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "abi.hpp"
#include "../toy.hpp"

namespace {

struct ctx_holder {
  am_context *ctx = nullptr;
  ctx_holder() { REQUIRE(am_context_create(&ctx, nullptr) == AM_OK); }
  ~ctx_holder() { am_context_destroy(&ctx); }
  std::string msg() const { return am_context_last_error(ctx); }
};

// A struct of type T as a caller compiled against an older header holds it: only its first `size` bytes are
// the caller's; the bytes after them (up to sizeof(T)) are someone else's memory, here filled with `junk`.
template <class T>
struct older {
  alignas(T) unsigned char bytes[sizeof(T) + 32];
  explicit older(const T &value, size_t size, unsigned char junk = 0xA5) {
    std::memset(bytes, junk, sizeof bytes);
    std::memcpy(bytes, &value, size);
    get()->struct_size = static_cast<uint32_t>(size);
  }
  T *get() { return reinterpret_cast<T *>(bytes); }
  // true iff no byte from `from` on differs from junk
  bool untouched_from(size_t from, unsigned char junk = 0xA5) const {
    for (size_t i = from; i < sizeof bytes; ++i)
      if (bytes[i] != junk) return false;
    return true;
  }
};

// A struct as a newer caller holds it: T followed by fields this library does not know.
template <class T>
struct newer {
  T base;
  double unknown[4];
  explicit newer(const T &b) : base(b), unknown{1e300, -1e300, 0, 42} { base.struct_size = sizeof *this; }
};

int log_calls = 0;
void count_log(void *, am_log_level, const char *) { ++log_calls; }

am_status quad(void *, const double *x, double *f, double *g, double *H) {  // f = (x−3)², minimum at 3
  *f = (x[0] - 3) * (x[0] - 3);
  if (g) g[0] = 2 * (x[0] - 3);
  if (H) H[0] = 2;
  return AM_OK;
}
int measure_calls = 0;
double counting_measure(void *, const double *, const double *g) {
  ++measure_calls;
  return std::fabs(g[0]);
}

// The toy problem's training split alone as an attention dataset (no test split, no readout key).
am_record *toy_train_dataset(const toy_problem &t) {
  am_record *ds = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  am_record_set_string(ds, "kind", "attention");
  am_array_view v = test_view(t.X.data(), {t.P, t.S, t.N0}, 0);
  am_record_set_array(ds, "X_train", &v);
  am_record_set_vector(ds, "y_train", t.y.data(), t.P);
  const double heads[2] = {2, 2}, widths[3] = {3, 4, 5}, vars[4] = {1.0, 0.8, 1.2, 1.5};
  am_record_set_vector(ds, "heads", heads, 2);
  am_record_set_vector(ds, "widths", widths, 3);
  am_record_set_vector(ds, "variances", vars, 4);
  am_record_set_number(ds, "temperature", t.T);
  am_record *att = am_record_object(ds, "attention");
  const std::vector<double> *Ws[4] = {&t.W11, &t.W12, &t.W21, &t.W22};
  const char *keys[4] = {"l1_h1", "l1_h2", "l2_h1", "l2_h2"};
  for (int k = 0; k < 4; ++k) {
    v = test_view(Ws[k]->data(), {t.N0, t.N0}, 1);  // column-major storage of W(i,j)
    am_record_set_array(att, keys[k], &v);
  }
  return ds;
}

}  // namespace

TEST_CASE("abi: am_context_settings — prefix used, threads default, too small fails, larger accepted") {
  am_context_settings s;
  am_context_default_settings(&s);
  s.log = &count_log;
  s.threads = 7;  // past the prefix below: must not be read
  older<am_context_settings> old(s, offsetof(am_context_settings, threads));
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, old.get()) == AM_OK);
  log_calls = 0;
  am_context_log(ctx, AM_LOG_INFO, "hello");
  CHECK(log_calls == 1);                                   // the prefix's log sink is used
  const unsigned hc = std::thread::hardware_concurrency();
  CHECK(am_context_threads(ctx) == (hc > 0 ? (int)hc : 1));  // threads = 0 (all cores), the default
  am_context_destroy(&ctx);

  old.get()->struct_size = 2;  // below the end of struct_size itself
  CHECK(am_context_create(&ctx, old.get()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);

  newer<am_context_settings> nw(s);
  REQUIRE(am_context_create(&ctx, &nw.base) == AM_OK);
  CHECK(am_context_threads(ctx) == 7);
  am_context_destroy(&ctx);
}

TEST_CASE("abi: am_arch — without variances they are 1; too small fails with a message; larger accepted") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4), K(t.P * t.P), Kref(t.P * t.P);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_arch unit = t.arch;
  for (auto &v : unit.variances) v = 1.0;
  REQUIRE(am_kernel_gp(c.ctx, &unit, t.N0, t.P, xi.data(), Kref.data(), t.P) == AM_OK);
  // The toy's variances are not 1; an older caller's struct ends before them, and the bytes there are junk
  // (0xA5… is a valid but huge double): the library must use variances 1.
  older<am_arch> old(t.arch, am::kMinArch);
  CHECK(am_arch_validate(c.ctx, old.get()) == AM_OK);
  REQUIRE(am_kernel_gp(c.ctx, old.get(), t.N0, t.P, xi.data(), K.data(), t.P) == AM_OK);
  for (size_t i = 0; i < K.size(); ++i) CHECK(K[i] == Kref[i]);  // the same code path on the same numbers
  CHECK(am_arch_paths(old.get()) == 4);
  CHECK(am_arch_dim(old.get(), 2) == 2);
  // a theory built from the old struct has the GP point of unit variances: U_l = I
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(c.ctx, &th, old.get(), t.P, t.N0, xi.data(), t.y.data(), t.T) == AM_OK);
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  CHECK(U[0] == 1.0);
  am_theory_destroy(&th);

  old.get()->struct_size = 2;
  CHECK(am_arch_validate(c.ctx, old.get()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_arch.struct_size is 2") != std::string::npos);
  old.get()->struct_size = static_cast<uint32_t>(am::kMinArch - 8);  // inside the first version: too small
  CHECK(am_kernel_gp(c.ctx, old.get(), t.N0, t.P, xi.data(), K.data(), t.P) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_arch_paths(old.get()) == 0);

  newer<am_arch> nw(t.arch);
  CHECK(am_arch_validate(c.ctx, &nw.base) == AM_OK);
  REQUIRE(am_kernel_gp(c.ctx, &nw.base, t.N0, t.P, xi.data(), K.data(), t.P) == AM_OK);
  REQUIRE(am_kernel_gp(c.ctx, &t.arch, t.N0, t.P, xi.data(), Kref.data(), t.P) == AM_OK);
  for (size_t i = 0; i < K.size(); ++i) CHECK(K[i] == Kref[i]);
}

TEST_CASE("abi: am_head — a bilinear prefix; Q/K default to NULL; arrays walked with heads[0]'s stride") {
  ctx_holder c;
  toy_problem t;
  const size_t N0 = t.N0, S = t.S;
  std::vector<double> Om(S * S), Omref(S * S);
  REQUIRE(am_attention(c.ctx, &t.heads[1], N0, S, t.X.data(), Omref.data()) == AM_OK);
  older<am_head> old(t.heads[1], am::kMinHead);
  REQUIRE(am_attention(c.ctx, old.get(), N0, S, t.X.data(), Om.data()) == AM_OK);
  for (size_t i = 0; i < Om.size(); ++i) CHECK(Om[i] == Omref[i]);
  // A query/key head whose struct ends before Q: Q and K take their defaults (NULL) whatever the memory there
  // holds (here valid pointers), so the head is incomplete.
  std::vector<double> Q(2 * N0, 0.1), K(2 * N0, 0.2);
  am_head qk = AM_QK_HEAD(2, Q.data(), K.data());
  REQUIRE(am_attention(c.ctx, &qk, N0, S, t.X.data(), Om.data()) == AM_OK);
  older<am_head> oldqk(qk, am::kMinHead);
  std::memcpy(oldqk.bytes + offsetof(am_head, Q), &qk.Q, 2 * sizeof(double *));  // the caller's memory past its struct
  CHECK(am_attention(c.ctx, oldqk.get(), N0, S, t.X.data(), Om.data()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg() == "query/key head needs Q, K and G > 0");
  oldqk.get()->struct_size = 2;
  CHECK(am_attention(c.ctx, oldqk.get(), N0, S, t.X.data(), Om.data()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_head.struct_size is 2") != std::string::npos);

  // Arrays: a newer caller's heads (a larger element) and an older caller's (a smaller element) give the
  // same ξ as the current heads.
  std::vector<double> xi(t.P * N0 * 4), xiref(t.P * N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, N0, S, t.X.data(), xiref.data()) == AM_OK);
  std::vector<newer<am_head>> big;
  for (const am_head &h : t.heads) big.emplace_back(h);
  REQUIRE(am_xi(c.ctx, &t.arch, &big[0].base, AM_READOUT_LAST, t.P, N0, S, t.X.data(), xi.data()) == AM_OK);
  CHECK(xi == xiref);
  struct head_v0 {  // the ABI-2.0 minimum: up to and including W
    uint32_t struct_size;
    am_head_form form;
    size_t G;
    const double *W;
  };
  static_assert(sizeof(head_v0) == am::kMinHead, "the prefix struct is the minimum size");
  head_v0 small[4];
  for (int k = 0; k < 4; ++k) small[k] = head_v0{sizeof(head_v0), AM_HEAD_BILINEAR, 0, t.heads[k].W};
  std::fill(xi.begin(), xi.end(), 0.0);
  REQUIRE(am_xi(c.ctx, &t.arch, reinterpret_cast<const am_head *>(small), AM_READOUT_LAST, t.P, N0, S, t.X.data(),
                xi.data()) == AM_OK);
  CHECK(xi == xiref);
  small[2].struct_size = sizeof(am_head);  // one element of another size
  CHECK(am_xi(c.ctx, &t.arch, reinterpret_cast<const am_head *>(small), AM_READOUT_LAST, t.P, N0, S, t.X.data(),
              xi.data()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("head 2 has struct_size") != std::string::npos);
}

TEST_CASE("abi: am_objective and am_newton_settings — prefixes used, tails default") {
  ctx_holder c;
  // am_objective without grad_measure: the tail holds a counting measure, which must not be called.
  am_objective obj = AM_OBJECTIVE(1, nullptr, &quad, &counting_measure);
  older<am_objective> oldobj(obj, am::kMinObjective);
  std::memcpy(oldobj.bytes + offsetof(am_objective, grad_measure), &obj.grad_measure, sizeof obj.grad_measure);
  double x = 0;
  measure_calls = 0;
  am_newton_report r{sizeof(am_newton_report)};
  REQUIRE(am_newton_minimize(c.ctx, oldobj.get(), nullptr, &x, &r) == AM_OK);
  CHECK(measure_calls == 0);
  CHECK(x == doctest::Approx(3.0).epsilon(1e-14));  // one exact Newton step on a quadratic
  x = 0;
  REQUIRE(am_newton_minimize(c.ctx, &obj, nullptr, &x, &r) == AM_OK);  // the full struct does use it
  CHECK(measure_calls > 0);
  oldobj.get()->struct_size = 2;
  CHECK(am_newton_minimize(c.ctx, oldobj.get(), nullptr, &x, &r) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_objective.struct_size is 2") != std::string::npos);
  newer<am_objective> nwobj(obj);
  x = 0;
  CHECK(am_newton_minimize(c.ctx, &nwobj.base, nullptr, &x, &r) == AM_OK);

  // am_newton_settings ending before armijo: max_iter = 0 (prefix) is used; armijo = 5 in the tail would be
  // rejected as invalid if it were read.
  am_newton_settings s;
  am_newton_default_settings(&s);
  s.max_iter = 0;
  s.armijo = 5.0;
  older<am_newton_settings> olds(s, offsetof(am_newton_settings, armijo));
  std::memcpy(olds.bytes + offsetof(am_newton_settings, armijo), &s.armijo, sizeof s.armijo);
  x = 0;
  CHECK(am_newton_minimize(c.ctx, &obj, olds.get(), &x, &r) == AM_ERR_NOT_CONVERGED);
  CHECK(r.iterations == 0);
  CHECK(x == 0.0);
  CHECK(am_newton_minimize(c.ctx, &obj, &s, &x, &r) == AM_ERR_INVALID_ARGUMENT);  // the full struct's armijo
  olds.get()->struct_size = 3;
  CHECK(am_newton_minimize(c.ctx, &obj, olds.get(), &x, &r) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_newton_settings.struct_size is 3") != std::string::npos);
  s.armijo = 1e-4;
  newer<am_newton_settings> nws(s);
  x = 0;
  CHECK(am_newton_minimize(c.ctx, &obj, &nws.base, &x, &r) == AM_ERR_NOT_CONVERGED);  // max_iter 0 read
}

TEST_CASE("abi: am_solve_settings — without warm_start the solve starts at the GP point") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), t.T) == AM_OK);
  std::vector<double> U(am_theory_u_size(th), 0.0), gp(am_theory_u_size(th));
  am_theory_gp_point(th, gp.data());
  am_solve_settings s;
  am_solve_default_settings(&s);
  s.max_iter = 0;      // prefix: no Newton step, so U comes back as the starting point
  s.warm_start = 1;    // tail: would start from U = 0 (not positive definite: a domain error)
  older<am_solve_settings> old(s, offsetof(am_solve_settings, warm_start));
  std::memcpy(old.bytes + offsetof(am_solve_settings, warm_start), &s.warm_start, sizeof s.warm_start);
  am_solve_report rep{sizeof(am_solve_report)};
  CHECK(am_theory_solve(c.ctx, th, old.get(), U.data(), &rep) == AM_ERR_NOT_CONVERGED);
  CHECK(rep.iterations == 0);
  CHECK(U == gp);
  std::fill(U.begin(), U.end(), 0.0);
  CHECK(am_theory_solve(c.ctx, th, &s, U.data(), &rep) == AM_ERR_DOMAIN);  // the full struct warm-starts
  old.get()->struct_size = 1;
  CHECK(am_theory_solve(c.ctx, th, old.get(), U.data(), &rep) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_solve_settings.struct_size is 1") != std::string::npos);
  s.warm_start = 0;
  newer<am_solve_settings> nw(s);
  CHECK(am_theory_solve(c.ctx, th, &nw.base, U.data(), &rep) == AM_ERR_NOT_CONVERGED);
  CHECK(rep.iterations == 0);
  am_theory_destroy(&th);
}

TEST_CASE("abi: outputs write nothing past the caller's struct_size") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), t.T) == AM_OK);
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());

  am_action full{sizeof(am_action)};
  REQUIRE(am_theory_action(c.ctx, th, U.data(), &full, nullptr, nullptr) == AM_OK);
  CHECK(full.struct_size == sizeof(am_action));
  const size_t asz = offsetof(am_action, entropy);  // an older caller: S_code and energy only
  older<am_action> oa(am_action{}, asz);
  REQUIRE(am_theory_action(c.ctx, th, U.data(), oa.get(), nullptr, nullptr) == AM_OK);
  CHECK(oa.get()->struct_size == asz);
  CHECK(oa.get()->S_code == full.S_code);
  CHECK(oa.get()->energy == full.energy);
  CHECK(oa.untouched_from(asz));
  oa.get()->struct_size = 0;
  CHECK(am_theory_action(c.ctx, th, U.data(), oa.get(), nullptr, nullptr) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_action.struct_size is 0") != std::string::npos);
  newer<am_action> na(am_action{});
  REQUIRE(am_theory_action(c.ctx, th, U.data(), &na.base, nullptr, nullptr) == AM_OK);
  CHECK(na.base.struct_size == sizeof(am_action));  // what the library wrote
  CHECK(na.unknown[3] == 42);

  const size_t rsz = offsetof(am_solve_report, grad_max);
  older<am_solve_report> orp(am_solve_report{}, rsz);
  am_solve_report rfull{sizeof(am_solve_report)};
  std::vector<double> U2 = U;
  REQUIRE(am_theory_solve(c.ctx, th, nullptr, U.data(), orp.get()) >= 0);
  REQUIRE(am_theory_solve(c.ctx, th, nullptr, U2.data(), &rfull) >= 0);
  CHECK(orp.get()->struct_size == rsz);
  CHECK(orp.get()->S_code == rfull.S_code);
  CHECK(orp.get()->iterations == rfull.iterations);
  CHECK(orp.untouched_from(rsz));
  orp.get()->struct_size = 0;
  CHECK(am_theory_solve(c.ctx, th, nullptr, U.data(), orp.get()) == AM_ERR_INVALID_ARGUMENT);

  am_objective obj = AM_OBJECTIVE(1, nullptr, &quad, nullptr);
  double x = 0;
  const size_t nsz = offsetof(am_newton_report, grad_norm);
  older<am_newton_report> onr(am_newton_report{}, nsz);
  REQUIRE(am_newton_minimize(c.ctx, &obj, nullptr, &x, onr.get()) == AM_OK);
  CHECK(onr.get()->iterations == 1);
  CHECK(onr.untouched_from(nsz));
  am_theory_destroy(&th);

  // am_dataset_arch fills an older caller's am_arch up to its size (unit variances are not written there)
  am_record *ds = toy_train_dataset(t);
  older<am_arch> oarch(am_arch{}, am::kMinArch);
  double T = 0;
  REQUIRE(am_dataset_arch(c.ctx, ds, oarch.get(), &T) == AM_OK);
  CHECK(oarch.get()->layers == 2);
  CHECK(oarch.get()->widths[2] == 5);
  CHECK(oarch.untouched_from(am::kMinArch));
  am_arch unset{};
  CHECK(am_dataset_arch(c.ctx, ds, &unset, &T) == AM_ERR_INVALID_ARGUMENT);
  CHECK(c.msg().find("am_arch.struct_size is 0") != std::string::npos);
  am_record_destroy(&ds);

  // initialisers behind the am_X_default macros write at most the size they are given
  older<am_context_settings> ocs(am_context_settings{}, 0);
  am_context_settings_init(ocs.get(), offsetof(am_context_settings, threads));
  CHECK(ocs.get()->struct_size == offsetof(am_context_settings, threads));
  CHECK(ocs.untouched_from(offsetof(am_context_settings, threads)));
  older<am_arch> oai(am_arch{}, 0);
  am_arch_init(oai.get(), am::kMinArch);
  CHECK(oai.get()->layers == 1);
  CHECK(oai.untouched_from(am::kMinArch));
  older<am_solve_settings> oss(am_solve_settings{}, 0);
  am_solve_settings_init(oss.get(), offsetof(am_solve_settings, decrement_tol));
  CHECK(oss.get()->max_iter == 100);
  CHECK(oss.untouched_from(offsetof(am_solve_settings, decrement_tol)));
  older<am_newton_settings> ons(am_newton_settings{}, 0);
  am_newton_settings_init(ons.get(), offsetof(am_newton_settings, armijo));
  CHECK(ons.untouched_from(offsetof(am_newton_settings, armijo)));
  older<am_host> oh(am_host{}, 0);
  am_host_fill(oh.get(), offsetof(am_host, parallel_for), c.ctx, nullptr, 5, 2, 1);
  CHECK(oh.get()->seed == 5);
  CHECK(oh.get()->struct_size == offsetof(am_host, parallel_for));
  CHECK(oh.untouched_from(offsetof(am_host, parallel_for)));
}

// Frozen value types (docs/abi.md): built by brace-initialisation and copied by value everywhere, so they
// carry no struct_size; a change of layout is a new type or an ABI bump. These asserts make an accidental
// change fail the build.
static_assert(sizeof(void *) != 8 || sizeof(am_array_view) == 88, "am_array_view is frozen (docs/abi.md)");
static_assert(offsetof(am_array_view, data) == 80 || sizeof(void *) != 8, "am_array_view is frozen");
static_assert(sizeof(am_rng) == 56 && offsetof(am_rng, spare) == 48, "am_rng is frozen (docs/abi.md)");
static_assert(AM_MAX_DIMS == 8, "AM_MAX_DIMS is part of am_array_view's frozen layout");

TEST_CASE("abi: frozen value types keep their layout") {
  CHECK(sizeof(am_rng) == 56);
  if (sizeof(void *) == 8) CHECK(sizeof(am_array_view) == 88);
}
