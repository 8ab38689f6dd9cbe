// Property: the `npy` task with the default estimator and its defaults (alignment_k = 30 included) on random
// problem directories of one's own (problem.hpp through attention), run through the run API. A run either
// succeeds — every number of the results document finite except where the schema says NaN, the GP predictions
// equal a dposv solve and the GP kernel's eigenvalues a dsyevd — or fails with a message.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "problem.hpp"
#include "property.hpp"
#include "reference.hpp"

using namespace prop;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/am-property-XXXXXX";
    path = mkdtemp(tmpl) ? fs::path(tmpl) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

bool write_npy(const fs::path &file, std::vector<size_t> shape, const vec &c) {
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = (uint32_t)shape.size();
  for (size_t i = 0; i < shape.size(); ++i) v.shape[i] = shape[i];
  v.data = c.data();
  return am_npy_write(nullptr, file.string().c_str(), &v) == AM_OK;
}

std::string json_list(const double *v, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += format("%s%.17g", i ? ", " : "", v[i]);
  return s + "]";
}

// The problem directory of docs/tasks.md: X_train [P, S, N0], y_train, X_test, y_test, W_l<l>_h<h> [N0, N0]
// (C order, W[i, j] with i on the key side: the transpose of the column-major am_head matrix's storage),
// model.json (and sometimes a widths_scan).
bool write_problem(Gen &g, const Problem &p, const fs::path &d) {
  bool ok = write_npy(d / "X_train.npy", {p.P, p.S, p.N0}, p.X) && write_npy(d / "y_train.npy", {p.P}, p.y) &&
            write_npy(d / "X_test.npy", {p.Pt, p.S, p.N0}, p.Xt) && write_npy(d / "y_test.npy", {p.Pt}, p.yt);
  size_t k = 0;
  for (size_t l = 1; l <= p.L; ++l)
    for (size_t h = 1; h <= p.arch.heads[l - 1]; ++h, ++k) {
      vec c(p.N0 * p.N0);
      for (size_t i = 0; i < p.N0; ++i)
        for (size_t j = 0; j < p.N0; ++j) c[i * p.N0 + j] = p.W[k][i + j * p.N0];
      ok = ok && write_npy(d / format("W_l%zu_h%zu.npy", l, h), {p.N0, p.N0}, c);
    }
  static const char *ro[] = {"last", "first", "mean"};
  double heads[AM_MAX_LAYERS], widths[AM_MAX_LAYERS + 1];  // the task takes whole widths
  for (size_t l = 0; l < p.L; ++l) heads[l] = p.arch.heads[l];
  for (size_t l = 0; l <= p.L; ++l) widths[l] = std::max(1.0, std::round(p.arch.widths[l]));
  std::string m = format("{\"readout\": \"%s\", \"temperature\": %.17g", ro[p.readout], p.T);
  m += ", \"heads\": " + json_list(heads, p.L) + ", \"widths\": " + json_list(widths, p.L + 1) +
       ", \"variances\": " + json_list(p.arch.variances, p.L + 2);
  if (g.chance(0.3)) {
    const double ws[] = {1, 10, 1e3};
    const size_t n = g.integer(1, 3);
    g.note("widths_scan=%zu", n);
    m += ", \"widths_scan\": " + json_list(ws, n);
  }
  std::ofstream(d / "model.json") << m << "}";
  return ok;
}

// Every number of a results document, with its key path: non-finite ones outside `allowed` are reported.
std::string non_finite(const am_record *r, const std::string &at) {
  switch (am_record_type_of(r)) {
    case AM_REC_NUMBER: {
      const double x = am_record_number(r);
      return std::isfinite(x) ? "" : at;
    }
    case AM_REC_ARRAY: {
      am_array_view v;
      if (am_record_array(r, &v) != AM_OK || v.dtype != AM_F64) return "";
      const double *d = static_cast<const double *>(v.data);
      for (size_t i = 0; i < am_array_view_count(&v); ++i)
        if (!std::isfinite(d[i])) return at + format("[%zu]", i);
      return "";
    }
    case AM_REC_OBJECT:
    case AM_REC_LIST:
      for (size_t i = 0; i < am_record_size(r); ++i) {
        const char *k = am_record_key(r, i);
        const std::string f = non_finite(am_record_at(r, i), at + "." + (k ? k : std::to_string(i)));
        if (!f.empty()) return f;
      }
      return "";
    default: return "";
  }
}

vec vector_at(const am_record *r, const char *key) {
  size_t n = 0;
  am_record_get_vector(r, key, nullptr, 0, &n);
  vec v(n);
  if (n) am_record_get_vector(r, key, v.data(), n, &n);
  return v;
}

