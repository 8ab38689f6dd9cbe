// Property: every size and value parameter of the numerical C API at and around its edges — zero sizes, leading
// dimensions below the size, NULL outputs, NaN/Inf and non-positive-definite inputs, invalid architectures and
// settings — through am_theory_*, the kernels, alignment, head scores, attention and ξ. Each call either succeeds
// with finite outputs (for finite inputs) or returns a non-OK status with a message; and the library never prints
// (stderr is captured around every call: a BLAS or LAPACK argument error would print there).
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <memory>

#include "problem.hpp"
#include "property.hpp"
#include "reference.hpp"

using namespace prop;

namespace {

// Captures what is written to fd 2 while alive.
struct Stderr {
  int saved = -1, fd = -1;
  char path[32] = "/tmp/am-property-err-XXXXXX";
  Stderr() {
    if (std::getenv("AM_PROPERTY_NO_CAPTURE")) return;  // e.g. to see a sanitizer's report
    std::fflush(stderr);
    fd = mkstemp(path);
    saved = dup(2);
    if (fd >= 0) dup2(fd, 2);
  }
  std::string text() {
    if (fd < 0) return "";
    std::fflush(stderr);
    std::string s;
    char buf[256];
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, (size_t)n);
    return s;
  }
  ~Stderr() {
    if (fd < 0) return;
    dup2(saved, 2);
    close(saved);
    close(fd);
    unlink(path);
  }
};

double edge_value(Gen &g) {
  const double v[] = {0.0, -1.0, NAN, INFINITY, -INFINITY, 1e-300, 1e300, 5e-324};
  return v[g.integer(0, 7)];
}

size_t edge_size(Gen &g, size_t n) {
  const size_t v[] = {0, 1, n ? n - 1 : 0, n, n + 1};
  return v[g.integer(0, 4)];
}

// The outcome of one call: OK with finite outputs, or a refusal with a message.
Outcome verdict(am_context *ctx, am_status st, const char *call, const vec &out, bool inputs_finite) {
  if (st != AM_OK && st != AM_CONVERGED_ROUNDOFF) return refusal(ctx, st, call);
  (void)inputs_finite;  // never NaN in a success, whatever the inputs
  if (!finite(out)) return {format("%s succeeded with non-finite outputs", call), ""};
  return {};
}

// A small valid problem to perturb.
struct Base {
  Problem p;
  bool ok = false;
  Base(Gen &g, am_context *ctx) {
    std::string why;
    ok = draw_problem(g, ctx, &p, &why, 12);
  }
};

Outcome edge_create(Gen &g, am_context *ctx, Problem &p) {
  am_arch a = p.arch;
  size_t P = p.P, N0 = p.N0;
  double T = p.T;
  vec xi = p.xi, y = p.y;
  bool finite_in = true;
  switch (g.integer(0, 6)) {
    case 0: P = edge_size(g, P); break;
    case 1: N0 = edge_size(g, N0); break;
    case 2: T = edge_value(g); break;
    case 3: a.layers = (uint32_t)std::vector<size_t>{0, 17, 1000}[g.integer(0, 2)]; break;
    case 4: a.heads[g.integer(0, p.L - 1)] = (uint32_t)std::vector<size_t>{0, 4097, 65536}[g.integer(0, 2)]; break;
    case 5: (g.chance(0.5) ? a.widths[g.integer(0, p.L)] : a.variances[g.integer(0, p.L + 1)]) = edge_value(g); break;
    default: (g.chance(0.5) ? xi[g.integer(0, xi.size() - 1)] : y[g.integer(0, y.size() - 1)]) = edge_value(g);
  }
  finite_in = finite(xi) && finite(y);
  // Sizes beyond the arrays are passed with arrays of that size (a caller's error would be out of bounds).
  xi.resize(std::max<size_t>(1, P * N0 * p.H), 0.5);
  y.resize(std::max<size_t>(1, P), 1.0);
  am_theory *th = nullptr;
  const am_status st = am_theory_create(ctx, &th, &a, P, N0, xi.data(), y.data(), T);
  g.note("create P=%zu N0=%zu T=%g layers=%u", P, N0, T, a.layers);
  Outcome o = verdict(ctx, st, "am_theory_create", {}, finite_in);
  if (st == AM_OK && th) {
    vec U(am_theory_u_size(th)), K(P * P);
    am_theory_gp_point(th, U.data());
    o = verdict(ctx, am_theory_kernel(ctx, th, U.data(), K.data()), "am_theory_kernel", K, finite_in);
  }
  am_theory_destroy(&th);
  return o;
}

