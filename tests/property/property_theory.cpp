// Property: the theory's public C API (am_theory_create / _kernel / _predict / _action / _solve, am_kernel_gp,
// am_kernel_alignment, am_head_scores) on random problems (problem.hpp), each result against an independent
// computation: kernels by loops, predictions by dposv on the kernel system, the spectrum by dsyevd, gradients and
// Hessians by finite differences, a solution by the absence of descent directions.
#include <algorithm>
#include <cmath>
#include <memory>

#include "problem.hpp"
#include "property.hpp"
#include "reference.hpp"

using namespace prop;

namespace {

constexpr double kEps = 2.220446049250313e-16;

struct Handle {
  am_theory *th = nullptr;
  ~Handle() { am_theory_destroy(&th); }
};

// The reference of one U_1: the training kernel by loops, its spectrum and Γ's conditioning.
struct Reference {
  vec K, w;
  double bound = 0;  // the largest kernel_bound entry (train, test, cross)
  double E = 0;      // rounding allowance of one kernel entry
  double g0 = 0;     // λ_min(K)⁺ + T, the smallest eigenvalue of Γ
  double cond = 1;
};

Reference reference(const Problem &p, const double *U1) {
  Reference r;
  r.K = kernel_loops(p.xi, p.P, p.xi, p.P, p.N0, p.H, U1);
  eigh(r.K, p.P, &r.w);
  for (const vec *b : {&p.xi, &p.xit}) {
    const vec B = kernel_bound(*b, b == &p.xi ? p.P : p.Pt, *b, b == &p.xi ? p.P : p.Pt, p.N0, p.H, U1);
    r.bound = std::max(r.bound, max_abs(B));
  }
  r.E = 4.0 * double(p.N0 * p.H + p.H + p.P) * kEps * r.bound;
  r.g0 = std::max(r.w.front(), 0.0) + p.T;
  r.cond = (std::fabs(r.w.back()) + p.T) / r.g0;
  return r;
}

std::string check_kernel(am_context *ctx, am_theory *th, const Problem &p, const double *U1, const Reference &r, vec *K) {
  K->assign(p.P * p.P, NAN);
  if (am_status st = am_theory_kernel(ctx, th, U1, K->data())) return format("am_theory_kernel: %s", am_status_string(st));
  for (size_t k = 0; k < K->size(); ++k)
    if (!(std::fabs((*K)[k] - r.K[k]) <= r.E))  // NaN fails too
      return format("kernel entry %zu: %.17g, loops %.17g (allowance %.3g)", k, (*K)[k], r.K[k], r.E);
  return "";
}

// am_theory_predict at U_1 against dposv on (K + T·I) with the loops' kernels.
std::string check_predict(am_context *ctx, am_theory *th, const Problem &p, const double *U1, const Reference &r,
                          Outcome *out) {
  vec mean(p.Pt, NAN), var(p.Pt, NAN);
  const am_status st = am_theory_predict(ctx, th, U1, p.Pt, p.xit.data(), mean.data(), var.data());
  if (st) {
    *out = refusal(ctx, st, "am_theory_predict");
    // Γ = K + T·I with T > 0 is positive definite; only a numerically singular one may be refused.
    if (out->failure.empty() && st == AM_ERR_SINGULAR && r.g0 > 1e3 * r.E * double(p.P))
      return format("predict refused a well-conditioned system (λ_min + T = %.3g, allowance %.3g): %s", r.g0, r.E,
                    am_context_last_error(ctx));
    return out->failure;
  }
  if (!finite(mean) || !finite(var)) return "predict succeeded with non-finite mean or variance";
  if (r.g0 <= 1e3 * r.E * double(p.P)) return "";  // numerically singular: no digits to compare
  vec G = r.K, alpha = p.y, kx = kernel_loops(p.xi, p.P, p.xit, p.Pt, p.N0, p.H, U1), Z = kx;
  for (size_t i = 0; i < p.P; ++i) G[i + i * p.P] += p.T;
  if (!posv(G, p.P, &alpha, 1) || !posv(G, p.P, &Z, p.Pt)) return "";
  const vec kd = kernel_loops(p.xit, p.Pt, p.xit, p.Pt, p.N0, p.H, U1);
  double na = cblas_dnrm2((int)p.P, alpha.data(), 1);
  if (!(r.E < INFINITY) || !(na < INFINITY)) return "";  // magnitudes beyond float64: no allowance to compare with
  for (size_t t = 0; t < p.Pt; ++t) {
    double m = 0, q = 0;
    for (size_t i = 0; i < p.P; ++i) {
      m += kx[i + t * p.P] * alpha[i];
      q += kx[i + t * p.P] * Z[i + t * p.P];
    }
    const double nk = cblas_dnrm2((int)p.P, kx.data() + t * p.P, 1);
    // First-order perturbation bounds: kernel entries off by ≤ E, Γ⁻¹ amplifying by 1/g0, √P and P for norms.
    const double sp = std::sqrt((double)p.P), amp = 1 + nk * double(p.P) / r.g0;
    double tm = 10 * sp * r.E * na * amp + 1e-300, tv = 10 * double(p.P) * r.E * amp * amp + 1e-300;
    if (std::isnan(tm) || std::isnan(tv) || !std::isfinite(m) || !std::isfinite(kd[t + t * p.Pt] - q)) return "";
    const double v = kd[t + t * p.Pt] - q;
    if (!(std::fabs(mean[t] - m) <= tm)) return format("mean[%zu] = %.17g, dposv %.17g (tolerance %.3g)", t, mean[t], m, tm);
    if (!(std::fabs(var[t] - v) <= tv)) return format("var[%zu] = %.17g, dposv %.17g (tolerance %.3g)", t, var[t], v, tv);
  }
  return "";
}

// Head scores from their definition: Σ |U_1[a,b]| over path pairs where a or b goes through the head, max = 1.
std::string check_head_scores(am_context *ctx, const Problem &p, const double *U1) {
  size_t n = 0;
  for (size_t l = 0; l < p.L; ++l) n += p.arch.heads[l];
  vec lib(n + 1, -7.0), ref;
  if (am_status st = am_head_scores(ctx, &p.arch, U1, lib.data())) return format("am_head_scores: %s", am_status_string(st));
  if (lib[n] != -7.0) return "am_head_scores wrote past its Σ H_l outputs";
  size_t below = p.H;
  for (size_t l = 0; l < p.L; ++l) {
    const size_t Hl = p.arch.heads[l];
    below /= Hl;
    for (size_t h = 0; h < Hl; ++h) {
      double s = 0;
      for (size_t b = 0; b < p.H; ++b)
        for (size_t a = 0; a < p.H; ++a)
          if ((a / below) % Hl == h || (b / below) % Hl == h) s += std::fabs(U1[a + b * p.H]);
      ref.push_back(s);
    }
  }
  const double m = max_abs(ref);
  for (size_t i = 0; i < n; ++i) {
    const double want = m > 0 ? ref[i] / m : ref[i];
    if (!(std::fabs(lib[i] - want) <= 1e-12 * (1 + want) * double(p.H * p.H)))
      return format("head score %zu: %.17g, definition %.17g", i, lib[i], want);
  }
  return "";
}

// The alignment of the library's kernel at k from every edge, against dsyevd: am_kernel_alignment on the kernel, and
// am_theory_alignment of the handle at U (from the kernel's factor when N0·H < P and k ≤ N0·H; with or without the
// kernel handed in).
std::string check_alignment(am_context *ctx, am_theory *th, Gen &g, const Problem &p, const double *U1, const vec &K) {
  const size_t r = p.N0 * p.H;
  const size_t e[] = {1, 2, p.P > 1 ? p.P - 1 : 1, p.P, p.P + 1, 30, r, r + 1};
  const size_t k = g.chance(0.7) ? e[g.integer(0, 7)] : g.integer(1, p.P + 1);
  g.note("alignment_k=%zu", k);
  vec ov(k), ev(k);
  const am_status st = am_kernel_alignment(ctx, K.data(), p.P, p.P, p.y.data(), k, ov.data(), ev.data());
  if (k > p.P) return st == AM_ERR_SHAPE && *am_context_last_error(ctx) ? "" : "k > P not refused with a message";
  if (st) return format("am_kernel_alignment: %s: %s", am_status_string(st), am_context_last_error(ctx));
  std::string f = compare_alignment(K, p.P, p.y, k, ov, ev);
  if (!f.empty()) return f;
  const bool given = g.chance(0.5);
  if (am_status s2 = am_theory_alignment(ctx, th, U1, given ? K.data() : nullptr, k, ov.data(), ev.data()))
    return format("am_theory_alignment: %s: %s", am_status_string(s2), am_context_last_error(ctx));
  f = compare_alignment(K, p.P, p.y, k, ov, ev);
  return f.empty() ? "" : format("am_theory_alignment (%s, N0·H = %zu): %s", given ? "kernel given" : "no kernel", r,
                                 f.c_str());
}

// ---------------------------------------------------------------------------------------------- U sets
struct Layout {
  size_t L = 1, usize = 0, vsize = 0;
  std::vector<size_t> D, off;  // D[l], off[l] for l = 1..L
};

Layout layout(const Problem &p, const am_theory *th) {
  Layout y;
  y.L = p.L;
  y.usize = am_theory_u_size(th);
  y.vsize = am_theory_vech_size(th);
  y.D.assign(p.L + 1, 0);
  y.off.assign(p.L + 1, 0);
  for (uint32_t l = 1; l <= p.L; ++l) {
    y.D[l] = am_arch_dim(&p.arch, l);
    y.off[l] = am_theory_u_offset(th, l);
  }
  return y;
}

// The GP point of spec §3: U_l = (s_l⋯s_L s_a)·I.
std::string check_gp_point(const Problem &p, const Layout &y, const vec &U) {
  for (uint32_t l = 1; l <= p.L; ++l) {
    double c = p.arch.variances[p.L + 1];
    for (uint32_t k = l; k <= p.L; ++k) c *= p.arch.variances[k];
    for (size_t j = 0; j < y.D[l]; ++j)
      for (size_t i = 0; i < y.D[l]; ++i)
        if (U[y.off[l] + i + j * y.D[l]] != (i == j ? c : 0.0)) return format("GP point U_%u[%zu,%zu] is not %g·I", l, i, j, c);
  }
  return "";
}

// A random positive-definite U set: c_l (I + B Bᵀ/d) around the GP scale, or nearly singular (1e-8 I + rank-1).
vec random_u(Gen &g, const Layout &y, const vec &Ugp) {
  vec U(y.usize, 0.0);
  const bool near_singular = g.chance(0.1);
  g.note("U=%s", near_singular ? "near_singular" : "random");
  for (uint32_t l = 1; l <= y.L; ++l) {
    const size_t d = y.D[l], rank = near_singular ? 1 : d;
    const double c = Ugp[y.off[l]];
    vec B(d * rank);
    for (auto &b : B) b = 0.7 * g.normal();
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i < d; ++i) {
        double s = 0;
        for (size_t k = 0; k < rank; ++k) s += B[i + k * d] * B[j + k * d];
        U[y.off[l] + i + j * d] = c * ((i == j ? (near_singular ? 1e-8 : 1.0) : 0.0) + s / double(d));
      }
  }
  return U;
}

