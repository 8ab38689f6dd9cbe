// attnmech — the plugin registry: loading modules, checking descriptors, discovery, the load report.
//
// Order of checks for one module (nothing of the plugin runs before its ABI number is checked, except
// am_plugin_entry itself, which only returns the address of a static descriptor):
//   dlopen(RTLD_NOW | RTLD_LOCAL) → dlsym(am_plugin_entry) → entry() → abi_version == AM_ABI_VERSION
//   → struct_size covers every field this host reads → kind, names, parameter table, function table
//   → unique name (the first module loaded with a name wins — except that a built-in plugin, found in the build
//     tree or the install dir, is never shadowed by a third-party module of the same name unless the host opts
//     in with am_registry_allow_shadowing or AM_PLUGIN_SHADOW=1; either way the load report says so).
// Before any of that, where the module lives (nothing of a module can be checked before dlopen runs its
// constructors): the file is named by its real path (realpath: a bare name is a file in the current directory,
// never a search of the system library path), and it and its directory must be owned by the user or root and not
// writable by group or others. A search dir failing that is not scanned; the "build tree" beside the executable
// only when Meson's marker (plugins/.attnmech-build-tree) is there: a copy of the binary in /tmp/x/bin must not
// scan /tmp/plugins. Each refusal is one load-report line.
// Modules are never dlclose'd (also not rejected ones): unloading code that may still be referenced
// (atexit handlers, thread-local destructors) is a classic source of crashes at exit.
#include "abi.hpp"
#include "internal.hpp"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

// The install dir is found relative to the library itself (in the manner of ggml's backend registry):
// dladdr on an object of this library gives the path of libattnmech.so as loaded, and the plugins live
// next to it in <that dir>/attnmech-plugins-<ABI>. No configure-time absolute path: a moved prefix works.
#define AM_STR2(x) #x
#define AM_STR1(x) AM_STR2(x)
#define AM_PLUGIN_DIR_NAME "attnmech-plugins-" AM_STR1(AM_ABI_VERSION)
// Written by Meson into <build>/plugins (plugins/meson.build); never installed.
#define AM_BUILD_TREE_MARKER ".attnmech-build-tree"

struct am_registry {
  struct entry {
    const am_plugin_desc *desc;
    std::string path;
    bool builtin;  // found in the build tree or the install dir
    long dir;      // index into search_dirs it was found in, -1 for a module file named directly
  };
  struct search_dir {
    std::string path;
    const char *source;  // "AM_PLUGIN_PATH", "build tree", "install dir", "scan"
  };
  std::vector<entry> plugins;
  std::vector<std::string> report;
  std::map<std::string, am_status> seen_files;  // canonical path → outcome (a file found twice loads once)
  std::set<std::string> scanned_dirs;  // canonical dirs already scanned by discover
  std::vector<search_dir> search_dirs;  // every directory looked in, in order, each once
  long loading_dir = -1;       // the search dir being scanned (-1: a file named directly)
  bool loading_builtin = false;
  bool allow_shadow = false;   // a third-party module may replace a built-in of the same name
};

namespace {

const char *kModuleSuffix = ".so";

// Size of the descriptor up to and including the last field this host reads.
constexpr size_t kDescNeeded = offsetof(am_plugin_desc, estimate) + sizeof(((am_plugin_desc *)nullptr)->estimate);

std::string canonical(const std::string &p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf)) return std::string(buf);
  return p;
}

