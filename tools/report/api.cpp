// attnmech-report — the C entry points: argument checks, exceptions mapped to statuses and messages.
#include "internal.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <sys/stat.h>

namespace {

using am::input::Error;

template <class F>
am_status guarded(am_context *ctx, F &&f) noexcept {
  try {
    f();
    return AM_OK;
  } catch (const Error &e) {
    return am_context_fail(ctx, e.code, "%s", e.what());
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "report: out of memory");
  } catch (const std::exception &e) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "report: unexpected error: %s", e.what());
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "report: unexpected exception");
  }
}

// A malloc'd copy for the caller (freed with am_free).
char *handout(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size() + 1);
  return p;
}

void tell(const std::vector<std::string> &files, am_report_file_fn fn, void *user) {
  if (fn)
    for (const auto &f : files) fn(user, f.c_str());
}

void need(bool ok, const char *what) {
  if (!ok) throw Error(AM_ERR_INVALID_ARGUMENT, std::string("report: ") + what);
}

// The caller's plot options over the defaults (NULL: the defaults); the first version is the whole 3.7 struct.
am_report_plot_options plot_options(const am_report_plot_options *opt) {
  am_report_plot_options o;
  am_report_plot_default_options(&o);
  if (!opt) return o;
  need(opt->struct_size >= sizeof o, "am_report_plot_options.struct_size is too small");
  std::memcpy(&o, opt, sizeof o);
  return o;
}

}  // namespace