// A random symmetric direction, each layer's of Frobenius norm λ_min(U_l) (so U ± h·D stays PD for h < 1).
vec direction(Gen &g, const Layout &y, const vec &U) {
  vec D(y.usize, 0.0);
  for (uint32_t l = 1; l <= y.L; ++l) {
    const size_t d = y.D[l];
    vec Ul(U.begin() + y.off[l], U.begin() + y.off[l] + d * d), w;
    eigh(Ul, d, &w);
    double nf = 0;
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i <= j; ++i) {
        const double v = g.normal();
        D[y.off[l] + i + j * d] = D[y.off[l] + j + i * d] = v;
        nf += (i == j ? 1 : 2) * v * v;
      }
    for (size_t k = 0; k < d * d; ++k) D[y.off[l] + k] *= std::max(w[0], 0.0) / std::sqrt(nf);
  }
  return D;
}

vec axpy(const vec &U, double h, const vec &D) {
  vec V(U);
  for (size_t k = 0; k < V.size(); ++k) V[k] += h * D[k];
  return V;
}

vec vech(const Layout &y, const vec &M, bool gradient) {  // gradient: g_k = Tr(G E_k) (2 G_ij off the diagonal)
  vec v;
  for (uint32_t l = 1; l <= y.L; ++l)
    for (size_t j = 0; j < y.D[l]; ++j)
      for (size_t i = 0; i <= j; ++i) v.push_back((gradient && i != j ? 2.0 : 1.0) * M[y.off[l] + i + j * y.D[l]]);
  return v;
}

