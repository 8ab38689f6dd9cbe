// attnmech figure — the figure spec (docs/figures.md): title, paper reference, run time, caption, named sweeps
// in the sweep format, plot blocks; --set applied to the sweeps; structural checks of the plot references.
#include "figure.hpp"

#include <common/read_input.hpp>  // the one reader of the tools' inputs

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace am::figure {

namespace {

const std::set<std::string> kFigureKeys = {"title", "paper_ref", "runtime", "long", "caption",
                                           "sweeps", "plot",      "panels",  "description"};
const std::set<std::string> kKinds = {"lines", "scatter", "heatmap", "bars"};

std::string string_field(const ojson &j, const char *key, bool required) {
  if (!j.contains(key)) {
    if (required) throw SpecError(std::string("figure spec: missing \"") + key + "\"");
    return "";
  }
  if (!j[key].is_string()) throw SpecError(std::string("figure spec: \"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

// "--set" value for an axis: JSON when it parses as a list or a range object, else comma-separated text.
ojson axis_from_text(const std::string &v) {
  try {
    ojson j = am::input::parse_strict<ojson>(v, true);
    if (j.is_array() || j.is_object()) return j;
  } catch (const std::exception &) {
  }
  ojson list = ojson::array();
  size_t pos = 0;
  for (;;) {
    const size_t k = v.find(',', pos);
    const std::string part = v.substr(pos, k == std::string::npos ? std::string::npos : k - pos);
    char *end = nullptr;
    const double x = std::strtod(part.c_str(), &end);
    if (!part.empty() && end && *end == '\0') list.push_back(x == static_cast<double>(static_cast<long long>(x))
                                                                 ? ojson(static_cast<long long>(x))
                                                                 : ojson(x));
    else list.push_back(part);
    if (k == std::string::npos) break;
    pos = k + 1;
  }
  return list;
}

bool has_axis(const ojson &s, const std::string &key) {
  if (s.contains("axes") && s["axes"].is_object() && s["axes"].contains(key)) return true;
  if (s.contains("zip") && s["zip"].is_array())
    for (const auto &g : s["zip"])
      if (g.is_object() && g.contains(key)) return true;
  return false;
}

bool has_fixed(const ojson &s, const std::string &key) {
  return s.contains("fixed") && s["fixed"].is_object() && s["fixed"].contains(key);
}

void apply_set(ojson *s, const std::string &key, const std::string &value) {
  if (has_axis(*s, key)) {
    if (s->contains("axes") && (*s)["axes"].contains(key)) {
      (*s)["axes"][key] = axis_from_text(value);
      return;
    }
    throw SpecError("--set " + key + ": '" + key + "' is an axis of a zip group; change it in the spec file");
  }
  (*s)["fixed"][key] = value;
}

// Applies the --set pairs to the sweeps (ordered object id → sweep spec).
void apply_sets(ojson *sweeps, const std::vector<std::pair<std::string, std::string>> &sets) {
  for (const auto &kv : sets) {
    const size_t dot = kv.first.find('.');
    if (dot != std::string::npos && sweeps->contains(kv.first.substr(0, dot))) {
      apply_set(&(*sweeps)[kv.first.substr(0, dot)], kv.first.substr(dot + 1), kv.second);
      continue;
    }
    bool any = false;
    for (auto it = sweeps->begin(); it != sweeps->end(); ++it)
      if (has_axis(it.value(), kv.first) || has_fixed(it.value(), kv.first)) {
        apply_set(&it.value(), kv.first, kv.second);
        any = true;
      }
    if (!any)
      for (auto it = sweeps->begin(); it != sweeps->end(); ++it) apply_set(&it.value(), kv.first, kv.second);
  }
}

const am::sweep::Spec *find_sweep(const Figure &f, const std::string &id) {
  for (const auto &s : f.sweeps)
    if (s.id == id) return &s.spec;
  return nullptr;
}

bool names_setting(const am::sweep::Spec &s, const std::string &key) {
  for (const auto &a : s.axes)
    if (a.name == key) return true;
  for (const auto &kv : s.fixed)
    if (kv.first == key) return true;
  return false;
}

bool names_axis(const am::sweep::Spec &s, const std::string &key) {
  return std::any_of(s.axes.begin(), s.axes.end(), [&](const am::sweep::Axis &a) { return a.name == key; });
}

// The type of every field the drawing reads (draw.cpp), checked with the rest of the spec before any sweep runs:
// a wrong type is a usage error naming the field, not the JSON library's text after hours of computing.
enum class Type { String, Number, Digits, Bool, Object, List, StringList };
struct Field {
  const char *key;
  Type type;
};
const Field kRefFields[] = {{"sweep", Type::String},     {"where", Type::Object},    {"x", Type::String},
                            {"group", Type::StringList}, {"metric", Type::String},   {"array", Type::String},
                            {"y_array", Type::String},   {"x_array", Type::String},  {"yerr_array", Type::String},
                            {"strings", Type::String},   {"label", Type::String},    {"names", Type::Object},
                            {"digits", Type::Digits},    {"y_scale", Type::Number},  {"x_offset", Type::Number},
                            {"abs", Type::Bool},         {"style", Type::String},    {"color", Type::String},
                            {"colors", Type::List},      {"points", Type::Bool},     {"title", Type::String}};
const Field kPanelFields[] = {{"kind", Type::String},   {"id", Type::String},    {"title", Type::String},
                              {"x_label", Type::String}, {"y_label", Type::String}, {"x_log", Type::Bool},
                              {"y_log", Type::Bool},     {"diagonal", Type::Bool}, {"series", Type::List},
                              {"panels", Type::List},    {"value_label", Type::String}};

bool has_type(const ojson &v, Type t) {
  switch (t) {
    case Type::String: return v.is_string();
    case Type::Number: return v.is_number();
    case Type::Digits: return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 17;
    case Type::Bool: return v.is_boolean();
    case Type::Object: return v.is_object();
    case Type::List: return v.is_array();
    case Type::StringList:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const ojson &e) { return e.is_string(); });
  }
  return false;
}

const char *type_name(Type t) {
  switch (t) {
    case Type::String: return "a string";
    case Type::Number: return "a number";
    case Type::Digits: return "a whole number from 0 to 17";
    case Type::Bool: return "true or false";
    case Type::Object: return "an object";
    case Type::List: return "a list";
    case Type::StringList: return "a list of strings";
  }
  return "?";
}

template <size_t N>
void check_types(const ojson &o, const Field (&fields)[N], const std::string &at) {
  for (const Field &f : fields) {
    const auto it = o.find(f.key);
    if (it != o.end() && !has_type(*it, f.type))
      throw SpecError(at + ": \"" + f.key + "\" must be " + type_name(f.type) + " (got " + it->dump() + ")");
  }
}

// One data reference ({sweep, where, x?, group?, ...}) of a plot block.
void check_ref(const Figure &f, const ojson &r, const std::string &where_text) {
  if (!r.is_object()) throw SpecError(where_text + ": must be an object");
  check_types(r, kRefFields, where_text);
  if (!r.contains("sweep") || !r["sweep"].is_string())
    throw SpecError(where_text + ": \"sweep\" (the id of one of the figure's sweeps) is missing");
  const std::string id = r["sweep"].get<std::string>();
  const am::sweep::Spec *s = find_sweep(f, id);
  if (!s) throw SpecError(where_text + ": no sweep \"" + id + "\" in this figure");
  if (r.contains("where")) {
    if (!r["where"].is_object()) throw SpecError(where_text + ": \"where\" must be an object: axis → value(s)");
    for (auto it = r["where"].begin(); it != r["where"].end(); ++it)
      if (!names_setting(*s, it.key()))
        throw SpecError(where_text + ": \"where\" names '" + it.key() + "', neither an axis nor a fixed setting of sweep \"" +
                        id + "\"");
  }
  if (r.contains("x") && (!r["x"].is_string() || !names_axis(*s, r["x"].get<std::string>())))
    throw SpecError(where_text + ": \"x\" must name an axis of sweep \"" + id + "\"");
  if (r.contains("group")) {
    if (!r["group"].is_array()) throw SpecError(where_text + ": \"group\" must be a list of axis names");
    for (const auto &g : r["group"])
      if (!g.is_string() || !names_axis(*s, g.get<std::string>()))
        throw SpecError(where_text + ": \"group\" names " + g.dump() + ", not an axis of sweep \"" + id + "\"");
  }
  const bool metric = r.contains("metric"), array = r.contains("array") || r.contains("y_array");
  if (metric == array && !r.contains("strings"))
    throw SpecError(where_text + ": give either \"metric\" (a scalar of results.json) or \"array\"/\"y_array\"");
  for (const char *k : {"metric", "array", "y_array", "x_array", "yerr_array", "strings"})
    if (r.contains(k) && !r[k].is_string()) throw SpecError(where_text + ": \"" + k + "\" must be a dotted path");
}

void check_panel(const Figure &f, const ojson &p, const std::string &at) {
  if (!p.is_object()) throw SpecError(at + ": a plot block must be an object");
  check_types(p, kPanelFields, at);
  const std::string kind = p.value("kind", "");
  if (!kKinds.count(kind)) throw SpecError(at + ": \"kind\" must be lines, scatter, heatmap or bars (got '" + kind + "')");
  if (kind == "heatmap") {
    if (!p.contains("panels") || !p["panels"].is_array() || p["panels"].empty())
      throw SpecError(at + ": a heat map needs \"panels\": [{sweep, where, array, title}]");
    for (size_t i = 0; i < p["panels"].size(); ++i) check_ref(f, p["panels"][i], at + ".panels." + std::to_string(i));
    for (const char *k : {"row_labels", "col_labels"})
      if (p.contains(k) && p[k].is_object()) check_ref(f, p[k], at + "." + k);
    return;
  }
  if (!p.contains("series") || !p["series"].is_array() || p["series"].empty())
    throw SpecError(at + ": \"series\" must be a non-empty list");
  for (size_t i = 0; i < p["series"].size(); ++i) {
    const ojson &r = p["series"][i];
    const std::string where = at + ".series." + std::to_string(i);
    check_ref(f, r, where);
    if (r.contains("metric") && !r.contains("x") && r.value("style", "") != "hline")
      throw SpecError(where + ": a metric series needs \"x\" (an axis) or style \"hline\"");
  }
  if (kind == "bars" && p.contains("categories") && p["categories"].is_object()) check_ref(f, p["categories"], at + ".categories");
}

}  // namespace

Figure parse_figure(const std::string &text, const std::string &name,
                    const std::vector<std::pair<std::string, std::string>> &sets) {
  ojson j;
  try {
    j = am::input::parse_strict<ojson>(text, true);  // depth-limited; its strings become names and paths: no NUL
  } catch (const std::exception &e) {
    throw SpecError(std::string("figure spec is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw SpecError("figure spec must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!kFigureKeys.count(it.key()))
      throw SpecError("unknown figure spec key '" + it.key() +
                      "' (known: title, paper_ref, runtime, long, caption, sweeps, plot, panels, description)");
  Figure f;
  f.name = name;
  f.sets = sets;
  f.title = string_field(j, "title", true);
  f.paper_ref = string_field(j, "paper_ref", true);
  f.runtime = string_field(j, "runtime", true);
  f.long_text = string_field(j, "long", false);
  if (!j.contains("caption") || !j["caption"].is_object() || !j["caption"].contains("paper") ||
      !j["caption"].contains("ours") || !j["caption"]["paper"].is_string() || !j["caption"]["ours"].is_string())
    throw SpecError("figure spec: \"caption\" must be {\"paper\": text, \"ours\": text, \"numbers\"?: [...]}");
  f.caption = j["caption"];
  if (!j.contains("sweeps") || !j["sweeps"].is_object() || j["sweeps"].empty())
    throw SpecError("figure spec: \"sweeps\" must be an object: id → sweep spec (docs/sweep.md)");
  ojson sweeps = j["sweeps"];
  apply_sets(&sweeps, sets);
  size_t points = 0;  // all sweeps together: the figure holds every sweep's points when it draws
  for (auto it = sweeps.begin(); it != sweeps.end(); ++it) {
    const std::string &id = it.key();
    if (id.empty() || id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                          std::string::npos)
      throw SpecError("figure spec: sweep id '" + id + "' must be letters, digits, '_' or '-' (it names a directory)");
    try {
      f.sweeps.push_back({id, am::sweep::parse_spec(it.value().dump(), {})});
      points += am::sweep::grid_size(f.sweeps.back().spec);
      if (points > am::sweep::kMaxPoints)
        throw am::sweep::SpecError("the figure's sweeps have more than " + std::to_string(am::sweep::kMaxPoints) +
                               " points together (the most a sweep may have)");
      am::sweep::expand(f.sweeps.back().spec);
    } catch (const am::sweep::SpecError &e) {
      throw SpecError("sweep \"" + id + "\": " + e.what());
    }
  }
  if (j.contains("plot") == j.contains("panels"))
    throw SpecError("figure spec: give either \"plot\" (one plot block) or \"panels\" (a list of them)");
  if (j.contains("plot")) {
    f.panels.push_back(j["plot"]);
  } else {
    if (!j["panels"].is_array() || j["panels"].empty()) throw SpecError("figure spec: \"panels\" must be a non-empty list");
    for (const auto &p : j["panels"]) f.panels.push_back(p);
  }
  check_plots(f);
  return f;
}

Figure read_figure(const std::string &path, const std::vector<std::pair<std::string, std::string>> &sets) {
  std::string text;
  try {
    text = am::input::read_regular_file(path, am::input::kMaxSpecBytes, "a figure spec");
  } catch (const am::input::Error &e) {
    throw SpecError(e.what());
  }
  const std::string name = std::filesystem::path(path).stem().string();
  try {
    return parse_figure(text, name, sets);
  } catch (const SpecError &e) {
    throw SpecError(path + ": " + e.what());
  }
}

void check_plots(const Figure &f) {
  std::set<std::string> files;
  for (size_t i = 0; i < f.panels.size(); ++i) {
    const std::string at = f.panels.size() == 1 ? "plot" : "panels." + std::to_string(i);
    check_panel(f, f.panels[i], at);
    if (f.panels.size() > 1) {
      const std::string id = f.panels[i].value("id", std::to_string(i + 1));
      if (!files.insert(id).second) throw SpecError(at + ": two panels have the id '" + id + "'");
    }
  }
  if (f.caption.contains("numbers")) {
    if (!f.caption["numbers"].is_array()) throw SpecError("caption.numbers must be a list");
    for (size_t i = 0; i < f.caption["numbers"].size(); ++i) {
      const ojson &n = f.caption["numbers"][i];
      check_ref(f, n, "caption.numbers." + std::to_string(i));
      if (!n.contains("label") || !n["label"].is_string())
        throw SpecError("caption.numbers." + std::to_string(i) + ": \"label\" is missing");
      if (!n.contains("metric"))
        throw SpecError("caption.numbers." + std::to_string(i) + ": \"metric\" (a scalar of results.json) is missing");
    }
  }
}

Listing list_entry(const std::string &path) {
  Listing l;
  l.name = std::filesystem::path(path).stem().string();
  try {
    const ojson j = am::input::parse_strict<ojson>(am::input::read_regular_file(path, am::input::kMaxSpecBytes, "a figure spec"), true);
    l.title = j.value("title", "?");
    l.paper_ref = j.value("paper_ref", "?");
    l.runtime = j.value("runtime", "?");
  } catch (const std::exception &) {
    l.title = "(not valid JSON)";
  }
  return l;
}

}  // namespace am::figure
