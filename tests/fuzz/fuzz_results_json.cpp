// Fuzz harness "results_json": the fuzzer's bytes are a results.json, read by am_report_read
// (tools/report/api.cpp, json.cpp) as `attnmech plot DIR` reads it. A document that reads is then used as
// `plot` uses it: written back as results.json text (am_report_json), summarised (am_report_summary,
// summary.cpp) and drawn (am_report_plot: resolve.cpp, draw.cpp, svg.cpp) into a private directory.
#include "fuzz_util.hpp"

#include <attnmech/report.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  static const std::string plots = [] {
    const auto d = fuzz::temp_dir() / "plots";
    std::filesystem::create_directories(d);
    return d.string();
  }();
  am_context *ctx = fuzz::context();
  am_record *doc = nullptr;
  am_status st = am_report_read(ctx, file.set(data, size).c_str(), &doc);
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