// The GP limit of one run against the loops + dposv + dsyevd on the problem's ξ (the GP point does not depend on
// the widths): predictions on the test split and the eigenvalues of the GP kernel's top-k.
std::string check_gp(const Problem &p, const am_record *run) {
  double c = p.arch.variances[p.L + 1];
  for (size_t l = 1; l <= p.L; ++l) c *= p.arch.variances[l];
  vec U1(p.H * p.H, 0.0);
  for (size_t i = 0; i < p.H; ++i) U1[i + i * p.H] = c;
  const vec K = kernel_loops(p.xi, p.P, p.xi, p.P, p.N0, p.H, U1.data());
  vec w;
  eigh(K, p.P, &w);
  const vec ev = vector_at(am_record_get(run, "alignment"), "gp_eigenvalues");
  if (ev.size() != std::min<size_t>(30, p.P)) return format("alignment.gp_eigenvalues has %zu values", ev.size());
  const double top = std::max(std::fabs(w.front()), std::fabs(w.back()));
  for (size_t i = 0; i < ev.size(); ++i)  // both backward stable: within a few P·ε·‖K‖, plus the kernels' rounding
    if (!(std::fabs(ev[i] - w[p.P - 1 - i]) <= 1e-12 * double(p.P * p.N0 * p.H) * top + 1e-300))
      return format("gp eigenvalue %zu: %.17g, dsyevd %.17g", i, ev[i], w[p.P - 1 - i]);
  vec G = K, alpha = p.y;
  for (size_t i = 0; i < p.P; ++i) G[i + i * p.P] += p.T;
  vec wg;
  eigh(G, p.P, &wg);
  const double cond = std::fabs(wg.back()) / wg.front();
  if (!(wg.front() > 0) || cond > 1e8 || !posv(G, p.P, &alpha, 1)) return "";  // ill-conditioned: nothing to compare
  const vec kx = kernel_loops(p.xi, p.P, p.xit, p.Pt, p.N0, p.H, U1.data());
  const vec bound = kernel_bound(p.xi, p.P, p.xit, p.Pt, p.N0, p.H, U1.data());  // magnitudes kx's entries sum
  const vec mean = vector_at(am_record_get(am_record_get(run, "gp"), "test"), "mean");
  if (mean.size() != p.Pt) return format("gp.test.mean has %zu values", mean.size());
  for (size_t t = 0; t < p.Pt; ++t) {
    double m = 0, s = 0;
    for (size_t i = 0; i < p.P; ++i) m += kx[i + t * p.P] * alpha[i], s += bound[i + t * p.P] * std::fabs(alpha[i]);
    // cond(Γ) ≤ 1e8 here: the two solves agree to ~cond·P·ε of the terms' magnitude
    if (!(std::fabs(mean[t] - m) <= 1e-14 * cond * double(p.P * p.N0 * p.H) * (s + 1e-300)))
      return format("gp.test.mean[%zu] = %.17g, dposv %.17g", t, mean[t], m);
  }
  return "";
}

const am_registry *registry() {
  static am_registry *r = [] {
    am_registry *x = nullptr;
    am_registry_create(&x);
    am_registry_discover(nullptr, x, nullptr);  // AM_PLUGIN_PATH: the build tree's plugins
    return x;
  }();
  return r;
}

Outcome npy_case(Gen &g) {
  Context c;
  Problem p;
  std::string why;
  if (!draw_problem(g, c.ctx, &p, &why, 60, true)) return {why, ""};
  TempDir dir;
  if (dir.path.empty() || !write_problem(g, p, dir.path)) return {"cannot write the problem directory", ""};
  am_run_spec *spec = nullptr;
  am_run_spec_create(&spec);
  am_run_spec_set_task(spec, "npy");
  am_run_spec_set(spec, "dir", dir.path.string().c_str());
  am_run_spec_set(spec, "threads", "1");
  am_record *doc = nullptr;
  const am_status st = am_run_execute(c.ctx, registry(), spec, &doc);
  am_run_spec_destroy(&spec);
  Outcome out;
  if (st != AM_OK) {
    out = refusal(c.ctx, st, "am_run_execute(npy)");
  } else {
    const am_record *runs = am_record_get(doc, "runs");
    for (size_t i = 0; i < am_record_size(runs) && out.failure.empty(); ++i) {
      const am_record *run = am_record_at(runs, i);
      const std::string nf = non_finite(run, format("runs.%zu", i));
      if (!nf.empty()) out.failure = "a successful run has a non-finite number at " + nf;
      else out.failure = check_gp(p, run);
    }
    if (am_record_size(runs) == 0) out.failure = "a successful run document has no runs";
  }
  am_record_destroy(&doc);
  return out;
}

}  // namespace

TEST_CASE("property: npy task with the defaults on random problem directories, through the run API") {
  am_blas_threads_set(1);
  REQUIRE(registry() != nullptr);
  CHECK(run_cases("npy", kCiNpy, npy_case) > 0);
}