bool is_dir(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Whether group `gid` is the private group of user `uid` (the user-private-group convention behind umask 002, the
// default for users on Debian/Ubuntu/Fedora): named as the user, with no other members. Group write is then
// write by the owner alone.
bool private_group(uid_t uid, gid_t gid) {
  long n = sysconf(_SC_GETPW_R_SIZE_MAX), m = sysconf(_SC_GETGR_R_SIZE_MAX);
  std::vector<char> pbuf(n > 0 ? (size_t)n : 16384), gbuf(m > 0 ? (size_t)m : 16384);
  passwd pw{}, *pwp = nullptr;
  group gr{}, *grp = nullptr;
  if (getpwuid_r(uid, &pw, pbuf.data(), pbuf.size(), &pwp) != 0 || !pwp) return false;
  if (getgrgid_r(gid, &gr, gbuf.data(), gbuf.size(), &grp) != 0 || !grp) return false;
  return std::strcmp(pw.pw_name, gr.gr_name) == 0 && (!gr.gr_mem || !gr.gr_mem[0]);
}

// "" when `p` (a real path) is owned by the user or root and writable by nobody else (not by others, not by a
// group other than the owner's private group); else why not.
std::string untrusted(const std::string &p, bool want_dir) {
  struct stat st;
  if (lstat(p.c_str(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return want_dir ? "not a directory" : "not a regular file";
  const char *what = want_dir ? "directory" : "file";
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return am::format("%s owned by uid %u (not you or root)", what, (unsigned)st.st_uid);
  if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && !private_group(st.st_uid, st.st_gid)))
    return am::format("%s writable by %s (mode %04o)", what, (st.st_mode & S_IWOTH) ? "others" : "its group",
                      (unsigned)(st.st_mode & 07777));
  return "";
}

bool has_suffix(const std::string &s, const char *suf) {
  size_t n = std::strlen(suf);
  return s.size() > n && s.compare(s.size() - n, n, suf) == 0;
}

am_status add_report(am_context *ctx, am_registry *r, am_status code, const std::string &path, const std::string &why) {
  std::string line = path + ": " + why;
  r->report.push_back(line);
  return am::fail(ctx, code, "%s", line.c_str());
}

bool valid_name(const char *s) {
  if (!s || !*s) return false;
  for (; *s; ++s) {
    char c = *s;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// Everything after the ABI and size checks. Returns "" if the descriptor is usable.
std::string check_desc(const am_plugin_desc *d) {
  if (d->kind != AM_PLUGIN_TASK && d->kind != AM_PLUGIN_ESTIMATOR)
    return am::format("invalid descriptor: unknown kind %u", d->kind);
  if (!d->name) return "invalid descriptor: name is NULL";
  if (!valid_name(d->name)) return am::format("invalid descriptor: name '%s' is not [a-z0-9_-]+", d->name);
  if (!d->version) return "invalid descriptor: version is NULL";
  if (!d->description) return "invalid descriptor: description is NULL";
  if (d->n_params > 0 && !d->params) return "invalid descriptor: n_params > 0 but params is NULL";
  if (d->data_kinds == 0) return "invalid descriptor: data_kinds is 0";
  if (!d->create) return "invalid descriptor: create is NULL";
  if (!d->destroy) return "invalid descriptor: destroy is NULL";
  if (d->kind == AM_PLUGIN_TASK && !d->make_dataset) return "invalid descriptor: task without make_dataset";
  if (d->kind == AM_PLUGIN_ESTIMATOR && !d->estimate) return "invalid descriptor: estimator without estimate";
  std::vector<double> nums;
  std::string str;
  if (d->n_params > 0 && d->params[0].struct_size < sizeof(am_param_def))
    return am::format("invalid descriptor: parameter table rows have struct_size %u, expected at least %zu "
                      "(fill it with sizeof(am_param_def), e.g. through AM_PARAM)",
                      d->params[0].struct_size, sizeof(am_param_def));
  for (uint32_t k = 0; k < d->n_params; ++k) {
    const am_param_def *p = am::param_at(d, k);
    if (p->struct_size != d->params[0].struct_size)
      return am::format("invalid descriptor: parameter %u has struct_size %u, the first row %u", k, p->struct_size,
                        d->params[0].struct_size);
    if (!p->name || !*p->name) return am::format("invalid descriptor: parameter %u has no name", k);
    for (uint32_t j = 0; j < k; ++j)
      if (am::param_at(d, j)->name && std::strcmp(am::param_at(d, j)->name, p->name) == 0)
        return am::format("invalid descriptor: parameter '%s' is listed twice", p->name);
    if (p->type < AM_PARAM_INT || p->type > AM_PARAM_REAL_LIST)
      return am::format("invalid descriptor: parameter '%s' has unknown type %d", p->name, (int)p->type);
    if (p->type == AM_PARAM_CHOICE && (!p->choices || !*p->choices))
      return am::format("invalid descriptor: choice parameter '%s' has no choices", p->name);
    if (p->default_value && *p->default_value) {
      std::string e = am::parse_param_value(p, p->default_value, &nums, &str);
      if (!e.empty())
        return am::format("invalid descriptor: default of parameter '%s': %s", p->name, e.c_str());
    }
  }
  return std::string();
}

// The real path of a module that may be loaded, or "" after a report line saying why not.
std::string trusted_module(am_context *ctx, am_registry *r, const std::string &path) {
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) {
    add_report(ctx, r, AM_ERR_PLUGIN, path, std::string("cannot open: ") + std::strerror(errno));
    return "";
  }
  const std::string real = buf, dir = real.substr(0, std::max<size_t>(real.rfind('/'), 1));
  std::string why = untrusted(real, false);
  if (why.empty()) {
    why = untrusted(dir, true);
    if (!why.empty()) why = dir + ": " + why;
  }
  if (why.empty()) return real;
  add_report(ctx, r, AM_ERR_PLUGIN, path, "not loaded: " + why + "; a module must be writable by you (or root) only");
  return "";
}

am_status load_file_once(am_context *ctx, am_registry *r, const std::string &path) {
  const std::string real = trusted_module(ctx, r, path);
  if (real.empty()) return AM_ERR_PLUGIN;
  // Said before the module's code runs: a host that catches a crash here can name the module (the CLI does).
  am_context_log(ctx, AM_LOG_DEBUG, "plugin %s: loading (its constructors and am_plugin_entry run now)", real.c_str());
  dlerror();
  void *h = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return add_report(ctx, r, AM_ERR_PLUGIN, path, std::string("cannot open: ") + (e ? e : "unknown dlopen error"));
  }
  dlerror();
  void *sym = dlsym(h, AM_PLUGIN_ENTRY_NAME);
  if (!sym) return add_report(ctx, r, AM_ERR_PLUGIN, path, "no entry symbol '" AM_PLUGIN_ENTRY_NAME "'");
  am_plugin_entry_fn entry;
  static_assert(sizeof entry == sizeof sym, "function and object pointers differ in size");
  std::memcpy(&entry, &sym, sizeof entry);
  const am_plugin_desc *d = entry();
  if (!d) return add_report(ctx, r, AM_ERR_PLUGIN, path, AM_PLUGIN_ENTRY_NAME " returned NULL");
  if (d->abi_version != AM_ABI_VERSION)
    return add_report(ctx, r, AM_ERR_ABI, path,
                      am::format("built for ABI %u, this attnmech has ABI %u", d->abi_version, (unsigned)AM_ABI_VERSION));
  if (d->struct_size < kDescNeeded)
    return add_report(ctx, r, AM_ERR_PLUGIN, path,
                      am::format("invalid descriptor: struct_size %u is smaller than the %zu bytes this host reads",
                                 d->struct_size, kDescNeeded));
  std::string why = check_desc(d);
  if (!why.empty()) return add_report(ctx, r, AM_ERR_PLUGIN, path, why);
  for (auto &e : r->plugins) {
    if (std::strcmp(e.desc->name, d->name) != 0) continue;
    if (!r->loading_builtin || e.builtin)
      return add_report(ctx, r, AM_ERR_PLUGIN, path,
                        am::format("duplicate plugin name '%s' (already loaded from %s)", d->name, e.path.c_str()));
    // A built-in arrives after a third-party module of its name (AM_PLUGIN_PATH and named files come first).
    if (r->allow_shadow)
      return add_report(ctx, r, AM_ERR_PLUGIN, path,
                        am::format("built-in plugin '%s' shadowed by %s (shadowing allowed)", d->name, e.path.c_str()));
    const std::string shadow = e.path;
    e = {d, path, true, r->loading_dir};
    add_report(ctx, r, AM_ERR_PLUGIN, shadow,
               am::format("not used: it would shadow the built-in plugin '%s' (%s); set AM_PLUGIN_SHADOW=1 to use it",
                          d->name, path.c_str()));
    return AM_OK;
  }
  r->plugins.push_back({d, path, r->loading_builtin, r->loading_dir});
  return AM_OK;
}

am_status load_file(am_context *ctx, am_registry *r, const std::string &path) {
  const std::string canon = canonical(path);
  auto it = r->seen_files.find(canon);
  if (it != r->seen_files.end()) return it->second;  // reached twice: same outcome, one report line
  am_status st = load_file_once(ctx, r, path);
  r->seen_files[canon] = st;
  return st;
}

// Module files directly in dir and in its immediate subdirectories, sorted. false if dir cannot be read.
bool list_modules(const std::string &dir, std::vector<std::string> *out, int depth, std::string *err) {
  DIR *dp = opendir(dir.c_str());
  if (!dp) {
    if (err) *err = std::strerror(errno);
    return false;
  }
  std::vector<std::string> names;
  while (struct dirent *de = readdir(dp)) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(n);
  }
  closedir(dp);
  std::sort(names.begin(), names.end());
  for (const auto &n : names) {
    std::string p = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + n;
    if (is_dir(p)) {
      if (depth == 0) list_modules(p, out, 1, nullptr);
    } else if (has_suffix(n, kModuleSuffix) && is_file(p)) {
      out->push_back(p);
    }
  }
  return true;
}

am_status scan_dir(am_context *ctx, am_registry *r, const std::string &dir) {
  const std::string why = untrusted(canonical(dir), true);
  if (is_dir(dir) && !why.empty())
    return add_report(ctx, r, AM_ERR_PLUGIN, dir,
                      "not scanned: " + why + "; a plugin directory must be writable by you (or root) only");
  std::vector<std::string> files;
  std::string err;
  if (!list_modules(dir, &files, 0, &err))
    return add_report(ctx, r, AM_ERR_IO, dir, "cannot open directory: " + err);
  for (const auto &f : files) load_file(ctx, r, f);  // failures go to the report; keep going
  return AM_OK;
}

// Whether dir is a search dir already (by canonical path).
bool is_search_dir(const am_registry *r, const std::string &dir) {
  const std::string canon = canonical(dir);
  for (const auto &d : r->search_dirs)
    if (canonical(d.path) == canon) return true;
  return false;
}

// Records dir as a search dir of `source` (once by canonical path; false if already recorded).
bool record_dir(am_registry *r, const std::string &dir, const char *source) {
  if (is_search_dir(r, dir)) return false;
  r->search_dirs.push_back({dir, source});
  return true;
}

// Scans dir, recording it as a search dir of `source` (once by canonical path; false if already recorded).
bool search(am_context *ctx, am_registry *r, const std::string &dir, const char *source, bool builtin) {
  if (!record_dir(r, dir, source)) return false;
  const std::string canon = canonical(dir);
  if (is_dir(dir) && r->scanned_dirs.insert(canon).second) {
    r->loading_dir = static_cast<long>(r->search_dirs.size()) - 1;
    r->loading_builtin = builtin;
    scan_dir(ctx, r, dir);
    r->loading_dir = -1;
    r->loading_builtin = false;
  }
  return true;
}

const char kSelfAnchor = 0;  // an object inside libattnmech, for dladdr

std::string compute_install_dir() {
  Dl_info info;
  std::memset(&info, 0, sizeof info);
  if (!dladdr(&kSelfAnchor, &info) || !info.dli_fname || !*info.dli_fname) return std::string();
  const std::string lib = canonical(info.dli_fname);
  const size_t slash = lib.rfind('/');
  if (slash == std::string::npos) return std::string();
  return lib.substr(0, slash + 1) + AM_PLUGIN_DIR_NAME;
}

// Computed once (thread-safe static); "" when the library's own path is unknown.
const std::string &install_dir() {
  static const std::string dir = compute_install_dir();
  return dir;
}

}  // namespace

extern "C" {

am_status am_registry_create(am_registry **out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  *out = new (std::nothrow) am_registry();
  return *out ? AM_OK : AM_ERR_NO_MEMORY;
}

void am_registry_destroy(am_registry **r) {
  if (!r || !*r) return;
  delete *r;
  *r = nullptr;
}

am_status am_registry_load_file(am_context *ctx, am_registry *r, const char *path) {
  if (!r || !path || !*path) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_registry_load_file: NULL argument");
  AM_GUARD(ctx, { return load_file(ctx, r, path); });
}

am_status am_registry_scan_dir(am_context *ctx, am_registry *r, const char *dir) {
  if (!r || !dir || !*dir) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_registry_scan_dir: NULL argument");
  AM_GUARD(ctx, {
    const std::string canon = canonical(dir);
    long at = -1;
    for (size_t i = 0; i < r->search_dirs.size() && at < 0; ++i)
      if (canonical(r->search_dirs[i].path) == canon) at = static_cast<long>(i);
    if (at < 0) {
      r->search_dirs.push_back({dir, "scan"});
      at = static_cast<long>(r->search_dirs.size()) - 1;
    }
    r->scanned_dirs.insert(canon);
    r->loading_dir = at;
    const am_status st = scan_dir(ctx, r, dir);
    r->loading_dir = -1;
    return st;
  });
}

am_status am_registry_discover(am_context *ctx, am_registry *r, const char *exe_dir) {
  if (!r) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_registry_discover: NULL registry");
  AM_GUARD(ctx, {
    // Each directory is scanned once even when several locations name it. Every location is recorded as a
    // search dir (also a missing one), so a host can say where it looked when nothing was found.
    if (const char *shadow = std::getenv("AM_PLUGIN_SHADOW"))
      if (std::strcmp(shadow, "1") == 0) r->allow_shadow = true;
    if (const char *env = std::getenv("AM_PLUGIN_PATH")) {
      std::string s = env;
      size_t start = 0;
      for (;;) {
        size_t colon = s.find(':', start);
        std::string item = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (!item.empty() && item[0] != '/') {
          // As the dynamic loader ignores relative entries of LD_LIBRARY_PATH for a set-user-ID program: a relative
          // entry would load code from whatever directory the command happens to run in.
          add_report(ctx, r, AM_ERR_PLUGIN, item,
                     "ignored: a relative AM_PLUGIN_PATH entry would load from the current directory; give an "
                     "absolute path (e.g. $PWD/" + item + ")");
        } else if (!item.empty()) {
          if (is_dir(item)) {
            search(ctx, r, item, "AM_PLUGIN_PATH", false);
          } else if (is_file(item)) {
            load_file(ctx, r, item);  // a module named directly in the path
          } else {
            struct stat st;
            const bool missing = stat(item.c_str(), &st) != 0;
            const std::string why = missing ? std::string("cannot open directory: ") + std::strerror(errno)
                                            : std::string("not a directory");
            if (search(ctx, r, item, "AM_PLUGIN_PATH", false)) add_report(ctx, r, AM_ERR_IO, item, why);
          }
        }
        if (colon == std::string::npos) break;
        start = colon + 1;
      }
    }
    if (exe_dir && *exe_dir) {
      // Only a build tree is searched and listed: an installed CLI has no <prefix>/plugins, and a plugins directory
      // beside a copied binary is not scanned (one report line), neither is a search dir of this registry.
      const std::string tree = std::string(exe_dir) + "/../plugins";
      if (is_file(tree + "/" AM_BUILD_TREE_MARKER)) {
        search(ctx, r, tree, "build tree", true);
      } else if (is_dir(tree) && !is_search_dir(r, tree)) {
        add_report(ctx, r, AM_ERR_PLUGIN, tree, "not scanned: not an attnmech build tree (no " AM_BUILD_TREE_MARKER ")");
      }
    }
    const std::string &inst = install_dir();
    if (!inst.empty()) search(ctx, r, inst, "install dir", true);
    return AM_OK;
  });
}

am_status am_registry_info(const am_registry *r, am_registry_summary *out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  am_registry_summary v{};
  v.struct_size = sizeof v;
  v.plugins = r ? r->plugins.size() : 0;
  v.search_dirs = r ? r->search_dirs.size() : 0;
  v.report_lines = r ? r->report.size() : 0;
  try {
    v.install_dir = install_dir().c_str();
  } catch (...) {
    v.install_dir = "";
  }
  return am::emit_struct(nullptr, out, v, "am_registry_summary");
}

am_status am_registry_search_dir_info(const am_registry *r, size_t i, am_search_dir_info *out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  am_search_dir_info v{};
  v.struct_size = sizeof v;
  const bool in_range = r && i < r->search_dirs.size();
  if (in_range) {
    v.path = r->search_dirs[i].path.c_str();
    v.source = r->search_dirs[i].source;
    v.plugins = static_cast<size_t>(std::count_if(r->plugins.begin(), r->plugins.end(), [i](const am_registry::entry &e) {
      return e.dir == static_cast<long>(i);
    }));
  }
  const am_status st = am::emit_struct(nullptr, out, v, "am_search_dir_info");
  return st < 0 ? st : in_range ? AM_OK : AM_ERR_INVALID_ARGUMENT;
}

void am_registry_allow_shadowing(am_registry *r, int allow) {
  if (r) r->allow_shadow = allow != 0;
}

am_status am_registry_plugin_info(const am_registry *r, size_t i, am_plugin_info *out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  am_plugin_info v{};
  v.struct_size = sizeof v;
  const bool in_range = r && i < r->plugins.size();
  if (in_range) {
    v.desc = r->plugins[i].desc;
    v.path = r->plugins[i].path.c_str();
  }
  const am_status st = am::emit_struct(nullptr, out, v, "am_plugin_info");
  return st < 0 ? st : in_range ? AM_OK : AM_ERR_INVALID_ARGUMENT;
}

const am_param_def *am_plugin_param(const am_plugin_desc *d, uint32_t i) {
  if (!d || !d->params || i >= d->n_params) return nullptr;
  return am::param_at(d, i);
}

const am_plugin_desc *am_registry_find(const am_registry *r, const char *name, uint32_t kind) {
  if (!r || !name) return nullptr;
  for (const auto &e : r->plugins)
    if (std::strcmp(e.desc->name, name) == 0 && (kind == 0 || e.desc->kind == kind)) return e.desc;
  return nullptr;
}

const char *am_registry_report_line(const am_registry *r, size_t i) {
  return (r && i < r->report.size()) ? r->report[i].c_str() : nullptr;
}

}  // extern "C"
