// attnmech-report — writing a results directory atomically (results.json, .npy arrays, plots).
#include "internal.hpp"

#include <common/safe_file.hpp>  // the one atomic writer, of files and of whole directories

#include <string>
#include <vector>

namespace am::report {

namespace {

const am::files::DirKind kResultsDir{"results.json", "results directory"};

// A message of the file routines (libcore/include/common/safe_file.hpp: "" = done) as an error.
void throw_if(const std::string &err) {
  if (!err.empty()) throw Error(AM_ERR_IO, err);
}

// The text goes to the file being written.
class FileSink : public TextSink {
 public:
  explicit FileSink(am::files::FdWriter &w) : w_(w) {}
  void write(const char *p, size_t n) override { w_.write(p, n); }
  using TextSink::write;

 private:
  am::files::FdWriter &w_;
};

// results.json, streamed from the record, and the .npy file of every array it refers to (arrays of at least
// `min_elements` elements and the npy_only ones) into `dir`, in the document's order. The file name comes from the
// array's dotted path through the one rule's encoding (libcore/include/common/safe_file.hpp): a key "../../x" is written as
// "%2E.%2F..%2Fx.npy" inside `dir`, never outside it.
void write_document(am_context *ctx, const am_record *doc, const std::string &dir, size_t min_elements,
                    const NpyFiles &npy_only, std::vector<std::string> *written) {
  ArrayRefs refs;
  refs.npy_only = &npy_only;
  refs.min_elements = min_elements;
  std::vector<std::string> npy_files;
  refs.on_reference = [&](const am_array_view &v, const std::string &file) {
    const std::string path = dir + "/" + file;
    if (am_npy_write(ctx, path.c_str(), &v) != AM_OK)
      throw Error(AM_ERR_IO, "cannot write " + path + ": " + am_context_last_error(ctx));
    throw_if(am::files::fsync_path(path, false));
    npy_files.push_back(file);
  };
  throw_if(am::files::write_atomic_streamed(dir + "/results.json", [&](am::files::FdWriter &w) {
    FileSink out(w);
    emit_results(ctx, doc, refs, out);
  }));
  written->push_back("results.json");
  written->insert(written->end(), npy_files.begin(), npy_files.end());
}

}  // namespace

void write_file_synced(const std::string &path, const std::string &content) {
  throw_if(am::files::write_atomic(path, content));
}

void check_dir(const std::string &dir) {
  check_plot_formats();  // a setting the write will need, refused before anything is computed
  throw_if(am::files::check_dir(dir, kResultsDir));
}

void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written) {
  check_dir(dir);
  const uint32_t formats = opt.plots ? plot_formats(opt.formats) : 0;  // a setting refused before anything is written
  const NpyFiles npy_only = npy_only_arrays(doc);
  std::vector<std::string> files;
  std::string plot_error;  // the results are worth more than their pictures: written without them
  am_status plot_code = AM_OK;
  throw_if(am::files::write_dir_atomically(dir, kResultsDir, [&](const std::string &tmp) {
    write_document(ctx, doc, tmp, opt.npy_min_elements, npy_only, &files);
    write_text_files(doc, tmp, &files);
    if (!opt.plots) return;
    try {
      draw_plots(doc, tmp, formats, &files);
    } catch (const Error &e) {
      plot_error = e.what(), plot_code = e.code;
    } catch (const std::exception &e) {
      plot_error = e.what(), plot_code = AM_ERR_IO;
    }
  }));
  written->insert(written->end(), files.begin(), files.end());
  if (!plot_error.empty())
    throw Error(plot_code, "the results are written to " + dir + ", but not all of their plots: " + plot_error);
}

}  // namespace am::report
