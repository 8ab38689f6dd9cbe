// attnmech-report — arrays kept out of results.json (the report spec's `npy_only`): each is written only as its
// .npy file and results.json holds a reference {"npy_file": file, "shape": [...], "dtype": "<f8"} in its place; a
// reader loads the file back from the results directory. A coupling tensor of a coevolution fit is L²·C² doubles
// (90 MB at L = 159): as JSON text it would be ten times that, and a JSON DOM of it far more.
#include "internal.hpp"
#include <common/npy_reference.hpp>

#include <common/safe_file.hpp>

namespace am::report {

namespace {

std::vector<std::string> split_dots(const std::string &p) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t dot = p.find('.', pos);
    out.push_back(p.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) return out;
    pos = dot + 1;
  }
}

// Every array at or below `n` (reached by the dotted path `path`), named as the .npy export names it.
void arrays_below(const am_record *n, const std::string &path, NpyFiles *out) {
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) {
    (*out)[n] = npy_file_name(path);
    return;
  }
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *key = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
    const std::string name = key ? std::string(key) : std::to_string(i);
    arrays_below(am_record_at(n, i), path.empty() ? name : path + "." + name, out);
  }
}

// The nodes a pattern names: components are object keys or list indices, `*` every child.
void match(const am_record *n, const std::vector<std::string> &parts, size_t i, const std::string &path,
           NpyFiles *out) {
  if (!n) return;
  if (i == parts.size()) {
    arrays_below(n, path, out);
    return;
  }
  const am_record_type t = am_record_type_of(n);
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t k = 0; k < am_record_size(n); ++k) {
    const char *key = t == AM_REC_OBJECT ? am_record_key(n, k) : nullptr;
    const std::string name = key ? std::string(key) : std::to_string(k);
    if (parts[i] == "*" || parts[i] == name)
      match(am_record_at(n, k), parts, i + 1, path.empty() ? name : path + "." + name, out);
  }
}

[[noreturn]] void bad_reference(const std::string &where, const std::string &why) {
  throw Error(AM_ERR_FORMAT, where + ": not a valid .npy reference: " + why);
}

}  // namespace

std::string npy_file_name(const std::string &dotted_path) { return am::files::encode_name(dotted_path, 4) + ".npy"; }

NpyFiles npy_only_arrays(const am_record *doc) {
  NpyFiles out;
  const am_record *list = am_record_get(am_record_get(doc, "report"), "npy_only");
  for (size_t i = 0; i < am_record_size(list); ++i) {
    const char *p = am_record_string(am_record_at(list, i));
    if (p && *p) match(doc, split_dots(p), 0, "", &out);
  }
  return out;
}

const char *npy_dtype_text(am_dtype t) { return am::npy_reference::dtype_text(t); }

bool is_npy_reference(const json &j) { return am::npy_reference::is_reference(j); }

void load_npy_reference(const std::string &dir, const json &ref, const std::string &where,
                        const std::function<void(const am_array_view &)> &store) {
  am_array *a = nullptr;
  std::string why;
  switch (am::npy_reference::read(dir, ref, &a, &why)) {
    case am::npy_reference::Problem::None: break;
    case am::npy_reference::Problem::Io: throw Error(AM_ERR_IO, where + ": " + why);
    case am::npy_reference::Problem::Memory: throw Error(AM_ERR_NO_MEMORY, where + ": " + why);
    case am::npy_reference::Problem::Unreadable: throw Error(AM_ERR_FORMAT, where + ": " + why);
    default: bad_reference(where, why);
  }
  struct Owner {
    am_array *a;
    ~Owner() { am_array_destroy(&a); }
  } owner{a};
  store(am_array_get_view(owner.a));
}

}  // namespace am::report
