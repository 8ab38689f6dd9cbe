// results.json / .npy output and the human-readable summary of the attnmech CLI.
#include "results.hpp"

#include <attnmech/status.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace amtool {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

json number_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

json nested(const std::vector<double> &data, const am_array_view &v, uint32_t dim, size_t offset, bool integral) {
  json arr = json::array();
  size_t stride = 1;
  for (uint32_t d = dim + 1; d < v.ndim; ++d) stride *= v.shape[d];
  for (size_t i = 0; i < v.shape[dim]; ++i) {
    if (dim + 1 == v.ndim) {
      double x = data[offset + i];
      if (integral && std::isfinite(x))
        arr.push_back(static_cast<int64_t>(x));
      else
        arr.push_back(number_json(x));
    } else {
      arr.push_back(nested(data, v, dim + 1, offset + i * stride, integral));
    }
  }
  return arr;
}

json array_json(am_context *ctx, const am_array_view &v) {
  size_t n = am_array_view_count(&v);
  std::vector<double> data(std::max<size_t>(n, 1));
  if (n > 0 && am_array_to_f64_c(ctx, &v, data.data(), n) != AM_OK) return nullptr;
  bool integral = v.dtype == AM_I32 || v.dtype == AM_I64;
  if (v.ndim == 0) return integral ? json(static_cast<int64_t>(data[0])) : number_json(data[0]);
  return nested(data, v, 0, 0, integral);
}

void flatten_into(const json &j, std::vector<double> &out) {
  if (j.is_array())
    for (const auto &e : j) flatten_into(e, out);
  else
    out.push_back(jnumber(&j));
}

// Scalars of a JSON tree as "dotted.path = value" lines (arrays summarised by their shape).
void scalar_lines(const json &j, const std::string &path, std::vector<std::pair<std::string, std::string>> &out,
                  int depth = 0) {
  char buf[64];
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      scalar_lines(it.value(), path.empty() ? it.key() : path + "." + it.key(), out, depth + 1);
  } else if (j.is_array()) {
    bool all_scalar = std::all_of(j.begin(), j.end(), [](const json &e) { return e.is_primitive(); });
    if (all_scalar && j.size() <= 8) {
      std::string s = "[";
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) s += ", ";
        if (j[i].is_number()) {
          std::snprintf(buf, sizeof buf, "%.6g", j[i].get<double>());
          s += buf;
        } else {
          s += j[i].dump();
        }
      }
      out.emplace_back(path, s + "]");
    } else if (all_scalar) {
      out.emplace_back(path, "[" + std::to_string(j.size()) + " values]");
    } else if (!j.empty() && j[0].is_array()) {
      // nested numeric list: report its shape
      std::string shape = std::to_string(j.size());
      const json *e = &j[0];
      while (e->is_array() && !e->empty()) {
        shape += "x" + std::to_string(e->size());
        e = &(*e)[0];
      }
      out.emplace_back(path, "[" + shape + " array]");
    } else {
      for (size_t i = 0; i < j.size(); ++i) scalar_lines(j[i], path + "." + std::to_string(i), out, depth + 1);
    }
  } else if (j.is_number()) {
    std::snprintf(buf, sizeof buf, "%.6g", j.get<double>());
    out.emplace_back(path, buf);
  } else if (j.is_null()) {
    out.emplace_back(path, "null");
  } else if (j.is_string()) {
    out.emplace_back(path, j.get<std::string>());
  } else {
    out.emplace_back(path, j.dump());
  }
}

void print_lines(std::FILE *out, const std::vector<std::pair<std::string, std::string>> &lines, const char *indent) {
  size_t w = 0;
  for (const auto &l : lines) w = std::max(w, l.first.size());
  for (const auto &l : lines) std::fprintf(out, "%s%-*s  %s\n", indent, static_cast<int>(w), l.first.c_str(), l.second.c_str());
}

