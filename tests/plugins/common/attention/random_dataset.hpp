// Test helpers of the attention library's executors (test_executor.cpp here, and the MPI test of the distributed
// executor, tests/plugins/common/scalapack): a random attention dataset of any size, and a comparison of two results
// records, key by key.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

namespace am_test {

// A random attention dataset (dataset.h) of P training, Pv validation and Pt test examples (S tokens of N0 each),
// labels ±1 from a noisy linear rule of the last token, 2 × 2 bilinear heads with random W, widths 6, 8, 10, the
// temperature grid {0.3, 0.1, 0.03} and two path subsets. Deterministic: its own generator, from `seed`.
inline am_record *random_dataset(size_t P, size_t Pv, size_t Pt, uint64_t seed, size_t S = 4, size_t N0 = 3) {
  uint64_t state = seed * 2862933555777941757ULL + 3037000493ULL;
  const auto uniform = [&state] {  // in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  };
  std::vector<double> rule(N0);
  for (double &r : rule) r = uniform();
  am_record *ds = nullptr;
  if (am_record_create(&ds) != AM_OK) return nullptr;
  am_record_set_string(ds, "kind", "attention");
  const auto split = [&](const char *name, size_t n) {
    std::vector<double> X(n * S * N0), y(n);
    for (double &x : X) x = uniform();
    for (size_t mu = 0; mu < n; ++mu) {  // X[mu, s, i] in C order; the last token decides the label
      double z = 0.3 * uniform();
      for (size_t i = 0; i < N0; ++i) z += rule[i] * X[(mu * S + S - 1) * N0 + i];
      y[mu] = z >= 0 ? 1.0 : -1.0;
    }
    const size_t shape[3] = {n, S, N0};
    const am_array_view v = am_array_view_make(AM_F64, 3, shape, 0, X.data());
    am_record_set_array(ds, (std::string("X_") + name).c_str(), &v);
    am_record_set_vector(ds, (std::string("y_") + name).c_str(), y.data(), n);
  };
  split("train", P);
  if (Pv) split("val", Pv);
  if (Pt) split("test", Pt);
  const double heads[2] = {2, 2}, widths[3] = {6, 8, 10}, vars[4] = {1.0, 0.9, 1.1, 1.2}, temps[3] = {0.3, 0.1, 0.03};
  am_record_set_vector(ds, "heads", heads, 2);
  am_record_set_vector(ds, "widths", widths, 3);
  am_record_set_vector(ds, "variances", vars, 4);
  am_record_set_number(ds, "temperature", 0.1);
  am_record_set_vector(ds, "temperatures_scan", temps, 3);
  am_record_set_string(ds, "readout", "last");
  am_record *att = am_record_object(ds, "attention");
  for (const char *key : {"l1_h1", "l1_h2", "l2_h1", "l2_h2"}) {
    std::vector<double> W(N0 * N0);
    for (double &w : W) w = 0.6 * uniform();
    const size_t shape[2] = {N0, N0};
    const am_array_view v = am_array_view_make(AM_F64, 2, shape, 1, W.data());
    am_record_set_array(att, key, &v);
  }
  am_record *subs = am_record_list(ds, "path_subsets");
  const std::vector<std::vector<double>> sets{{0, 1, 2, 3}, {1, 2}};
  for (size_t k = 0; k < sets.size(); ++k) {
    am_record *e = am_record_append_object(subs);
    am_record_set_string(e, "name", k ? "middle" : "all");
    am_record *pl = am_record_list(e, "paths");
    for (double p : sets[k]) am_record_append_number(pl, p);
  }
  return ds;
}

// The numbers of an array view (f64 or i64) as doubles, in storage order.
inline std::vector<double> view_numbers(const am_array_view &v) {
  size_t n = 1;
  for (uint32_t d = 0; d < v.ndim; ++d) n *= v.shape[d];
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = v.dtype == AM_I64 ? double(static_cast<const int64_t *>(v.data)[i]) : static_cast<const double *>(v.data)[i];
  return out;
}

// How two records may differ: exactly (the same bits), or each number within rel × the largest |reference| of its
// list or array, with the keys a solve's stopping point leaves to round-off (its residuals, the time) skipped and
// iteration counts one apart (two solves whose iterates agree to round-off may stop one iteration apart).
struct Tolerance {
  bool exact = true;
  double rel = 0;
};

inline bool loose_key(const std::string &key) {
  return key == "grad_max" || key == "grad_vech_norm" || key == "decrement" || key == "seconds";
}

// Appends a line to *out for every difference of `a` from the reference `b` under `path`.
inline void compare_numbers(const std::vector<double> &a, const std::vector<double> &b, const std::string &path,
                            const std::string &key, const Tolerance &t, std::vector<std::string> *out) {
  if (a.size() != b.size()) {
    out->push_back(path + ": " + std::to_string(a.size()) + " numbers against " + std::to_string(b.size()));
    return;
  }
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::isfinite(x) ? std::fabs(x) : 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same_bits = std::memcmp(&a[i], &b[i], sizeof(double)) == 0 || (std::isnan(a[i]) && std::isnan(b[i]));
    bool ok = same_bits;
    if (!t.exact && !ok) {
      const bool count = key == "iterations";
      ok = count ? std::fabs(a[i] - b[i]) <= 1 : std::fabs(a[i] - b[i]) <= t.rel * scale;
    }
    if (!ok) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s[%zu]: %.17g against %.17g (scale %.3g)", path.c_str(), i, a[i], b[i], scale);
      out->push_back(buf);
      return;
    }
  }
}