// The largest condition number of the U_l (their inverses enter the entropy and its derivatives).
double cond_u(const Layout &y, const vec &U) {
  double c = 1;
  for (uint32_t l = 1; l <= y.L; ++l) {
    const size_t d = y.D[l];
    vec w;
    eigh(vec(U.begin() + y.off[l], U.begin() + y.off[l] + d * d), d, &w);
    c = std::max(c, w[0] > 0 ? w[d - 1] / w[0] : INFINITY);
  }
  return std::min(c, 1e16);
}

// Rounding allowance of the action: the energy carries Γ's conditioning, the entropy the U_l's.
double action_noise(const am_action &a, const Reference &r, double cu) {
  return 64 * kEps * (std::fabs(a.energy) * std::min(r.cond, 1e16) + std::fabs(a.entropy) * cu + std::fabs(a.S_code));
}

am_action new_action() {
  am_action a{};
  a.struct_size = sizeof a;
  return a;
}

// The action's gradient (and, for small U sets, its Hessian) against central differences at h and h/2: the
// difference of the two estimates bounds the truncation error, the action's rounding over h the rest.
std::string check_derivatives(am_context *ctx, am_theory *th, Gen &g, const Layout &y, const vec &U, const Reference &r,
                              Outcome *out) {
  const bool hess = y.vsize <= 160;
  vec G(y.usize), Hs(hess ? y.vsize * y.vsize : 0);
  am_action a = new_action();
  am_status st = am_theory_action(ctx, th, U.data(), &a, G.data(), hess ? Hs.data() : nullptr);
  if (st) return (*out = refusal(ctx, st, "am_theory_action")).failure;
  if (!std::isfinite(a.S_code) || !finite(G) || !finite(Hs)) return "action succeeded with non-finite values";
  const vec D = direction(g, y, U);
  double an = 0;
  for (size_t k = 0; k < y.usize; ++k) an += G[k] * D[k];
  double fd[2];
  vec gfd[2];
  for (int s = 0; s < 2; ++s) {
    const double h = s == 0 ? 1e-4 : 5e-5;
    am_action ap = new_action(), am = new_action();
    vec Gp(y.usize), Gm(y.usize);
    if (am_theory_action(ctx, th, axpy(U, h, D).data(), &ap, hess ? Gp.data() : nullptr, nullptr) ||
        am_theory_action(ctx, th, axpy(U, -h, D).data(), &am, hess ? Gm.data() : nullptr, nullptr))
      return "";  // a step left the domain (or Γ became singular): nothing to compare
    fd[s] = (ap.S_code - am.S_code) / (2 * h);
    const vec vp = vech(y, Gp, true), vm = vech(y, Gm, true);
    gfd[s].resize(vp.size());
    for (size_t k = 0; k < vp.size(); ++k) gfd[s][k] = (vp[k] - vm[k]) / (2 * h);
  }
  const double cu = cond_u(y, U), noise = action_noise(a, r, cu);
  const double tol = 4 * std::fabs(fd[0] - fd[1]) + 4 * noise / 5e-5 + (1e-7 + 64 * kEps * cu) * std::fabs(an);
  if (!(std::fabs(an - fd[1]) <= tol))
    return format("directional derivative %.17g, central difference %.17g (tolerance %.3g)", an, fd[1], tol);
  if (!hess) return "";
  const vec v = vech(y, D, false), gv = vech(y, G, true);
  const size_t n = y.vsize;
  double hmax = 0;
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < n; ++i) {
      hmax = std::max(hmax, std::fabs(Hs[i + j * n]));
      if (!(std::fabs(Hs[i + j * n] - Hs[j + i * n]) <= 1e-9 * std::fabs(Hs[i + j * n]) + 1e-300 + 64 * kEps * hmax))
        return format("Hessian not symmetric at (%zu, %zu)", i, j);
    }
  // The gradient's rounding is relative to the terms it sums (they cancel at a solution): ~ |H|·|U| and |g|.
  const double gscale = std::max(max_abs(gv), hmax * max_abs(vech(y, U, false)));
  const double gnoise = 64 * kEps * gscale * std::max(std::min(r.cond, 1e16), cu);
  for (size_t i = 0; i < n; ++i) {
    double hv = 0;
    for (size_t j = 0; j < n; ++j) hv += Hs[i + j * n] * v[j];
    const double t = 4 * std::fabs(gfd[0][i] - gfd[1][i]) + 4 * gnoise / 5e-5 +
                     (1e-6 + 64 * kEps * cu) * (std::fabs(hv) + hmax * max_abs(v));
    if (!(std::fabs(hv - gfd[1][i]) <= t))
      return format("Hessian·v [%zu] = %.17g, central difference of the gradient %.17g (tolerance %.3g)", i, hv, gfd[1][i], t);
  }
  return "";
}

