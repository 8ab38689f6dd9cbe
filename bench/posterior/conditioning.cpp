// Conditioning of the posterior at a posterior point, three ways (the measurement behind the default
// model=marginal, docs/posterior.md): the full model, the readout integrated out (Schur complement of the
// a block of the Hessian) and V_0 integrated out (MarginalDensity, exact). The point is the last draw of one
// marginal chain after `warmup` iterations. Hessians of −log p by central differences of the analytic gradient;
// each is Jacobi-scaled (diag(H)^(−1/2) H diag(H)^(−1/2): what a diagonal mass matrix can do at best) and
// reported as √(λ_max/λ_min⁺), about the number of leapfrog steps per independent draw.
//
// Usage: posterior_conditioning EXPORT_DIR [seed=5] [warmup=200]
//   EXPORT_DIR from `attnmech run ... --estimator posterior --set export_dir=EXPORT_DIR`. Not part of CI
//   (the full Hessian is dim² doubles: 59 MB and a few seconds at N = 10).
#include "marginal.h"
#include "posterior.h"

#include <attnmech/array.h>
#include <attnmech/context.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace am::posterior;

namespace {

std::vector<double> load(am_context *ctx, const std::string &path) {
  am_array *a = nullptr;
  if (am_npy_read(ctx, path.c_str(), &a) != AM_OK) {
    std::fprintf(stderr, "cannot read %s: %s\n", path.c_str(), am_context_last_error(ctx));
    std::exit(1);
  }
  const am_array_view v = am_array_get_view(a);
  const size_t n = am_array_view_count(&v);
  std::vector<double> x(n);
  am_array_to_f64_c(ctx, &v, x.data(), n);
  am_array_destroy(&a);
  return x;
}

// The numbers after "key": in model.json (a list or one number).
std::vector<double> json_numbers(const std::string &text, const std::string &key) {
  const size_t k = text.find("\"" + key + "\"");
  if (k == std::string::npos) {
    std::fprintf(stderr, "model.json has no %s\n", key.c_str());
    std::exit(1);
  }
  size_t i = text.find(':', k) + 1;
  while (text[i] == ' ') ++i;
  const bool list = text[i] == '[';
  const size_t end = list ? text.find(']', i) : text.find_first_of(",}", i);
  std::string body = text.substr(list ? i + 1 : i, end - (list ? i + 1 : i));
  std::replace(body.begin(), body.end(), ',', ' ');
  std::istringstream in(body);
  std::vector<double> out;
  for (double v; in >> v;) out.push_back(v);
  return out;
}

template <class Grad>
std::vector<double> neg_hessian(Grad grad, std::vector<double> q) {
  const size_t d = q.size();
  std::vector<double> H(d * d), gp(d), gm(d);
  const double h = 1e-5;
  for (size_t i = 0; i < d; ++i) {
    const double t = q[i];
    q[i] = t + h;
    grad(q.data(), gp.data());
    q[i] = t - h;
    grad(q.data(), gm.data());
    q[i] = t;
    for (size_t j = 0; j < d; ++j) H[j + d * i] = -(gp[j] - gm[j]) / (2 * h);
  }
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < i; ++j) H[i + d * j] = H[j + d * i] = 0.5 * (H[i + d * j] + H[j + d * i]);
  return H;
}