std::string fmt(double v, const char *f) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_matrix(std::FILE *out, const json *m, const std::vector<std::string> &labels, const char *indent) {
  size_t r = 0, c = 0;
  std::vector<double> a;
  if (!jmatrix(m, &r, &c, &a)) return;
  bool use_labels = labels.size() == r && r == c;
  size_t lw = 0;
  if (use_labels)
    for (const auto &l : labels) lw = std::max(lw, l.size());
  std::fprintf(out, "%s%*s", indent, static_cast<int>(lw), "");
  for (size_t j = 0; j < c; ++j)
    std::fprintf(out, " %10s", use_labels ? labels[j].c_str() : std::to_string(j).c_str());
  std::fprintf(out, "\n");
  for (size_t i = 0; i < r; ++i) {
    std::fprintf(out, "%s%*s", indent, static_cast<int>(lw), use_labels ? labels[i].c_str() : "");
    for (size_t j = 0; j < c; ++j) std::fprintf(out, " %10.4f", a[i * c + j]);
    std::fprintf(out, "\n");
  }
}

// Replica-style learning curves: one table per curve object {nu, lambda, alpha[], test_loss[], sim_*}.
void print_curves(std::FILE *out, const json &curves) {
  std::fprintf(out, "\nlearning curves (test loss; simulation mean \u00b1 standard error):\n");
  for (const auto &c : curves) {
    auto alpha = jvector(jpath(c, "alpha")), tl = jvector(jpath(c, "test_loss"));
    auto sim = jvector(jpath(c, "sim_test_loss")), se = jvector(jpath(c, "sim_stderr"));
    std::fprintf(out, "  %s  nu = %s, lambda = %s, Bayes loss %s\n", c.value("model", json("")).is_string() ? c["model"].get<std::string>().c_str() : "",
                 fmt(jnumber(jpath(c, "nu")), "%g").c_str(), fmt(jnumber(jpath(c, "lambda")), "%g").c_str(),
                 fmt(jnumber(jpath(c, "bayes_loss")), "%.6g").c_str());
    std::fprintf(out, "    %10s %12s%s\n", "alpha", "test loss", sim.empty() ? "" : "   simulation");
    for (size_t k = 0; k < alpha.size() && k < tl.size(); ++k) {
      std::string simtxt;
      if (k < sim.size())
        simtxt = "   " + fmt(sim[k], "%.6g") + (k < se.size() ? " \u00b1 " + fmt(se[k], "%.2g") : "");
      std::fprintf(out, "    %10s %12s%s\n", fmt(alpha[k], "%g").c_str(), fmt(tl[k], "%.6g").c_str(), simtxt.c_str());
    }
  }
}

bool flat(const json &j) {
  if (!j.is_array()) return j.is_primitive();
  for (const auto &e : j)
    if (!e.is_primitive()) return false;
  return true;
}

