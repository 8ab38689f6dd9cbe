// bench/msa — the alignment fit (run_msa_fit) on .npy files written by bench/msa/a2m_to_npy.py, timed, with the
// scores written in plmc's -c format and their top-L overlap with plmc's (|i − j| ≥ 6). Measurement only (the
// task `msa` is what users run). Not built by meson; by hand, from a configured build:
//   g++ -O2 -std=c++17 -Ilibcore/include -Ilibcore/include/attnmech -Ibuild/libcore/include/attnmech
//       -Iplugins/common/potts -Iplugins/common/msa bench/msa/fit_npy.cpp build/plugins/common/msa/libmsa_core.a
//       build/plugins/common/potts/libpotts_core.a build/plugins/common/potts/libpotts_simd_*.a -Lbuild/libcore
//       -lattnmech -lopenblas -lz -o /tmp/fit_npy
//   LD_LIBRARY_PATH=build/libcore /tmp/fit_npy DIR PLMC.couplings threads=2 heads=8 rtol=1e-4 model=factored ...
#include <attnmech/array.h>
#include <attnmech/plugin.hpp>
#include <attnmech/record.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dataset.hpp"
#include "msa_fit.h"

namespace {

// Per-iteration trace (the fit's debug log) with the process CPU seconds.
void trace(void *, am_log_level, const char *msg) {
  std::fprintf(stderr, "%.1f s  %s\n", (double)std::clock() / CLOCKS_PER_SEC, msg);
}

struct Threaded {
  am_context *ctx = nullptr;
  am_host host{};
  explicit Threaded(int threads) {
    am_context_settings s;
    am_context_default_settings(&s);
    s.threads = threads;
    s.log = trace;
    am_context_create(&ctx, &s);
    am_host_init(&host, ctx, nullptr, 0, 0, threads);
  }
  ~Threaded() { am_context_destroy(&ctx); }
};

bool load(am_context *ctx, am_record *ds, const std::string &dir, const char *file, const char *key) {
  am_array *a = nullptr;
  if (am_npy_read(ctx, (dir + "/" + file).c_str(), &a) != AM_OK) return false;
  const am_array_view v = am_array_get_view(a);
  am_record_set_array(ds, key, &v);
  am_array_destroy(&a);
  return true;
}

// Top-n pairs (|i − j| ≥ 6) of a "i a j b 0 score" file, in file order after sorting by score.
std::vector<std::pair<int, int>> top_pairs(const std::string &path, size_t n) {
  std::ifstream f(path);
  std::vector<std::pair<double, std::pair<int, int>>> all;
  int i, j;
  std::string a, b, z;
  double s;
  while (f >> i >> a >> j >> b >> z >> s)
    if (std::abs(i - j) >= 6) all.push_back({-s, {i, j}});
  std::stable_sort(all.begin(), all.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<std::pair<int, int>> t;
  for (size_t k = 0; k < std::min(n, all.size()); ++k) t.push_back(all[k].second);
  return t;
}

double overlap(const std::vector<std::pair<int, int>> &a, const std::vector<std::pair<int, int>> &b) {
  std::set<std::pair<int, int>> sb(b.begin(), b.end());
  size_t n = 0;
  for (const auto &x : a) n += sb.count(x);
  return a.empty() ? 0.0 : (double)n / a.size();
}

void write_couplings(const am_record *run, const char *path) {
  const am_record *c = am_record_get(run, "contacts");
  auto vec = [&](const char *k) {
    size_t n = 0;
    am_record_get_vector(c, k, nullptr, 0, &n);
    std::vector<double> v(n);
    am_record_get_vector(c, k, v.data(), n, &n);
    return v;
  };
  const auto i = vec("i"), j = vec("j"), ri = vec("res_i"), rj = vec("res_j"), s = vec("score");
  FILE *f = std::fopen(path, "w");
  for (size_t k = 0; k < i.size(); ++k)
    std::fprintf(f, "%d %c %d %c 0 %f\n", (int)i[k], (char)ri[k], (int)j[k], (char)rj[k], s[k]);
  std::fclose(f);
}

// plain=1: the tokens alone (no weights, no alphabet): the collapsed fit of the potts task's path, as the issue's
// 32-head case ran it; prints its iterations, loss and stop reason.
int plain_fit(am_context *ctx, const am::potts::PLOptions &o, am_record *ds) {
  am_record *run = nullptr;
  am_record_create(&run);
  am_rng rng;
  am_rng_init(&rng, 0, 0);
  const std::clock_t c0 = std::clock();
  const am_status st = am::potts::fit_dataset(ctx, o, ds, rng, run, am::potts::run_pseudolikelihood);
  double it = 0, loss = 0;
  const am_record *opt = am_record_get(run, "optimizer");
  am_record_get_number(opt, "iterations", &it);
  am_record_get_number(run, "train_loss", &loss);
  const char *why = nullptr;
  am_record_get_string(run, "stop_reason", &why);
  std::printf("plain collapsed fit, heads %d: status %d, %g iterations, train loss %.4f (log 21 = %.4f), cpu %.1f s\n"
              "  stop: %s\n  curve:", o.heads, (int)st, it, loss, std::log(21.0),
              (double)(std::clock() - c0) / CLOCKS_PER_SEC, why ? why : "?");
  const am_record *c = am_record_get(run, "curves");
  size_t n = 0;
  am_record_get_vector(c, "train_loss", nullptr, 0, &n);
  std::vector<double> ep(n), tl(n);
  am_record_get_vector(c, "epoch", ep.data(), n, &n);
  am_record_get_vector(c, "train_loss", tl.data(), n, &n);
  for (size_t k = 0; k < n; ++k) std::printf(" %g:%.4f", ep[k], tl[k]);
  std::printf("\n");
  am_record_destroy(&run);
  am_record_destroy(&ds);
  return st == AM_OK ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const std::string dir = argv[1], plmc = argv[2];
  std::map<std::string, std::string> kv;
  for (int k = 3; k < argc; ++k) {
    const std::string a = argv[k];
    kv[a.substr(0, a.find('='))] = a.substr(a.find('=') + 1);
  }
  auto num = [&](const char *k, double d) { return kv.count(k) ? std::atof(kv[k].c_str()) : d; };
  Threaded th((int)num("threads", 1));
  am::potts::PLOptions o;
  am::msa::FitOptions fo;
  o.heads = (int)num("heads", 1);
  fo.rtol = num("rtol", fo.rtol);
  o.stop_progress = num("stop_progress", o.stop_progress);
  o.max_iter = (int)num("max_iter", o.max_iter);
  fo.lambda_e = num("lambda_e", fo.lambda_e);
  fo.lambda_h = num("lambda_h", fo.lambda_h);
  fo.logit_scale = num("logit_scale", fo.logit_scale);
  fo.symmetric = num("symmetric", 0) != 0;
  o.stop_tol = num("stop_tol", o.stop_tol);
  if (kv.count("model")) fo.model = kv["model"];
  o.parallel = am::potts::host_parallel_for(am::sdk::Host(&th.host));
  am_record *ds = nullptr, *run = nullptr;
  am_record_create(&ds);
  am_record_create(&run);
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_number(ds, "C", 21);
  if (!load(th.ctx, ds, dir, "tokens.npy", "tokens")) return 1;
  if (num("plain", 0) != 0) return plain_fit(th.ctx, o, ds);
  am_record_set_bool(ds, am::msa::kAlignmentKey, 1);  // as the task msa marks its datasets
  am_record_set_string(ds, "alphabet", "-ACDEFGHIKLMNPQRSTVWY");
  if (!load(th.ctx, ds, dir, "weights.npy", "weights") || !load(th.ctx, ds, dir, "site_numbers.npy", "site_numbers"))
    return 1;
  std::ifstream ff(dir + "/focus.txt");
  std::string focus;
  ff >> focus;
  am_record_set_string(ds, "focus_sequence", focus.c_str());
  am_rng rng;
  am_rng_init(&rng, 0, 0);
  const std::clock_t c0 = std::clock();
  const am_status st = am::msa::run_msa_fit(th.ctx, o, fo, ds, rng, run);
  const double cpu = (double)(std::clock() - c0) / CLOCKS_PER_SEC;
  if (st != AM_OK) {
    std::fprintf(stderr, "fit failed: %s\n", am_context_last_error(th.ctx));
    return 1;
  }
  const std::string out = kv.count("out") ? kv["out"] : "/tmp/fit_npy.couplings";
  write_couplings(run, out.c_str());
  double it = 0, wall = 0, loss = 0, f = 0;
  am_record_get_number(run, "iterations", &it);
  am_record_get_number(run, "fit_time_s", &wall);
  am_record_get_number(run, "train_loss", &loss);
  am_record_get_number(run, "objective", &f);
  const char *why = nullptr;
  am_record_get_string(run, "stop_reason", &why);
  const size_t L = focus.size();
  std::printf("heads %d model %s: %g iterations, objective %.6f, train loss %.5f, wall %.1f s, cpu %.1f s\n  stop: %s\n",
              o.heads, fo.model.c_str(), it, f, loss, wall, cpu, why ? why : "?");
  for (size_t n : {L, L / 2, L / 5})
    std::printf("  top-%zu overlap with plmc: %.3f\n", n, overlap(top_pairs(out, n), top_pairs(plmc, n)));
  am_record_destroy(&ds);
  am_record_destroy(&run);
  return 0;
}