extern "C" {

AM_REPORT_API am_status am_report_json(am_context *ctx, const am_record *doc, char **text) {
  if (text) *text = nullptr;
  return guarded(ctx, [&] {
    need(doc && text, "am_report_json needs a document and an output pointer");
    const am::report::NpyFiles npy_only = am::report::npy_only_arrays(doc);
    am::report::ArrayRefs refs;  // a text without a directory: only the npy_only arrays are references
    refs.npy_only = &npy_only;
    am::report::StringSink out;
    am::report::emit_results(ctx, doc, refs, out);
    *text = handout(out.text);
  });
}

AM_REPORT_API am_status am_report_read(am_context *ctx, const char *path, am_record **doc) {
  if (doc) *doc = nullptr;
  return guarded(ctx, [&] {
    need(path && doc, "am_report_read needs a path and an output pointer");
    std::string file = path, dir;
    struct stat st {};
    if (::stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      dir = path;
      file += "/results.json";
    } else {
      const size_t slash = file.rfind('/');
      dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
    }
    const std::string text = am::input::read_regular_file(file, am::input::kMaxResultsBytes, "a results.json file");
    am::report::json j;
    try {
      j = am::input::parse_strict<am::report::json>(text);
    } catch (const std::exception &e) {
      throw Error(AM_ERR_FORMAT, file + " is not valid JSON: " + e.what());
    }
    am_record *r = nullptr;
    if (am_record_create(&r) != AM_OK) throw std::bad_alloc();
    try {
      am::report::json_to_record(j, r, dir);  // .npy references: files beside results.json
    } catch (const Error &e) {
      am_record_destroy(&r);
      throw Error(e.code, file + ": " + e.what());
    } catch (...) {
      am_record_destroy(&r);
      throw;
    }
    *doc = r;
  });
}

AM_REPORT_API void am_report_write_options_init(am_report_write_options *opt, size_t size) {
  if (!opt || size < sizeof(uint32_t)) return;
  am_report_write_options d;
  std::memset(&d, 0, sizeof d);
  d.plots = 1;
  d.npy_min_elements = 16;
  const size_t n = std::min(size, sizeof d);
  d.struct_size = static_cast<uint32_t>(n);
  std::memcpy(static_cast<void *>(opt), &d, n);
}

AM_REPORT_API am_status am_report_check_dir(am_context *ctx, const char *dir) {
  return guarded(ctx, [&] {
    need(dir != nullptr, "am_report_check_dir needs a directory");
    am::report::check_dir(dir);
  });
}

AM_REPORT_API am_status am_report_write(am_context *ctx, const am_record *doc, const char *dir,
                                        const am_report_write_options *opt) {
  return guarded(ctx, [&] {
    need(doc && dir, "am_report_write needs a document and a directory");
    am_report_write_options o;
    am_report_write_default_options(&o);
    if (opt) {
      // The first version of the struct ends after npy_min_elements; an older caller's prefix is copied.
      const size_t first = offsetof(am_report_write_options, npy_min_elements) + sizeof(size_t);
      need(opt->struct_size >= first, "am_report_write_options.struct_size is too small");
      std::memcpy(&o, opt, std::min<size_t>(opt->struct_size, sizeof o));
      o.struct_size = sizeof o;
    }
    std::vector<std::string> files;
    try {
      am::report::write_results_dir(ctx, doc, dir, o, &files);
    } catch (...) {
      tell(files, o.on_file, o.user);  // the files in place after all (results written, a plot failed)
      throw;
    }
    tell(files, o.on_file, o.user);
  });
}

AM_REPORT_API am_status am_report_check_settings(am_context *ctx) {
  return guarded(ctx, [] { am::report::check_plot_formats(); });
}

AM_REPORT_API uint32_t am_report_formats_available(void) { return am::report::available_formats(); }

AM_REPORT_API am_status am_report_parse_formats(am_context *ctx, const char *list, uint32_t *formats) {
  return guarded(ctx, [&] {
    need(list && formats, "am_report_parse_formats needs a list and an output pointer");
    *formats = am::report::parse_formats(list);
  });
}

AM_REPORT_API void am_report_plot_options_init(am_report_plot_options *opt, size_t size) {
  if (!opt || size < sizeof(uint32_t)) return;
  am_report_plot_options d;
  std::memset(&d, 0, sizeof d);
  d.formats = AM_REPORT_FORMATS_DEFAULT;
  const size_t n = std::min(size, sizeof d);
  d.struct_size = static_cast<uint32_t>(n);
  std::memcpy(static_cast<void *>(opt), &d, n);
}

AM_REPORT_API am_status am_report_plot_with_options(am_context *ctx, const am_record *doc, const char *dir,
                                                    const am_report_plot_options *opt) {
  return guarded(ctx, [&] {
    need(doc && dir, "am_report_plot needs a document and a directory");
    const am_report_plot_options o = plot_options(opt);
    std::vector<std::string> files;
    try {
      am::report::draw_plots(doc, dir, o.formats, &files);
    } catch (...) {
      tell(files, o.on_file, o.user);  // the files that were written before the failure
      throw;
    }
    tell(files, o.on_file, o.user);
  });
}

AM_REPORT_API am_status am_report_plot(am_context *ctx, const am_record *doc, const char *dir,
                                       am_report_file_fn on_file, void *user) {
  am_report_plot_options o;
  am_report_plot_default_options(&o);
  o.on_file = on_file;
  o.user = user;
  return am_report_plot_with_options(ctx, doc, dir, &o);
}

AM_REPORT_API am_status am_report_summary(am_context *ctx, const am_record *doc, char **text) {
  if (text) *text = nullptr;
  return guarded(ctx, [&] {
    need(doc && text, "am_report_summary needs a document and an output pointer");
    *text = handout(am::report::summary_text(doc));
  });
}

AM_REPORT_API am_status am_report_compare_with_options(am_context *ctx, const am_record *const *docs,
                                                       const char *const *labels, size_t n, const char *dir,
                                                       const am_report_plot_options *opt) {
  return guarded(ctx, [&] {
    need(docs && labels && dir, "am_report_compare needs documents, labels and a directory");
    const am_report_plot_options o = plot_options(opt);
    std::vector<const am_record *> d(docs, docs + n);
    std::vector<std::string> l;
    for (size_t i = 0; i < n; ++i) {
      need(docs[i] != nullptr, "am_report_compare: a document is NULL");
      l.emplace_back(labels[i] ? labels[i] : "");
    }
    std::vector<std::string> files;
    am::report::draw_compare(d, l, dir, o.formats, &files);
    tell(files, o.on_file, o.user);
  });
}

AM_REPORT_API am_status am_report_compare(am_context *ctx, const am_record *const *docs, const char *const *labels,
                                          size_t n, const char *dir, am_report_file_fn on_file, void *user) {
  am_report_plot_options o;
  am_report_plot_default_options(&o);
  o.on_file = on_file;
  o.user = user;
  return am_report_compare_with_options(ctx, docs, labels, n, dir, &o);
}

}  // extern "C"