// am_theory_solve from the GP point or a warm start, with settings at their edges. A converged solution must be a
// positive-definite U set no higher than the start, from which no direction descends by more than the reported
// Newton decrement allows; *U gets it (solved = true), else the case goes on at a random U.
std::string check_solve(am_context *ctx, am_theory *th, Gen &g, const Problem &p, const Layout &y, const vec &Ugp, vec *U,
                        bool *solved, Outcome *out) {
  am_solve_settings s;
  am_solve_default_settings(&s);
  if (g.chance(0.1)) s.max_iter = (uint32_t)g.integer(0, 2);
  if (g.chance(0.05)) s.grad_tol = 0;
  s.warm_start = g.chance(0.2);
  g.note("solve max_iter=%u grad_tol=%g warm=%d", s.max_iter, s.grad_tol, s.warm_start);
  *U = s.warm_start ? random_u(g, y, Ugp) : Ugp;
  am_action a0 = new_action();
  const bool start_ok = am_theory_action(ctx, th, U->data(), &a0, nullptr, nullptr) == AM_OK;
  am_solve_report rep{};
  rep.struct_size = sizeof rep;
  const am_status st = am_theory_solve(ctx, th, &s, U->data(), &rep);
  if (st != AM_OK && st != AM_CONVERGED_ROUNDOFF) {
    *out = refusal(ctx, st, "am_theory_solve");
    if (!out->failure.empty() || st != AM_ERR_NOT_CONVERGED) return out->failure;
    out->refused.clear();  // not converged: the last iterate must still be finite; the case goes on elsewhere
    return finite(*U) ? "" : "solve not converged left a non-finite U";
  }
  if (!finite(*U)) return "solve succeeded with a non-finite U";
  for (uint32_t l = 1; l <= p.L; ++l)
    if (!positive_definite(U->data() + y.off[l], y.D[l])) return format("solution U_%u is not positive definite", l);
  for (double v : {rep.S_code, rep.energy, rep.entropy, rep.U_a, rep.grad_max, rep.grad_vech_norm, rep.decrement})
    if (!std::isfinite(v)) return "solve report has non-finite fields";
  am_action a = new_action();
  if (am_theory_action(ctx, th, U->data(), &a, nullptr, nullptr)) return "the action fails at the solution";
  if (a.S_code != rep.S_code) return format("report S = %.17g, action at U %.17g", rep.S_code, a.S_code);
  const Reference r = reference(p, U->data());
  const double cu = cond_u(y, *U), noise = action_noise(a, r, cu), slack = 0.51 * std::max(rep.decrement, 0.0) + 10 * noise +
                                                   1e-10 * std::max(1.0, std::fabs(a.S_code));
  if (start_ok && !(a.S_code <= a0.S_code + slack + action_noise(a0, r, cu)))
    return format("solution action %.17g above the start's %.17g", a.S_code, a0.S_code);
  for (int d = 0; d < 2; ++d) {
    const vec D = direction(g, y, *U);
    for (double h : {1e-3, -1e-3}) {
      am_action b = new_action();
      if (am_theory_action(ctx, th, axpy(*U, h, D).data(), &b, nullptr, nullptr)) continue;
      if (!(b.S_code >= a.S_code - slack))
        return format("descent from the solution: S(U%+g·D) = %.17g < S(U) = %.17g (slack %.3g, decrement %.3g)", h,
                      b.S_code, a.S_code, slack, rep.decrement);
    }
  }
  *solved = true;
  return "";
}

