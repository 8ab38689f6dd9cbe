// attnmech sweep — the SPEC file (docs/sweep.md "The SPEC"): task, estimator, fixed settings, axes (lists and
// {"range": [a, b(, step)]}), zip groups, and the point list they make: grid order, keys, cost order.
#include "sweep.hpp"

#include <common/read_input.hpp>  // the one reader of the tools' inputs

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace am::sweep {

namespace {

const std::set<std::string> kKnownKeys = {"task",    "estimator", "fixed", "axes",      "zip",         "average",
                                          "metrics", "cost",      "warm_start", "warm_axes", "description",
                                          "plot",    "caption",   "figure"};

// Host keys that change how a run is computed but not what it computes: left out of the point key.
const std::set<std::string> kNotInKey = {"threads"};

std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
  }
  return ojson(v).dump();  // shortest text that reads back to the same double
}

// "0.010" → "0.01", "1e3" → "1000"; other text unchanged.
std::string normalise_scalar(const std::string &t) {
  if (t.empty()) return t;
  char *end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end && *end == '\0' && std::isfinite(v) && t.find_first_of("xXpP") == std::string::npos) return number_text(v);
  return t;
}

std::string normalise_text(const std::string &t) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t k = t.find(',', pos);
    std::string part = t.substr(pos, k == std::string::npos ? std::string::npos : k - pos);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    out += normalise_scalar(part);
    if (k == std::string::npos) break;
    out += ',';
    pos = k + 1;
  }
  return out;
}

// {"range": [a, b(, step)]}: a, a + step, ... below b (half-open, like Python). The count is known before any
// value is made (at most kMaxPoints, the grid's own cap); integral values become int64 and must fit one
// (1e19 used to wrap to -9.2e18); a step below the resolution of the numbers (values that repeat) is refused.
std::vector<ojson> range_values(const std::string &name, const ojson &r) {
  const std::string at = "axis '" + name + "': range";
  if (!r.is_array() || r.size() < 2 || r.size() > 3 || !r[0].is_number() || !r[1].is_number() ||
      (r.size() == 3 && !r[2].is_number()))
    throw SpecError(at + " must be [start, stop] or [start, stop, step] (numbers)");
  const double a = r[0].get<double>(), b = r[1].get<double>(), step = r.size() == 3 ? r[2].get<double>() : 1.0;
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(step))
    throw SpecError(at + " " + r.dump() + ": start, stop and step must be finite numbers");
  if (!(step > 0)) throw SpecError(at + " step must be positive");
  const double count = std::ceil((b - a) / step - 1e-9);
  if (!(count <= static_cast<double>(kMaxPoints)))  // also NaN / inf ((b - a) overflowing)
    throw SpecError(at + " " + r.dump() + " has more than " + std::to_string(kMaxPoints) +
                    " values (the most a sweep may have)");
  std::vector<ojson> out;
  const double kInt64 = 9223372036854775808.0;  // 2^63: integral values at or beyond it do not fit an int64
  for (double k = 0; k < count; ++k) {
    const double x = a + k * step;
    if (k > 0 && x == a + (k - 1) * step)
      throw SpecError(at + " " + r.dump() + ": the step is below the resolution of the numbers (values repeat)");
    if (x != std::floor(x)) {
      out.push_back(ojson(x));
      continue;
    }
    if (!(x > -kInt64 && x < kInt64))
      throw SpecError(at + " " + r.dump() + ": the value " + ojson(x).dump() + " does not fit a 64-bit integer");
    out.push_back(ojson(static_cast<int64_t>(x)));
  }
  if (out.empty()) throw SpecError("axis '" + name + "': empty range " + r.dump());
  return out;
}

std::vector<ojson> axis_values(const std::string &name, const ojson &v) {
  if (v.is_array()) {
    if (v.empty()) throw SpecError("axis '" + name + "' has no values");
    return std::vector<ojson>(v.begin(), v.end());
  }
  if (v.is_object() && v.contains("range")) return range_values(name, v["range"]);
  if (v.is_number() || v.is_string() || v.is_boolean()) return {v};
  throw SpecError("axis '" + name + "' must be a list of values or {\"range\": [start, stop]}");
}

