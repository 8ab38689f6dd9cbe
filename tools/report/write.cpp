// attnmech-report — writing a results directory atomically (results.json, .npy arrays, SVG plots).
#include "internal.hpp"

#include <safe_file.hpp>  // the one atomic writer, of files and of whole directories

#include <string>
#include <vector>

namespace am::report {

namespace {

const am::files::DirKind kResultsDir{"results.json", "results directory"};

// A message of the file routines (libcore/src/safe_file.hpp: "" = done) as an error.
void throw_if(const std::string &err) {
  if (!err.empty()) throw Error(AM_ERR_IO, err);
}

// Every array of at least `min_elements` elements under `n`, and every npy_only array, as <dir>/<prefix>.npy, named
// by its path. The path is data (any JSON key): it becomes a file name through the one rule's encoding
// (libcore/src/safe_file.hpp), so a key "../../x" is written as "%2E.%2F..%2Fx.npy" inside `dir`, never outside it.
void export_npy(am_context *ctx, const am_record *n, const std::string &dir, const std::string &prefix,
                size_t min_elements, const NpyFiles &npy_only, std::vector<std::string> *written) {
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) {
    am_array_view v{};
    if (am_record_array(n, &v) != AM_OK || (am_array_view_count(&v) < min_elements && !npy_only.count(n))) return;
    const std::string file = npy_file_name(prefix), path = dir + "/" + file;
    if (am_npy_write(ctx, path.c_str(), &v) != AM_OK)
      throw Error(AM_ERR_IO, "cannot write " + path + ": " + am_context_last_error(ctx));
    throw_if(am::files::fsync_path(path, false));
    written->push_back(file);
    return;
  }
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *key = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
    const std::string name = key ? std::string(key) : std::to_string(i);
    export_npy(ctx, am_record_at(n, i), dir, prefix.empty() ? name : prefix + "." + name, min_elements, npy_only,
               written);
  }
}

}  // namespace

void write_file_synced(const std::string &path, const std::string &content) {
  throw_if(am::files::write_atomic(path, content));
}

void check_dir(const std::string &dir) { throw_if(am::files::check_dir(dir, kResultsDir)); }

void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written) {
  check_dir(dir);  // before the document is serialised
  const NpyFiles npy_only = npy_only_arrays(doc);
  const std::string text = dump_results(record_to_json(ctx, doc, &npy_only));  // before touching the disk
  std::vector<std::string> files;
  throw_if(am::files::write_dir_atomically(dir, kResultsDir, [&](const std::string &tmp) {
    write_file_synced(tmp + "/results.json", text);
    files.push_back("results.json");
    export_npy(ctx, doc, tmp, "", opt.npy_min_elements, npy_only, &files);
    write_text_files(doc, tmp, &files);
    if (opt.plots) draw_plots(doc, tmp, &files);
  }));
  written->insert(written->end(), files.begin(), files.end());
}

}  // namespace am::report