void report(const char *name, std::vector<double> H, size_t d) {
  std::vector<double> s(d), w(d);
  for (size_t i = 0; i < d; ++i) s[i] = 1 / std::sqrt(std::fabs(H[i * (d + 1)]));
  for (size_t j = 0; j < d; ++j)
    for (size_t i = 0; i < d; ++i) H[i + d * j] *= s[i] * s[j];
  LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'L', static_cast<int>(d), H.data(), static_cast<int>(d), w.data());
  double mx = 0, mn = HUGE_VAL;
  size_t nonpos = 0;
  for (double v : w) {
    mx = std::max(mx, std::fabs(v));
    if (v > 0) mn = std::min(mn, v);
    else ++nonpos;
  }
  std::printf("%-34s dim %5zu  max %9.3g  min>0 %9.3g  sqrt(cond) %7.1f  (%zu eigenvalues <= 0)\n", name, d, mx, mn,
              std::sqrt(mx / mn), nonpos);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s EXPORT_DIR [seed] [warmup]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int seed = argc > 2 ? std::atoi(argv[2]) : 5, warmup = argc > 3 ? std::atoi(argv[3]) : 200;
  am_context *ctx = nullptr;
  am_context_settings cs;
  am_context_default_settings(&cs);
  am_context_create(&ctx, &cs);
  std::ifstream in(dir + "/model.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string js = ss.str();
  NetworkSpec sp;
  sp.L = static_cast<size_t>(json_numbers(js, "layers").at(0));
  for (double v : json_numbers(js, "heads")) sp.heads.push_back(static_cast<size_t>(v));
  for (double v : json_numbers(js, "widths")) sp.widths.push_back(static_cast<size_t>(v));
  sp.variances = json_numbers(js, "variances");
  sp.temperature = json_numbers(js, "temperature").at(0);
  sp.N0 = static_cast<size_t>(json_numbers(js, "N0").at(0));
  const std::vector<double> xi = load(ctx, dir + "/xi_train.npy"), y = load(ctx, dir + "/y_train.npy");
  const Network net(sp, y.size(), xi.data(), y.data());
  const am::sdk::BlasThreads one(1);
  PosteriorSettings st;
  st.chains = 1;
  st.sampler.warmup = warmup;
  st.sampler.samples = 1;
  st.keep_draws = true;
  st.marginal = true;
  am_rng r;
  am_rng_init(&r, static_cast<uint64_t>(seed), 0);
  const auto ch = run_chains(net, 0, nullptr, st, r, nullptr, nullptr);
  if (!ch[0].error.empty() || ch[0].draws.size() != net.dim()) {
    std::fprintf(stderr, "the chain failed: %s\n", ch[0].error.c_str());
    return 1;
  }
  const std::vector<double> th = ch[0].draws;
  std::printf("P = %zu, T = %g, widths W_0 = %zu, a posterior point after %d warm-up iterations (seed %d)\n", y.size(),
              sp.temperature, sp.widths[0], warmup, seed);
  Network::Work wk;
  net.init_work(wk);
  const std::vector<double> Hf = neg_hessian([&](const double *q, double *g) { net.log_posterior(q, g, wk); }, th);
  const size_t D = net.dim(), oa = net.offset_a(), na = D - oa, nb = oa;
  report("full (every weight)", Hf, D);
  // readout integrated out: H_bb − H_ba H_aa⁻¹ H_ab (exact for the quadratic part)
  std::vector<double> Haa(na * na), Xt(na * nb), S(nb * nb);
  for (size_t j = 0; j < na; ++j)
    for (size_t i = 0; i < na; ++i) Haa[i + na * j] = Hf[(oa + i) + D * (oa + j)];
  for (size_t i = 0; i < nb; ++i)
    for (size_t j = 0; j < na; ++j) Xt[j + na * i] = Hf[i + D * (oa + j)];
  const std::vector<double> Hab = Xt;
  LAPACKE_dposv(LAPACK_COL_MAJOR, 'L', static_cast<int>(na), static_cast<int>(nb), Haa.data(), static_cast<int>(na),
                Xt.data(), static_cast<int>(na));
  for (size_t j = 0; j < nb; ++j)
    for (size_t i = 0; i < nb; ++i) {
      double v = Hf[i + D * j];
      for (size_t k = 0; k < na; ++k) v -= Hab[k + na * i] * Xt[k + na * j];
      S[i + nb * j] = v;
    }
  report("readout a integrated out (Schur)", S, nb);
  const PairKernels C(net);
  MarginalDensity md(net, C);
  const size_t off = sp.widths[0] * sp.N0;
  const std::vector<double> q(th.begin() + static_cast<std::ptrdiff_t>(off), th.end());
  report("V_0 integrated out (exact)", neg_hessian([&](const double *x, double *g) { md.log_density(x, g); }, q),
         q.size());
  am_context_destroy(&ctx);
  return 0;
}
