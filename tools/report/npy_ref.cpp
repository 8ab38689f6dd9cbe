// attnmech-report — arrays kept out of results.json (the report spec's `npy_only`): each is written only as its
// .npy file and results.json holds a reference {"npy_file": file, "shape": [...], "dtype": "<f8"} in its place; a
// reader loads the file back from the results directory. A coupling tensor of a coevolution fit is L²·C² doubles
// (90 MB at L = 159): as JSON text it would be ten times that, and a JSON DOM of it far more.
#include "internal.hpp"

#include <safe_file.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

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

// The shape a reference states: a list of at most AM_MAX_DIMS whole numbers >= 0.
std::vector<size_t> stated_shape(const json &ref, const std::string &where) {
  const json &s = ref.at("shape");
  if (!s.is_array() || s.size() > AM_MAX_DIMS) bad_reference(where, "\"shape\" is not a list of at most 8 sizes");
  std::vector<size_t> shape;
  for (const auto &d : s) {
    if (!d.is_number_unsigned()) bad_reference(where, "\"shape\" holds " + d.dump().substr(0, 40));
    shape.push_back(d.get<size_t>());
  }
  return shape;
}

std::string shape_text(const std::vector<size_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

struct ArrayOwner {
  am_array *a = nullptr;
  am_context *ctx = nullptr;  // the .npy reader's own, so its message survives a caller's NULL context
  ~ArrayOwner() {
    am_array_destroy(&a);
    am_context_destroy(&ctx);
  }
};

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

const char *npy_dtype_text(am_dtype t) {
  switch (t) {
    case AM_F64: return "<f8";
    case AM_F32: return "<f4";
    case AM_I64: return "<i8";
    case AM_I32: return "<i4";
  }
  return "?";
}

bool is_npy_reference(const json &j) {
  return j.is_object() && j.size() == 3 && j.contains("npy_file") && j.contains("shape") && j.contains("dtype");
}

void load_npy_reference(const std::string &dir, const json &ref, const std::string &where,
                        const std::function<void(const am_array_view &)> &store) {
  if (!ref.at("npy_file").is_string() || !ref.at("dtype").is_string()) bad_reference(where, "\"npy_file\" and \"dtype\" are strings");
  const std::string file = ref.at("npy_file").get<std::string>(), dtype = ref.at("dtype").get<std::string>();
  const std::string why = am::files::name_problem(file);  // the one rule: a name in the directory, never a path
  if (!why.empty()) bad_reference(where, "file name '" + file.substr(0, 60) + "' " + why);
  if (file.size() < 5 || file.compare(file.size() - 4, 4, ".npy") != 0) bad_reference(where, "'" + file + "' is not a .npy file name");
  const std::vector<size_t> shape = stated_shape(ref, where);
  if (dir.empty()) bad_reference(where, "no results directory to read it from");
  const std::string path = dir + "/" + file;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw Error(AM_ERR_IO, where + ": its array file " + path + " cannot be read: " + std::strerror(errno));
  if (S_ISLNK(st.st_mode)) bad_reference(where, path + " is a symbolic link (the writer makes none; it may lead out)");
  if (!S_ISREG(st.st_mode)) bad_reference(where, path + " is " + am::input::file_kind(st.st_mode) + ", not a .npy file");
  ArrayOwner owner;
  if (am_context_create(&owner.ctx, nullptr) != AM_OK) throw std::bad_alloc();
  const am_status rs = am_npy_read(owner.ctx, path.c_str(), &owner.a);
  if (rs != AM_OK) throw Error(rs == AM_ERR_NO_MEMORY ? rs : AM_ERR_FORMAT, where + ": " + am_context_last_error(owner.ctx));
  const am_array_view v = am_array_get_view(owner.a);
  if (npy_dtype_text(v.dtype) != dtype || std::vector<size_t>(v.shape, v.shape + v.ndim) != shape)
    bad_reference(where, file + " holds " + npy_dtype_text(v.dtype) + " " +
                             shape_text(std::vector<size_t>(v.shape, v.shape + v.ndim)) + ", the reference says " +
                             dtype.substr(0, 8) + " " + shape_text(shape));
  store(v);
}

}  // namespace am::report