void dump_into(const json &j, int indent, std::string &out) {
  const std::string pad(static_cast<size_t>(indent) + 1, ' '), closing(static_cast<size_t>(indent), ' ');
  if (j.is_object()) {
    if (j.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + json(it.key()).dump() + ": ";
      dump_into(it.value(), indent + 1, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closing + "}";
  } else if (j.is_array() && !flat(j)) {
    bool rows = std::all_of(j.begin(), j.end(), [](const json &e) { return flat(e); });
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad;
      if (rows)
        out += j[i].dump();
      else
        dump_into(j[i], indent + 1, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closing + "]";
  } else {
    out += j.dump();
  }
}

}  // namespace

std::string dump_results(const json &doc) {
  std::string out;
  dump_into(doc, 0, out);
  out += "\n";
  return out;
}

std::vector<std::string> layer_head_labels(const json &run, size_t layer) {
  std::vector<std::string> out;
  std::string prefix = "l" + std::to_string(layer) + "_";
  for (const auto &s : jstrings(jpath(run, "head_labels")))
    if (s.compare(0, prefix.size(), prefix) == 0) out.push_back(s);
  return out;
}

json record_to_json(am_context *ctx, const am_record *n) {
  if (!n) return nullptr;
  switch (am_record_type_of(n)) {
    case AM_REC_NUMBER: return number_json(am_record_number(n));
    case AM_REC_STRING: {
      const char *s = am_record_string(n);
      return s ? json(s) : json(nullptr);
    }
    case AM_REC_BOOL: return json(am_record_bool(n) != 0);
    case AM_REC_ARRAY: {
      am_array_view v{};
      if (am_record_array(n, &v) != AM_OK) return nullptr;
      return array_json(ctx, v);
    }
    case AM_REC_OBJECT: {
      json o = json::object();
      size_t k = am_record_size(n);
      for (size_t i = 0; i < k; ++i) {
        const char *key = am_record_key(n, i);
        o[key ? key : std::to_string(i)] = record_to_json(ctx, am_record_at(n, i));
      }
      return o;
    }
    case AM_REC_LIST: {
      json a = json::array();
      size_t k = am_record_size(n);
      for (size_t i = 0; i < k; ++i) a.push_back(record_to_json(ctx, am_record_at(n, i)));
      return a;
    }
    default: return nullptr;
  }
}

bool export_npy(am_context *ctx, const am_record *n, const std::string &dir, const std::string &prefix,
                size_t min_elements, std::vector<std::string> *written, std::string *err) {
  if (!n) return true;
  am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) {
    am_array_view v{};
    if (am_record_array(n, &v) != AM_OK) return true;
    if (am_array_view_count(&v) < min_elements) return true;
    std::string file = prefix + ".npy";
    std::string path = dir + "/" + file;
    am_status st = am_npy_write(ctx, path.c_str(), &v);
    if (st != AM_OK) {
      if (err) *err = "cannot write " + path + ": " + am_context_last_error(ctx);
      return false;
    }
    if (written) written->push_back(file);
    return true;
  }
  if (t == AM_REC_OBJECT || t == AM_REC_LIST) {
    size_t k = am_record_size(n);
    for (size_t i = 0; i < k; ++i) {
      const char *key = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
      std::string name = key ? std::string(key) : std::to_string(i);
      if (!export_npy(ctx, am_record_at(n, i), dir, prefix.empty() ? name : prefix + "." + name, min_elements,
                      written, err))
        return false;
    }
  }
  return true;
}

const json *jpath(const json &j, const std::string &dotted) {
  const json *cur = &j;
  size_t pos = 0;
  while (pos <= dotted.size()) {
    size_t dot = dotted.find('.', pos);
    std::string part = dotted.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur->is_object()) {
      auto it = cur->find(part);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      char *end = nullptr;
      unsigned long idx = std::strtoul(part.c_str(), &end, 10);
      if (part.empty() || *end || idx >= cur->size()) return nullptr;
      cur = &(*cur)[idx];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

double jnumber(const json *j) {
  if (!j) return kNaN;
  if (j->is_number()) return j->get<double>();
  if (j->is_boolean()) return j->get<bool>() ? 1.0 : 0.0;
  return kNaN;
}

std::vector<double> jvector(const json *j) {
  std::vector<double> out;
  if (j) flatten_into(*j, out);
  return out;
}

bool jmatrix(const json *j, size_t *rows, size_t *cols, std::vector<double> *a) {
  if (!j || !j->is_array() || j->empty() || !(*j)[0].is_array()) return false;
  size_t r = j->size(), c = (*j)[0].size();
  a->assign(r * c, kNaN);
  for (size_t i = 0; i < r; ++i) {
    const json &row = (*j)[i];
    if (!row.is_array() || row.size() != c) return false;
    for (size_t k = 0; k < c; ++k) (*a)[i * c + k] = jnumber(&row[k]);
  }
  *rows = r;
  *cols = c;
  return true;
}

std::vector<std::string> jstrings(const json *j) {
  std::vector<std::string> out;
  if (j && j->is_array())
    for (const auto &e : *j) out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

bool is_attention_run(const json &run) {
  return run.is_object() && (run.contains("U") || (run.contains("test") && run.contains("gp")));
}

double run_width(const json &run) {
  std::vector<double> w = jvector(jpath(run, "widths"));
  double m = kNaN;
  for (double x : w)
    if (std::isfinite(x)) m = std::isfinite(m) ? std::max(m, x) : x;
  return m;
}

std::vector<std::string> path_labels(const json &doc, const json &run) {
  for (const json *j : {jpath(run, "path_labels"), jpath(doc, "task_extras.path_labels")}) {
    auto s = jstrings(j);
    if (!s.empty()) return s;
  }
  return {};
}

std::vector<double> alignment_overlaps(const json *e) {
  if (!e) return {};
  if (e->is_object()) {
    for (const char *k : {"overlaps", "overlap"})
      if (e->contains(k)) return jvector(&(*e)[k]);
    return {};
  }
  return jvector(e);
}

std::string solver_status(const json &run) {
  const json *s = jpath(run, "solver.status");
  if (s && s->is_string()) return s->get<std::string>();
  if (s && s->is_number()) return am_status_string(static_cast<am_status>(s->get<double>()));
  const json *r = jpath(run, "run_status");
  if (r && r->is_string()) return r->get<std::string>();
  return "-";
}

void print_summary(std::FILE *out, const json &doc) {
  const json *runs = jpath(doc, "runs");
  std::string task = doc.value("task", json(nullptr)).is_string() ? doc["task"].get<std::string>() : "(none)";
  std::string est = doc.value("estimator", json(nullptr)).is_string() ? doc["estimator"].get<std::string>() : "?";
  std::fprintf(out, "task %s, estimator %s, seed %s\n", task.c_str(), est.c_str(),
               jpath(doc, "seed") ? jpath(doc, "seed")->dump().c_str() : "?");
  if (!runs || !runs->is_array() || runs->empty()) {
    std::fprintf(out, "no runs\n");
    return;
  }
  bool attention = std::all_of(runs->begin(), runs->end(), [](const json &r) { return is_attention_run(r); });
  if (attention) {
    bool sampled = std::any_of(runs->begin(), runs->end(),
                               [](const json &r) { return std::isfinite(jnumber(jpath(r, "posterior.test.accuracy"))); });
    std::fprintf(out, "\n%8s %9s %9s%s %12s %9s %6s  %s\n", "N", "RN acc", "GP acc", sampled ? "  sampled" : "", "S_code",
                 "U_a", "iters", "solver status");
    for (const auto &r : *runs) {
      double w = run_width(r);
      std::string sa = sampled ? " " + std::string(8 - std::min<size_t>(8, fmt(jnumber(jpath(r, "posterior.test.accuracy")), "%.4f").size()), ' ') +
                                     fmt(jnumber(jpath(r, "posterior.test.accuracy")), "%.4f")
                               : "";
      std::fprintf(out, "%8s %9s %9s%s %12s %9s %6s  %s\n", fmt(w, "%.0f").c_str(),
                   fmt(jnumber(jpath(r, "test.accuracy")), "%.4f").c_str(),
                   fmt(jnumber(jpath(r, "gp.test.accuracy")), "%.4f").c_str(), sa.c_str(),
                   fmt(jnumber(jpath(r, "action")), "%.6f").c_str(), fmt(jnumber(jpath(r, "U_a")), "%.4f").c_str(),
                   fmt(jnumber(jpath(r, "solver.iterations")), "%.0f").c_str(), solver_status(r).c_str());
    }
    // Reference accuracies of the task (e.g. GP limits of sub-networks) next to the table.
    const json *ex = jpath(doc, "task_extras");
    if (ex && ex->is_object()) {
      std::vector<std::pair<std::string, std::string>> lines, acc;
      scalar_lines(*ex, "", lines);
      for (const auto &l : lines)
        if (l.first.find("accuracy") != std::string::npos) acc.push_back(l);
      if (const json *subs = jpath((*runs)[0], "gp_subsets"); subs && subs->is_array())
        for (const auto &e : *subs)
          if (jpath(e, "name") && jpath(e, "name")->is_string())
            acc.push_back({"GP " + jpath(e, "name")->get<std::string>(), fmt(jnumber(jpath(e, "test.accuracy")), "%.4f")});
      if (!acc.empty()) {
        std::fprintf(out, "\nreference accuracies:  GP limit of this network %s",
                     fmt(jnumber(jpath((*runs)[0], "gp.test.accuracy")), "%.4f").c_str());
        for (const auto &l : acc) std::fprintf(out, ";  %s %s", l.first.c_str(), l.second.c_str());
        std::fprintf(out, "\n");
      }
    }
    // Widths whose U matrices are shown: 10, 100, 1000 if scanned, else the first and the last.
    std::vector<size_t> show;
    for (double target : {10.0, 100.0, 1000.0})
      for (size_t i = 0; i < runs->size(); ++i)
        if (run_width((*runs)[i]) == target) show.push_back(i);
    if (show.empty()) {
      show.push_back(0);
      if (runs->size() > 1) show.push_back(runs->size() - 1);
    }
    for (size_t i : show) {
      const json &r = (*runs)[i];
      const json *U = jpath(r, "U");
      if (!U || !U->is_array()) continue;
      auto labels = path_labels(doc, r);
      for (size_t l = 0; l < U->size(); ++l) {
        std::vector<std::string> lab = l == 0 ? labels : layer_head_labels(r, l + 1);
        std::fprintf(out, "\nU_%zu at N = %s%s:\n", l + 1, fmt(run_width(r), "%.0f").c_str(),
                     l == 0 && !labels.empty() ? " (paths in packing order, h_1 most significant)" : "");
        print_matrix(out, &(*U)[l], lab, "  ");
      }
    }
    // Alignment at the first width.
    for (size_t i = 0; i < runs->size(); ++i) {
      const json &r = (*runs)[i];
      auto rn = alignment_overlaps(jpath(r, "alignment.rn")), gp = alignment_overlaps(jpath(r, "alignment.gp"));
      if (rn.empty() && gp.empty()) continue;
      auto best = [](const std::vector<double> &v, size_t k) {
        size_t arg = 0;
        for (size_t j = 1; j < std::min(k, v.size()); ++j)
          if (std::fabs(v[j]) > std::fabs(v[arg])) arg = j;
        return arg;
      };
      std::fprintf(out, "\nkernel-task alignment at N = %s (overlap |v_k . y|/|y| of the top %zu PCs):\n",
                   fmt(run_width(r), "%.0f").c_str(), std::max(rn.size(), gp.size()));
      if (!rn.empty()) {
        size_t b = best(rn, rn.size());
        std::fprintf(out, "  renormalised kernel: best PC #%zu overlap %.3f; top-3 %s\n", b + 1, std::fabs(rn[b]),
                     (fmt(rn[0], "%.3f") + " " + (rn.size() > 1 ? fmt(rn[1], "%.3f") : "") + " " +
                      (rn.size() > 2 ? fmt(rn[2], "%.3f") : ""))
                         .c_str());
      }
      if (!gp.empty()) {
        size_t b = best(gp, gp.size());
        std::fprintf(out, "  GP kernel:           best PC #%zu overlap %.3f\n", b + 1, std::fabs(gp[b]));
      }
      break;
    }
    for (size_t i : show) {
      const json &r = (*runs)[i];
      auto hs = jvector(jpath(r, "head_scores"));
      auto hl = jstrings(jpath(r, "head_labels"));
      if (hs.empty()) continue;
      std::fprintf(out, "%shead scores at N = %5s (max = 1):", i == show.front() ? "\n" : "", fmt(run_width(r), "%.0f").c_str());
      for (size_t k = 0; k < hs.size(); ++k)
        std::fprintf(out, "  %s %.3f", k < hl.size() ? hl[k].c_str() : std::to_string(k + 1).c_str(), hs[k]);
      std::fprintf(out, "\n");
    }
  } else {
    for (size_t i = 0; i < runs->size(); ++i) {
      const json &run = (*runs)[i];
      std::vector<std::pair<std::string, std::string>> lines;
      json rest = run;
      const json *curves = jpath(run, "curves");
      if (curves && curves->is_array() && !curves->empty()) {
        print_curves(out, *curves);
        rest.erase("curves");
        if (rest.contains("lambda_curves"))
          rest["lambda_curves"] = "[" + std::to_string(run["lambda_curves"].size()) + " tables, see results.json]";
      }
      scalar_lines(rest, "", lines);
      std::fprintf(out, "\nrun %zu:\n", i);
      print_lines(out, lines, "  ");
    }
  }
  const json *extras = jpath(doc, "task_extras");
  if (extras && extras->is_object() && !extras->empty()) {
    std::vector<std::pair<std::string, std::string>> lines;
    scalar_lines(*extras, "", lines);
    std::fprintf(out, "\ntask extras:\n");
    print_lines(out, lines, "  ");
  }
  const json *st = jpath(doc, "status");
  if (st && st->is_string() && st->get<std::string>() != "ok")
    std::fprintf(out, "\nstatus: %s\n", st->get<std::string>().c_str());
}

}  // namespace amtool
