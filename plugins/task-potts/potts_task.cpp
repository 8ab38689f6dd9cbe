// attnmech — task "potts": its parameters (the plugin's table, plugin.cpp) → the options of the Potts
// sequence generator (plugins/common/potts/potts_data.h).
#include "potts_task.h"

#include <algorithm>
#include <string>
#include <thread>

namespace potts {

namespace {

am_status get_num(am_context *ctx, const am_record *p, const char *key, double *v) {
  const am_status st = am_record_get_number(p, key, v);
  if (st != AM_OK) return am_context_fail(ctx, AM_ERR_USAGE, "potts: parameter '%s' missing or not a number", key);
  return AM_OK;
}
std::string get_str(const am_record *p, const char *key) {
  const char *s = nullptr;
  if (am_record_get_string(p, key, &s) == AM_OK && s) return s;
  return std::string();
}

}  // namespace

am_status task_options_from_params(am_context *ctx, const am_record *p, int host_threads, TaskOptions *o) {
  double v;
  am_status st;
#define NUM(key, field, cast)            \
  if ((st = get_num(ctx, p, key, &v))) return st; \
  o->field = (cast)v;
  NUM("L", L, int);
  NUM("C", C, int);
  NUM("beta", beta, double);
  NUM("M", M, size_t);
  NUM("M_test", M_test, size_t);
  NUM("k", k, int);
  NUM("sinkhorn_scale", sinkhorn_scale, double);
  NUM("burnin", burnin, int);
  NUM("thin", thin, int);
  NUM("draw", draw, int);
  NUM("redraw", redraw, bool);
  NUM("max_redraws", max_redraws, int);
  NUM("equilibration_test", equilibration_test, bool);
  NUM("equil_chains", equil_chains, int);
  NUM("entropy_tol", entropy_tol, double);
  NUM("max_freq_limit", max_freq_limit, double);
#undef NUM
  o->couplings = get_str(p, "couplings");
  o->J_file = get_str(p, "J_file");
  o->U_file = get_str(p, "U_file");
  o->out_sequences = get_str(p, "out_sequences");
  if (o->couplings.empty()) o->couplings = "sinkhorn";
  if (!o->J_file.empty() && o->couplings != "file") o->couplings = "file";
  if (o->couplings == "file" && o->J_file.empty())
    return am_context_fail(ctx, AM_ERR_USAGE, "potts: couplings=file needs J_file=PATH.npy");
  if (o->couplings == "kregular" && (o->k >= o->L || ((size_t)o->L * o->k) % 2))
    return am_context_fail(ctx, AM_ERR_USAGE, "potts: k-regular graph needs k < L and L·k even (L=%d, k=%d)", o->L, o->k);
  o->threads = host_threads > 0 ? host_threads : (int)std::max(1u, std::thread::hardware_concurrency());
  return AM_OK;
}

}  // namespace potts
