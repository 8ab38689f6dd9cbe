// Fuzz harness "results_json": the fuzzer's bytes are a results.json, read by am_report_read
// (tools/report/api.cpp, json.cpp, npy_ref.cpp) as `attnmech plot DIR` reads it. The file sits in a private
// results directory beside .npy files that its references ({"npy_file": ..., "shape": ..., "dtype": ...}) may name:
// a valid f8 [2, 3], i4 [3] and i8 [50], a broken header, a file cut short in its data, a symlink out of the
// directory (and names of no file: a missing one). A document that reads is then used
// as `plot` uses it: written back as results.json text (am_report_json), summarised (am_report_summary,
// summary.cpp) and drawn (am_report_plot: resolve.cpp, draw.cpp, svg.cpp) into a private directory.
#include "fuzz_util.hpp"

#include <attnmech/report.h>

#include <unistd.h>

namespace {

void put_npy(const std::filesystem::path &p, am_dtype t, std::initializer_list<size_t> shape, const void *data) {
  const am_array_view v = am_array_view_make(t, static_cast<uint32_t>(shape.size()), shape.begin(), 0, data);
  if (am_npy_write(nullptr, p.c_str(), &v) != AM_OK) fuzz::die("am_npy_write");
}

// The results directory: results.json is a symlink to the in-memory file the fuzzer's bytes go to.
std::string results_dir(const fuzz::MemFile &file) {
  const auto d = fuzz::temp_dir() / "results";
  std::filesystem::create_directories(d);
  if (symlink(file.path().c_str(), (d / "results.json").c_str()) != 0) fuzz::die("symlink");
  const double f[6] = {1, 2, 3, 4, 5, 6};
  const int32_t i[3] = {1, -2, 3};
  put_npy(d / "a.npy", AM_F64, {2, 3}, f);
  put_npy(d / "i.npy", AM_I32, {3}, i);
  int64_t e[50];
  for (int64_t k = 0; k < 50; ++k) e[k] = k < 25 ? k : k + 50;  // a kernel block's examples (first and last 25 of 100)
  put_npy(d / "e.npy", AM_I64, {50}, e);
  const uint8_t junk[] = "\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'";
  fuzz::write_file(d / "bad.npy", junk, sizeof junk - 1);
  put_npy(d / "cut.npy", AM_F64, {2, 3}, f);  // then cut inside its data: 6 doubles claimed, 2 left
  std::filesystem::resize_file(d / "cut.npy", std::filesystem::file_size(d / "cut.npy") - 4 * sizeof(double));
  if (symlink("/etc/passwd", (d / "link.npy").c_str()) != 0) fuzz::die("symlink");
  return d.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  static const std::string dir = results_dir(file);
  static const std::string plots = [] {
    const auto d = fuzz::temp_dir() / "plots";
    std::filesystem::create_directories(d);
    return d.string();
  }();
  am_context *ctx = fuzz::context();
  am_record *doc = nullptr;
  file.set(data, size);
  am_status st = am_report_read(ctx, dir.c_str(), &doc);
  fuzz::expect_message(st);
  if (st != AM_OK) {
    if (doc) std::abort();  // a failed read hands out nothing
    return 0;
  }
  char *text = nullptr;
  st = am_report_json(ctx, doc, &text);
  fuzz::expect_message(st);
  am_free(text);
  text = nullptr;
  st = am_report_summary(ctx, doc, &text);
  fuzz::expect_message(st);
  am_free(text);
  fuzz::expect_message(am_report_plot(ctx, doc, plots.c_str(), nullptr, nullptr));
  am_record_destroy(&doc);
  return 0;
}