std::vector<std::string> string_list(const ojson &j, const char *what) {
  std::vector<std::string> out;
  if (!j.is_array()) throw SpecError(std::string("'") + what + "' must be a list of strings");
  for (const auto &e : j) {
    if (!e.is_string()) throw SpecError(std::string("'") + what + "' must be a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

void check_setting_value(const std::string &key, const ojson &v) {
  if (v.is_number() || v.is_string() || v.is_boolean()) return;
  if (v.is_array()) {
    for (const auto &e : v)
      if (!(e.is_number() || e.is_string() || e.is_boolean()))
        throw SpecError("setting '" + key + "': a list value holds numbers, strings or booleans only");
    return;
  }
  throw SpecError("setting '" + key + "' must be a number, a string, a boolean or a list of them");
}

bool numeric(const ojson &v, double *x) {
  if (v.is_number()) {
    *x = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    char *end = nullptr;
    *x = std::strtod(t.c_str(), &end);
    return !t.empty() && end && *end == '\0';
  }
  return false;
}

// The points' memory before they are made (am_memory_check: the budget and message of the tasks). Per point: the
// Point with its strings, maps and canonical JSON, 600 bytes plus 200 per setting (measured: peak RSS of `sweep
// --list` over 10^5 points of a task, 1.3 KB a point with 4 settings, 4.1 KB with 21).
void check_memory(const Spec &spec, size_t points) {
  const double per_point = 600.0 + 200.0 * static_cast<double>(spec.fixed.size() + spec.axes.size());
  am_context *ctx = nullptr;
  if (am_context_create(&ctx, nullptr) != AM_OK) throw SweepError("out of memory");
  const am_status st = am_memory_check(ctx, per_point * static_cast<double>(points),
                                       ("a grid of " + std::to_string(points) + " points").c_str(), nullptr);
  const std::string msg = st == AM_OK ? "" : am_context_last_error(ctx);
  am_context_destroy(&ctx);
  if (st != AM_OK) throw SweepError(msg);
}

}  // namespace

uint64_t fnv1a64(const std::string &s) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string value_text(const ojson &v) {
  if (v.is_string()) return normalise_text(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return number_text(v.get<double>());
  if (v.is_array()) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + value_text(v[i]);
    return out;
  }
  return v.dump();
}

namespace {

// SPEC's text as a JSON object of known keys only.
ojson parse_spec_object(const std::string &text) {
  ojson j;
  try {
    j = am::input::parse_strict<ojson>(text, true);  // depth-limited; its strings become names and C strings: no NUL
  } catch (const std::exception &e) {
    throw SpecError(std::string("SPEC is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw SpecError("SPEC must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!kKnownKeys.count(it.key()))
      throw SpecError("unknown SPEC key '" + it.key() + "' (known: task, estimator, fixed, axes, zip, average, metrics, "
                      "cost, warm_start, warm_axes, description)");
  return j;
}

// 'fixed' settings, then the --set pairs (each replaces a fixed setting of its key or adds one; the source
// document `j` records them too).
void read_fixed(ojson &j, const std::vector<std::pair<std::string, std::string>> &sets, Spec &s) {
  if (j.contains("fixed")) {
    if (!j["fixed"].is_object()) throw SpecError("'fixed' must be an object of settings");
    for (auto it = j["fixed"].begin(); it != j["fixed"].end(); ++it) {
      check_setting_value(it.key(), it.value());
      s.fixed.emplace_back(it.key(), it.value());
    }
  }
  for (const auto &kv : sets) {  // --set: replaces a fixed setting of that key, or adds one
    auto it = std::find_if(s.fixed.begin(), s.fixed.end(), [&](const auto &f) { return f.first == kv.first; });
    if (it != s.fixed.end()) it->second = kv.second;
    else s.fixed.emplace_back(kv.first, kv.second);
    j["fixed"][kv.first] = kv.second;
  }
}

// 'axes' (each its own dimension) and 'zip' (groups of axes that advance together, equal lengths).
void read_axes(const ojson &j, Spec &s) {
  std::set<std::string> names;
  auto add_axis = [&](const std::string &name, const ojson &v, int group) {
    if (!names.insert(name).second) throw SpecError("axis '" + name + "' is given twice");
    Axis a{name, axis_values(name, v), group};
    for (const auto &x : a.values) check_setting_value(name, x);
    s.axes.push_back(std::move(a));
  };
  if (j.contains("axes")) {
    if (!j["axes"].is_object()) throw SpecError("'axes' must be an object: name → list of values");
    for (auto it = j["axes"].begin(); it != j["axes"].end(); ++it) add_axis(it.key(), it.value(), -1);
  }
  if (j.contains("zip")) {
    if (!j["zip"].is_array()) throw SpecError("'zip' must be a list of groups (objects: name → list)");
    int g = 0;
    for (const auto &grp : j["zip"]) {
      if (!grp.is_object() || grp.empty()) throw SpecError("every 'zip' group must be a non-empty object");
      size_t n = 0;
      for (auto it = grp.begin(); it != grp.end(); ++it) {
        add_axis(it.key(), it.value(), g);
        if (n && s.axes.back().values.size() != n)
          throw SpecError("zip group " + std::to_string(g) + ": axis '" + it.key() + "' has " +
                          std::to_string(s.axes.back().values.size()) + " values, the group " + std::to_string(n));
        n = s.axes.back().values.size();
      }
      ++g;
    }
  }
}

}  // namespace

Spec parse_spec(const std::string &text, const std::vector<std::pair<std::string, std::string>> &sets) {
  ojson j = parse_spec_object(text);
  Spec s;
  if (j.contains("task")) {
    if (!j["task"].is_string() && !j["task"].is_null()) throw SpecError("'task' must be a string");
    if (j["task"].is_string()) s.task = j["task"].get<std::string>();
  }
  if (j.contains("estimator")) {
    if (!j["estimator"].is_string()) throw SpecError("'estimator' must be a string");
    s.estimator = j["estimator"].get<std::string>();
  }
  if (s.task.empty() && s.estimator.empty()) throw SpecError("SPEC names neither a task nor an estimator");
  read_fixed(j, sets, s);
  read_axes(j, s);
  for (const auto &a : s.axes)
    for (const auto &f : s.fixed)
      if (f.first == a.name) throw SpecError("'" + a.name + "' is both a fixed setting and an axis");
  s.average = j.contains("average") ? string_list(j["average"], "average") : std::vector<std::string>{"seed"};
  s.warm_axes = j.contains("warm_axes") ? string_list(j["warm_axes"], "warm_axes")
                                        : std::vector<std::string>{"width", "temperature", "T"};
  if (j.contains("metrics")) s.metrics = string_list(j["metrics"], "metrics");
  if (j.contains("cost")) {
    if (!j["cost"].is_object()) throw SpecError("'cost' must be an object: setting → exponent");
    for (auto it = j["cost"].begin(); it != j["cost"].end(); ++it) {
      if (!it.value().is_number()) throw SpecError("'cost': exponent of '" + it.key() + "' must be a number");
      s.cost.emplace_back(it.key(), it.value().get<double>());
    }
  }
  if (j.contains("warm_start")) {
    if (!j["warm_start"].is_boolean()) throw SpecError("'warm_start' must be true or false");
    s.warm_start = j["warm_start"].get<bool>();
  }
  s.source = j;
  return s;
}

Spec read_spec_file(const std::string &path, const std::vector<std::pair<std::string, std::string>> &sets) {
  std::string text;
  try {
    text = am::input::read_regular_file(path, am::input::kMaxSpecBytes, "a sweep spec");
  } catch (const am::input::Error &e) {  // a directory, a FIFO, a device: the user's mistake; unreadable: the system's
    if (e.code == AM_ERR_FORMAT) throw SpecError(e.what());
    throw SweepError(std::string("cannot read SPEC: ") + e.what());
  }
  try {
    return parse_spec(text, sets);
  } catch (const SpecError &e) {
    throw SpecError(path + ": " + e.what());
  }
}

size_t grid_size(const Spec &spec) {
  std::set<int> groups;  // a zip group is one dimension: its axes have the same length (parse_spec checks)
  size_t total = 1;
  for (const auto &a : spec.axes) {
    if (a.zip_group >= 0 && !groups.insert(a.zip_group).second) continue;
    const size_t n = a.values.size();
    if (n == 0) return 0;
    if (total > (kMaxPoints + 1) / n) return kMaxPoints + 1;  // total * n > kMaxPoints: stop before overflow
    total *= n;
  }
  return std::min(total, kMaxPoints + 1);
}

std::vector<Point> expand(const Spec &spec) {
  // Dimensions of the product: every free axis, then every zip group (one index for all its axes).
  std::vector<std::vector<size_t>> dims;  // axes of each dimension
  std::map<int, size_t> group_dim;
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    const int g = spec.axes[a].zip_group;
    if (g < 0) {
      dims.push_back({a});
    } else if (!group_dim.count(g)) {
      group_dim[g] = dims.size();
      dims.push_back({a});
    } else {
      dims[group_dim[g]].push_back(a);
    }
  }
  const size_t total = grid_size(spec);
  if (total > kMaxPoints)
    throw SpecError("the grid has more than " + std::to_string(kMaxPoints) + " points (the most a sweep may have)");
  check_memory(spec, total);
  std::vector<Point> pts(total);
  std::vector<size_t> idx(dims.size(), 0);
  // Texts made once, not per point (the grid may have 10^5 points): the fixed settings, every axis value, and the
  // dimension of each axis.
  std::map<std::string, std::string> fixed_text;
  for (const auto &f : spec.fixed) fixed_text[f.first] = value_text(f.second);
  std::vector<std::vector<std::string>> axis_text(spec.axes.size());
  for (size_t a = 0; a < spec.axes.size(); ++a)
    for (const auto &v : spec.axes[a].values) axis_text[a].push_back(value_text(v));
  std::vector<size_t> dim_of(spec.axes.size());
  for (size_t d = 0; d < dims.size(); ++d)
    for (size_t a : dims[d]) dim_of[a] = d;
  for (size_t i = 0; i < total; ++i) {
    Point &p = pts[i];
    p.index = i;
    std::map<std::string, std::string> set = fixed_text;
    for (size_t a = 0; a < spec.axes.size(); ++a) {  // axis_values in the order of spec.axes
      const size_t k = idx[dim_of[a]];
      p.axis_values.emplace_back(spec.axes[a].name, spec.axes[a].values[k]);
      set[spec.axes[a].name] = axis_text[a][k];
    }
    p.settings.assign(set.begin(), set.end());
    ojson keyed = ojson::object();
    for (const auto &kv : set)
      if (!kNotInKey.count(kv.first)) keyed[kv.first] = kv.second;
    p.canonical = ojson::object();
    p.canonical["task"] = spec.task;
    p.canonical["estimator"] = spec.estimator;
    p.canonical["settings"] = keyed;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(p.canonical.dump())));
    p.key = hex;
    // cost model
    double c = 1;
    if (!spec.cost.empty()) {
      for (const auto &ce : spec.cost) {
        auto it = set.find(ce.first);
        double x = 0;
        if (it != set.end() && numeric(ojson(it->second), &x) && x > 0) c *= std::pow(x, ce.second);
      }
    } else {
      for (const auto &av : p.axis_values) {
        const bool skip = std::count(spec.average.begin(), spec.average.end(), av.first) ||
                          std::count(spec.warm_axes.begin(), spec.warm_axes.end(), av.first);
        double x = 0;
        if (!skip && numeric(av.second, &x) && x > 0) c *= x;
      }
    }
    p.cost = c;
    for (size_t d = dims.size(); d-- > 0;) {  // odometer: last dimension fastest
      if (++idx[d] < spec.axes[dims[d][0]].values.size()) break;
      idx[d] = 0;
    }
  }
  std::set<std::string> keys;
  for (const auto &p : pts)
    if (!keys.insert(p.key).second) throw SpecError("two points of the grid have the same parameters (key " + p.key + ")");
  return pts;
}

std::vector<size_t> schedule(const Spec &spec, const std::vector<Point> &points) {
  // The group of a point: its settings without the warm axes; points of one group stay together.
  std::map<std::string, size_t> first;
  std::vector<size_t> group(points.size());
  for (const auto &p : points) {
    std::string g;
    for (const auto &kv : p.settings)
      if (!std::count(spec.warm_axes.begin(), spec.warm_axes.end(), kv.first)) g += kv.first + "=" + kv.second + ";";
    group[p.index] = first.emplace(g, p.index).first->second;
  }
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].cost != points[b].cost) return points[a].cost > points[b].cost;
    if (group[a] != group[b]) return group[a] < group[b];
    return a < b;
  });
  return order;
}

}  // namespace am::sweep
