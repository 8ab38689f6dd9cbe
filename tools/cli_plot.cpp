// attnmech CLI — `attnmech plot DIR [DIR...] [--out DIR] [--plots LIST]`: re-draw the plots of results directories
// with the report library, from each document's `report`. A document written before plugins declared
// their plots (schema 1, no `report`) is described first by the plugins named in it (am_run_describe;
// the registry is loaded only then). Several DIRs: the line plots they share, overlaid into --out.
#include "cli.hpp"

#include <attnmech/report.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace am::cli {

namespace {

namespace fs = std::filesystem;

struct Doc {  // one results document, owned
  am_record *p = nullptr;
  Doc() = default;
  Doc(Doc &&o) noexcept : p(o.p) { o.p = nullptr; }
  Doc(const Doc &) = delete;
  ~Doc() { am_record_destroy(&p); }
};

// Reads every DIR/results.json; documents without `report` get one from their plugins (a warning when
// that fails: those documents then have no plots).
std::vector<Doc> read_docs(am_context *ctx, const std::vector<std::string> &dirs) {
  std::vector<Doc> docs(dirs.size());
  std::unique_ptr<Host> host;
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (am_report_read(ctx, dirs[i].c_str(), &docs[i].p) != AM_OK) throw RuntimeError(am_context_last_error(ctx));
    if (am_record_get(docs[i].p, "report")) continue;
    if (!host) {
      host = std::make_unique<Host>();
      host->open();
      host->load({});
    }
    if (am_run_describe(host->ctx, host->reg, docs[i].p) != AM_OK)
      std::fprintf(stderr, "attnmech: warning: %s: cannot describe its plots: %s\n", dirs[i].c_str(),
                   am_context_last_error(host->ctx));
  }
  return docs;
}

// The legend label of a compared document: its directory name and estimator.
std::string label_of(const std::string &dir, const am_record *doc) {
  std::string base = fs::path(dir).lexically_normal().filename().string();
  if (base.empty() || base == ".") base = dir;
  const char *e = nullptr;
  return base + (am_record_get_string(doc, "estimator", &e) == AM_OK ? " (" + std::string(e) + ")" : "");
}

// The page options as report.style of every document (in memory only: results.json is not rewritten).
void set_page_style(const std::vector<Doc> &docs, const PageOptions &page) {
  const auto fields = page_style(page);
  if (fields.empty()) return;
  for (const Doc &d : docs) {
    am_record *style = am_record_object(am_record_object(d.p, "report"), "style");
    if (!style) throw RuntimeError("cannot set the page style (report is not an object)");
    for (const auto &kv : fields) am_record_set_number(style, kv.first.c_str(), kv.second);
  }
}

// --style NAME, --font-size PT, --size WxH (the rows `figure` has in the option table): true when consumed.
bool take_page_option(Args &a, PageOptions *page) {
  static const std::pair<const char *, Opt> kPageOptions[] = {
      {"--style", Opt::Style}, {"--font-size", Opt::FontSize}, {"--size", Opt::Size}};
  std::string val;
  for (const auto &o : kPageOptions)
    if (a.take(o.first, &val)) {
      const std::string why = page_option(o.second, val, page);
      if (!why.empty()) throw UsageError(why, "plot");
      return true;
    }
  return false;
}

void collect(void *user, const char *name) { static_cast<std::vector<std::string> *>(user)->push_back(name); }

// Draws into `target` in `formats` (AM_REPORT_FORMAT_* bits, 0: the default); returns the files written.
std::vector<std::string> draw(am_context *ctx, const std::vector<std::string> &dirs, const std::vector<Doc> &docs,
                              const std::string &target, uint32_t formats) {
  std::vector<std::string> files;
  am_report_plot_options po;
  am_report_plot_default_options(&po);
  po.formats = formats, po.on_file = collect, po.user = &files;
  am_status st;
  if (docs.size() == 1) {
    st = am_report_plot_with_options(ctx, docs[0].p, target.c_str(), &po);
  } else {
    std::vector<std::string> labels;
    std::vector<const char *> label_ptrs;
    std::vector<const am_record *> doc_ptrs;
    for (size_t i = 0; i < docs.size(); ++i) labels.push_back(label_of(dirs[i], docs[i].p));
    for (size_t i = 0; i < docs.size(); ++i) {
      label_ptrs.push_back(labels[i].c_str());
      doc_ptrs.push_back(docs[i].p);
    }
    st = am_report_compare_with_options(ctx, doc_ptrs.data(), label_ptrs.data(), docs.size(), target.c_str(), &po);
  }
  if (st != AM_OK) throw RuntimeError(am_context_last_error(ctx));
  return files;
}

}  // namespace

int cmd_plot(Args &a) {
  std::vector<std::string> dirs;
  std::string out, val;
  PageOptions page;
  uint32_t formats = AM_REPORT_FORMATS_DEFAULT;
  while (!a.done()) {
    if (a.take("--out", &val) || a.take("-o", &val)) {
      out = val;
      continue;
    }
    if (a.take("--plots", &val)) {
      formats = plots_option(val, "plot");
      continue;
    }
    if (take_page_option(a, &page)) continue;
    if (a.is_option()) a.reject();
    dirs.push_back(a.v[a.i++]);
  }
  if (dirs.empty()) throw UsageError("missing DIR (a directory holding results.json)", "plot");
  if (dirs.size() > 1 && out.empty()) throw UsageError("comparing several DIRs needs --out DIR for the plots", "plot");
  am_context *ctx = nullptr;
  if (am_context_create(&ctx, nullptr) != AM_OK) throw RuntimeError("cannot create the library context");
  std::unique_ptr<am_context, void (*)(am_context *)> owner(ctx, [](am_context *c) { am_context_destroy(&c); });
  const std::vector<Doc> docs = read_docs(ctx, dirs);
  set_page_style(docs, page);
  const std::string target = out.empty() ? dirs[0] : out;
  if (!out.empty()) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw RuntimeError("cannot create directory " + out + ": " + ec.message());
  }
  const std::vector<std::string> files = draw(ctx, dirs, docs, target, formats);
  for (const auto &f : files) std::printf("%s/%s\n", target.c_str(), f.c_str());
  note_plot_formats(files.size());
  if (files.empty())
    std::printf("no plots apply to %s\n", docs.size() == 1 ? (dirs[0] + "/results.json").c_str() : "these results");
  return EXIT_OK;
}

}  // namespace am::cli