// One U: the library's kernel, predictions, alignment and head scores against the references.
std::string check_at(am_context *ctx, am_theory *th, Gen &g, const Problem &p, const vec &U, Outcome *out) {
  const Reference r = reference(p, U.data());
  vec K;
  std::string f = check_kernel(ctx, th, p, U.data(), r, &K);
  if (f.empty()) f = check_predict(ctx, th, p, U.data(), r, out);
  if (f.empty() && out->refused.empty()) f = check_alignment(ctx, th, g, p, U.data(), K);
  if (f.empty()) f = check_head_scores(ctx, p, U.data());
  return f;
}

Outcome theory_case(Gen &g) {
  Context c;
  Problem p;
  std::string why;
  if (!draw_problem(g, c.ctx, &p, &why)) return {why, ""};
  Handle h;
  am_status st = am_theory_create(c.ctx, &h.th, &p.arch, p.P, p.N0, p.xi.data(), p.y.data(), p.T);
  if (st) return refusal(c.ctx, st, "am_theory_create");
  // Temperatures outside (0, ∞) are refused with a message and leave the handle as it was.
  const double bad[] = {0.0, -1.0, NAN, INFINITY};
  st = am_theory_set_temperature(c.ctx, h.th, bad[g.integer(0, 3)]);
  if (st != AM_ERR_DOMAIN || !*am_context_last_error(c.ctx)) return {"a bad temperature was not refused with a message", ""};
  const Layout y = layout(p, h.th);
  if (am_theory_u_offset(h.th, 0) != 0 || am_theory_u_offset(h.th, (uint32_t)p.L + 1) != 0) return {"u_offset outside 1..L", ""};
  vec Ugp(y.usize);
  am_theory_gp_point(h.th, Ugp.data());
  Outcome out;
  std::string f = check_gp_point(p, y, Ugp);
  if (f.empty()) {  // the GP kernel two ways: am_kernel_gp and the theory's kernel at the GP point
    vec Kgp(p.P * p.P, NAN);
    const Reference r = reference(p, Ugp.data());
    if ((st = am_kernel_gp(c.ctx, &p.arch, p.N0, p.P, p.xi.data(), Kgp.data(), p.P))) return {"am_kernel_gp failed", ""};
    for (size_t k = 0; k < Kgp.size() && f.empty(); ++k)
      if (!(std::fabs(Kgp[k] - r.K[k]) <= r.E)) f = format("am_kernel_gp entry %zu: %.17g, loops %.17g", k, Kgp[k], r.K[k]);
  }
  if (f.empty()) f = check_at(c.ctx, h.th, g, p, Ugp, &out);
  if (!f.empty() || !out.refused.empty()) return {f, out.refused};
  vec U;
  bool solved = false;
  if (y.vsize <= 160 && p.P <= 120 && g.chance(0.6)) f = check_solve(c.ctx, h.th, g, p, y, Ugp, &U, &solved, &out);
  if (!f.empty() || !out.refused.empty()) return {f, out.refused};
  if (!solved) U = random_u(g, y, Ugp);
  f = check_at(c.ctx, h.th, g, p, U, &out);
  if (f.empty() && out.refused.empty()) f = check_derivatives(c.ctx, h.th, g, y, U, reference(p, U.data()), &out);
  return {f, out.refused};
}

}  // namespace

TEST_CASE("property: theory API on random problems (create, kernels, GP, predict, action, solve, alignment, head scores)") {
  am_blas_threads_set(1);
  CHECK(run_cases("theory", kCiTheory, theory_case) > 0);
}
