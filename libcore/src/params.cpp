// attnmech — validating user settings against a plugin's parameter table.
#include "internal.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string trim(const std::string &s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A number as a user would read it: whole numbers without exponent, otherwise %g.
std::string num_text(double x) {
  if (std::fabs(x) < 1e15 && x == std::floor(x)) return am::format("%.0f", x);
  return am::format("%g", x);
}

// Decimal number (no hex, no inf/nan words); the whole text must be consumed.
bool parse_real(const std::string &t, double *out) {
  if (t.empty()) return false;
  for (char c : t)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E'))
      return false;
  errno = 0;
  char *end = nullptr;
  double x = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return false;
  if (!std::isfinite(x)) return false;  // overflow to inf
  *out = x;
  return true;
}

// One scalar element of type INT or REAL: error text (without the "parameter ..." prefix) or "".
std::string parse_number(const am_param_def *p, bool integer, const std::string &t, double *out) {
  double x = 0;
  if (!parse_real(t, &x)) return "'" + t + "' is not " + (integer ? "a whole number" : "a finite number");
  if (integer && (x != std::floor(x) || std::fabs(x) > 9007199254740992.0))
    return "'" + t + "' is not a whole number";
  if (p->min <= p->max && (x < p->min || x > p->max))
    return "'" + t + "' is out of range [" + num_text(p->min) + ", " + num_text(p->max) + "]";
  *out = x;
  return std::string();
}

bool in_choices(const char *choices, const std::string &v) {
  if (!choices) return false;
  const char *s = choices;
  for (;;) {
    const char *bar = std::strchr(s, '|');
    size_t len = bar ? static_cast<size_t>(bar - s) : std::strlen(s);
    if (v.size() == len && v.compare(0, len, s, len) == 0) return true;
    if (!bar) return false;
    s = bar + 1;
  }
}

}  // namespace

namespace am {

// Parses `text` for parameter p. On success: numbers (INT/REAL/BOOL: one; lists: each element) in
// *nums, or the string in *str (STRING/CHOICE); returns "" . On failure returns the reason.
std::string parse_param_value(const am_param_def *p, const char *text_in, std::vector<double> *nums,
                              std::string *str) {
  nums->clear();
  str->clear();
  const std::string raw = text_in ? text_in : "";
  switch (p->type) {
    case AM_PARAM_INT:
    case AM_PARAM_REAL: {
      const std::string t = trim(raw);
      if (t.empty()) return "a value is required";
      double x = 0;
      std::string e = parse_number(p, p->type == AM_PARAM_INT, t, &x);
      if (!e.empty()) return e;
      nums->push_back(x);
      return std::string();
    }
    case AM_PARAM_BOOL: {
      const std::string t = lower(trim(raw));
      if (t == "1" || t == "true" || t == "yes" || t == "on") nums->push_back(1.0);
      else if (t == "0" || t == "false" || t == "no" || t == "off") nums->push_back(0.0);
      else return "'" + raw + "' is not a boolean (expects one of 0|1|true|false|yes|no|on|off)";
      return std::string();
    }
    case AM_PARAM_STRING:
      *str = raw;
      return std::string();
    case AM_PARAM_CHOICE: {
      const std::string t = trim(raw);
      if (!in_choices(p->choices, t)) return "'" + raw + "' expects one of " + (p->choices ? p->choices : "");
      *str = t;
      return std::string();
    }
    case AM_PARAM_INT_LIST:
    case AM_PARAM_REAL_LIST: {
      const std::string all = trim(raw);
      if (all.empty()) return std::string();  // empty list
      size_t start = 0;
      for (;;) {
        size_t comma = all.find(',', start);
        const std::string t = trim(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (t.empty()) return "'" + raw + "' has an empty element (expects comma-separated numbers)";
        double x = 0;
        std::string e = parse_number(p, p->type == AM_PARAM_INT_LIST, t, &x);
        if (!e.empty()) return e + (all.find(',') != std::string::npos ? " (in '" + raw + "')" : std::string());
        nums->push_back(x);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return std::string();
    }
  }
  return "has an unknown type " + std::to_string(static_cast<int>(p->type));
}

const char *plugin_kind_word(uint32_t kind) {
  return kind == AM_PLUGIN_TASK ? "task" : kind == AM_PLUGIN_ESTIMATOR ? "estimator" : "plugin";
}

}  // namespace am

extern "C" am_status am_params_parse(am_context *ctx, const am_plugin_desc *d, size_t n, const char *const *keys,
                                     const char *const *values, int *consumed, am_record *params) {
  if (!d || !params || (n > 0 && (!keys || !values)))
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_params_parse: NULL argument");
  if (am_record_type_of(params) != AM_REC_OBJECT)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_params_parse: params is not an object record");
  if (d->n_params > 0 && !d->params)
    return am::fail(ctx, AM_ERR_PLUGIN, "plugin '%s' has %u parameters but no table", d->name ? d->name : "?",
                    d->n_params);
  const char *kind = am::plugin_kind_word(d->kind);
  const char *pname = d->name ? d->name : "?";
  AM_GUARD(ctx, {
    std::vector<double> nums;
    std::string str;
    for (uint32_t k = 0; k < d->n_params; ++k) {
      const am_param_def *p = am::param_at(d, k);
      if (!p->name) return am::fail(ctx, AM_ERR_PLUGIN, "%s '%s': parameter %u has no name", kind, pname, k);
      // The last setting of a key wins; every occurrence is consumed.
      const char *text = nullptr;
      for (size_t i = 0; i < n; ++i) {
        if (keys[i] && values[i] && std::strcmp(keys[i], p->name) == 0) {
          text = values[i];
          if (consumed) consumed[i] = 1;
        }
      }
      const bool from_user = text != nullptr;
      if (!from_user) text = p->default_value ? p->default_value : "";
      std::string err = am::parse_param_value(p, text, &nums, &str);
      if (!err.empty()) {
        if (from_user)
          return am::fail(ctx, AM_ERR_USAGE, "parameter '%s' of %s '%s': %s", p->name, kind, pname, err.c_str());
        if (!*text)
          return am::fail(ctx, AM_ERR_USAGE, "parameter '%s' of %s '%s' is required (%s)", p->name, kind, pname,
                          p->help ? p->help : "no default");
        return am::fail(ctx, AM_ERR_PLUGIN, "%s '%s': default of parameter '%s' is invalid: %s", kind, pname, p->name,
                        err.c_str());
      }
      am_status st = AM_OK;
      switch (p->type) {
        case AM_PARAM_INT:
        case AM_PARAM_REAL:
        case AM_PARAM_BOOL:
          st = am_record_set_number(params, p->name, nums[0]);
          break;
        case AM_PARAM_STRING:
        case AM_PARAM_CHOICE:
          st = am_record_set_string(params, p->name, str.c_str());
          break;
        default:
          st = am_record_set_vector(params, p->name, nums.data(), nums.size());
          break;
      }
      if (st != AM_OK) return am::fail(ctx, st, "storing parameter '%s': %s", p->name, am_status_string(st));
    }
    return AM_OK;
  });
}