Outcome edge_handle(Gen &g, am_context *ctx, Problem &p) {
  am_theory *th = nullptr;
  if (am_status st = am_theory_create(ctx, &th, &p.arch, p.P, p.N0, p.xi.data(), p.y.data(), p.T))
    return refusal(ctx, st, "am_theory_create");
  std::unique_ptr<am_theory, void (*)(am_theory *)> own(th, [](am_theory *t) { am_theory_destroy(&t); });
  vec U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  const size_t n = am_theory_vech_size(th);
  const size_t which = g.integer(0, 5);
  const size_t k = g.integer(0, U.size() - 1);
  const double v = edge_value(g);
  const bool bad_u = g.chance(0.5);
  if (bad_u) U[k] = g.chance(0.5) ? v : -U[k];  // NaN/Inf, or a negative diagonal: not positive definite
  g.note("handle call=%zu bad_u=%d entry=%zu value=%g", which, (int)bad_u, k, v);
  const bool fin = finite(U);
  if (which == 0) {
    am_action a{};
    a.struct_size = sizeof a;
    vec G(U.size()), H(n * n);
    const bool wg = g.chance(0.5), wh = g.chance(0.5);
    const am_status st = am_theory_action(ctx, th, U.data(), &a, wg ? G.data() : nullptr, wh ? H.data() : nullptr);
    vec out{a.S_code, a.energy, a.entropy, a.U_a};
    if (wg) out.insert(out.end(), G.begin(), G.end());
    if (wh) out.insert(out.end(), H.begin(), H.end());
    return verdict(ctx, st, "am_theory_action", out, fin);
  }
  if (which == 1) {
    const size_t Pt = edge_size(g, p.Pt);
    vec xt = p.xit, mean(Pt + 1), var(Pt + 1);
    xt.resize(std::max<size_t>(1, Pt * p.N0 * p.H), 0.25);
    mean.resize(Pt);
    var.resize(Pt);
    return verdict(ctx, am_theory_predict(ctx, th, U.data(), Pt, xt.data(), mean.data(), var.data()), "am_theory_predict",
                   mean, fin);
  }
  if (which == 2) {
    vec K(p.P * p.P);
    return verdict(ctx, am_theory_kernel(ctx, th, U.data(), K.data()), "am_theory_kernel", K, fin);
  }
  if (which == 3) {
    am_solve_settings s;
    am_solve_default_settings(&s);
    s.max_iter = (uint32_t)g.integer(0, 3);
    if (g.chance(0.3)) s.grad_tol = edge_value(g);
    if (g.chance(0.3)) s.decrement_tol = edge_value(g);
    s.warm_start = bad_u;
    am_solve_report r{};
    r.struct_size = g.chance(0.9) ? (uint32_t)sizeof r : 0;
    const am_status st = am_theory_solve(ctx, th, &s, U.data(), &r);
    if (st == AM_ERR_NOT_CONVERGED) return refusal(ctx, st, "am_theory_solve");
    return verdict(ctx, st, "am_theory_solve", U, true);
  }
  if (which == 4) {
    size_t nh = 0;
    for (size_t l = 0; l < p.L; ++l) nh += p.arch.heads[l];
    vec sc(nh);
    return verdict(ctx, am_head_scores(ctx, &p.arch, U.data(), sc.data()), "am_head_scores", sc, fin);
  }
  am_arch a = p.arch;
  (g.chance(0.5) ? a.widths[g.integer(0, p.L)] : a.variances[g.integer(0, p.L + 1)]) = edge_value(g);
  if (g.chance(0.3)) a.heads[0] += 1;
  return verdict(ctx, am_theory_set_arch(ctx, th, &a), "am_theory_set_arch", {}, true);
}