inline void compare_records(const am_record *a, const am_record *b, const std::string &path, const std::string &key,
                            const Tolerance &t, std::vector<std::string> *out) {
  const am_record_type ta = am_record_type_of(a), tb = am_record_type_of(b);
  if (ta != tb) {
    out->push_back(path + ": types " + std::to_string(ta) + " and " + std::to_string(tb));
    return;
  }
  if (key == "seconds" || (!t.exact && loose_key(key))) return;  // a duration is never compared
  switch (ta) {
    case AM_REC_NUMBER:
    case AM_REC_BOOL:
      compare_numbers({am_record_number(a)}, {am_record_number(b)}, path, key, t, out);
      return;
    case AM_REC_STRING:
      if (std::strcmp(am_record_string(a), am_record_string(b)) != 0)
        out->push_back(path + ": \"" + am_record_string(a) + "\" against \"" + am_record_string(b) + "\"");
      return;
    case AM_REC_ARRAY: {
      am_array_view va, vb;
      am_record_array(a, &va);
      am_record_array(b, &vb);
      if (va.dtype != vb.dtype || va.ndim != vb.ndim || !std::equal(va.shape, va.shape + va.ndim, vb.shape))
        out->push_back(path + ": array dtypes or shapes differ");
      else
        compare_numbers(view_numbers(va), view_numbers(vb), path, key, t, out);
      return;
    }
    case AM_REC_OBJECT:
    case AM_REC_LIST: {
      const size_t n = am_record_size(a);
      if (n != am_record_size(b)) {
        out->push_back(path + ": " + std::to_string(n) + " entries against " + std::to_string(am_record_size(b)));
        return;
      }
      std::vector<double> na, nb;  // a list of numbers: one scale for all of them
      for (size_t i = 0; i < n; ++i) {
        const am_record *ca = am_record_at(a, i), *cb = am_record_at(b, i);
        const char *ka = ta == AM_REC_OBJECT ? am_record_key(a, i) : nullptr;
        const char *kb = ta == AM_REC_OBJECT ? am_record_key(b, i) : nullptr;
        if (ka && std::strcmp(ka, kb) != 0) {
          out->push_back(path + ": key " + ka + " where the reference has " + kb);
          return;
        }
        if (!ka && am_record_type_of(ca) == AM_REC_NUMBER && am_record_type_of(cb) == AM_REC_NUMBER) {
          na.push_back(am_record_number(ca));
          nb.push_back(am_record_number(cb));
          continue;
        }
        compare_records(ca, cb, path + "." + (ka ? ka : std::to_string(i)), ka ? ka : key, t, out);
      }
      if (!na.empty()) compare_numbers(na, nb, path, key, t, out);
      return;
    }
    default:
      return;
  }
}

}  // namespace am_test