Outcome edge_kernels(Gen &g, am_context *ctx, Problem &p) {
  const size_t which = g.integer(0, 4);
  const size_t P = edge_size(g, p.P), N0 = edge_size(g, p.N0), H = p.H;
  const size_t ld = edge_size(g, P);
  g.note("kernels call=%zu P=%zu N0=%zu ld=%zu", which, P, N0, ld);
  vec xi(std::max<size_t>(1, P * N0 * H), 0.3), U(H * H, 0.0), K(std::max<size_t>(1, ld * P)), y(std::max<size_t>(1, P), 1.0);
  for (auto &x : xi) x = g.normal();
  for (size_t i = 0; i < H; ++i) U[i + i * H] = 1.0;
  if (which == 0) return verdict(ctx, am_kernel_u(ctx, N0, H, U.data(), P, xi.data(), P, xi.data(), K.data(), ld), "am_kernel_u", {}, true);
  if (which == 1) {
    vec d(std::max<size_t>(1, P));
    return verdict(ctx, am_kernel_u_diag(ctx, N0, H, U.data(), P, xi.data(), d.data()), "am_kernel_u_diag", d, true);
  }
  if (which == 2) return verdict(ctx, am_kernel_gp(ctx, &p.arch, N0, P, xi.data(), K.data(), ld), "am_kernel_gp", {}, true);
  if (which == 3) {
    const size_t pi = edge_size(g, H), pj = edge_size(g, H);
    return verdict(ctx, am_prekernel(ctx, N0, H, P, xi.data(), pi, pj, K.data(), ld), "am_prekernel", {}, true);
  }
  const size_t k = edge_size(g, P);
  vec ov(k + 1), ev(k + 1);
  return verdict(ctx, am_kernel_alignment(ctx, K.data(), P, ld, y.data(), k, ov.data(), g.chance(0.5) ? ev.data() : nullptr),
                 "am_kernel_alignment", {}, true);
}

Outcome edge_attention(Gen &g, am_context *ctx, Problem &p) {
  const size_t N0 = edge_size(g, p.N0), S = edge_size(g, 3), G = edge_size(g, 2);
  const bool qk = g.chance(0.5);
  vec W(std::max<size_t>(1, N0 * N0), 0.1), Q(std::max<size_t>(1, G * N0), 0.2), Kq(Q), X(std::max<size_t>(1, N0 * S * 5));  // am_xi below reads up to P = 5 examples
  for (auto &x : X) x = g.normal();
  if (g.chance(0.3)) X[g.integer(0, X.size() - 1)] = edge_value(g);
  const bool fin = finite(X);
  am_head h = AM_BILINEAR_HEAD(W.data());
  if (qk) h = am_head AM_QK_HEAD(G, Q.data(), Kq.data());
  const size_t which = g.integer(0, 2);
  g.note("attention call=%zu N0=%zu S=%zu qk=%d G=%zu", which, N0, S, (int)qk, G);
  if (which == 0) {
    vec O(std::max<size_t>(1, S * S));
    return verdict(ctx, am_attention(ctx, &h, N0, S, X.data(), O.data()), "am_attention", O, fin);
  }
  am_arch a;
  am_arch_default(&a);
  std::vector<am_head> hs(1, h);
  const am_readout ro = (am_readout)g.integer(0, 3);
  if (which == 1) {
    vec A(std::max<size_t>(1, S));
    return verdict(ctx, am_path_vectors(ctx, &a, hs.data(), ro, N0, S, X.data(), A.data()), "am_path_vectors", A, fin);
  }
  const size_t P = edge_size(g, 4);
  vec xi(std::max<size_t>(1, P * N0));
  return verdict(ctx, am_xi(ctx, &a, hs.data(), ro, P, N0, S, X.data(), xi.data()), "am_xi", xi, fin);
}

Outcome edges_case(Gen &g) {
  Context c;
  Base b(g, c.ctx);
  if (!b.ok) return {"the base problem failed", ""};
  const size_t area = g.integer(0, 3);
  Stderr err;
  const Outcome o = area == 0   ? edge_create(g, c.ctx, b.p)
                    : area == 1 ? edge_handle(g, c.ctx, b.p)
                    : area == 2 ? edge_kernels(g, c.ctx, b.p)
                                : edge_attention(g, c.ctx, b.p);
  const std::string printed = err.text();
  if (!printed.empty()) return {"the library printed: " + printed.substr(0, 300), ""};
  return o;
}

}  // namespace

// Found as edges:708 (seed 23): am_theory_kernel of inputs ×5.7e79 gave Inf with AM_OK (am_xi's twin: a 1e300
// input, NaN ξ with AM_OK, is pinned in property_regressions.cpp).
TEST_CASE("regression: edges case 708 (an overflowing kernel reported as OK)") {
  CHECK(replay("edges", 708, edges_case).refused == "non-finite value");
}

TEST_CASE("property: the numerical C API at the edges of every size and value parameter") {
  am_blas_threads_set(1);
  CHECK(run_cases("edges", kCiEdges, edges_case) > 0);
}
