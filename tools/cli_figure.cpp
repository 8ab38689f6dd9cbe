// attnmech CLI — `attnmech figure NAME --out D` (docs/figures.md): run every sweep of a figure spec into D/<id>/
// with the sweep command's machinery (resumable, threads or MPI), then draw D/<name>.svg, D/figure.json and
// D/caption.md (tools/figure). `--list` the shipped figures, `--plot-only D` redraws, `--check` validates.
#include "cli.hpp"
#include "figure/figure.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>

namespace am::cli {

// The --help of `figure` around what the option table gives (its first usage line and the options section).
const char *const kFigureForms =
    "       attnmech figure NAME --plot-only DIR [--set key=value]...\n"
    "       attnmech figure NAME --check [--set key=value]...\n"
    "       attnmech figure --list\n"
    "       mpirun -np K attnmech figure NAME --out DIR          (each sweep as an MPI task farm)\n";
const char *const kFigureAbout =
    "Run one figure of the papers: every sweep of the figure spec NAME (a shipped figure: see --list; or a\n"
    "path to a .json spec; docs/figures.md) into DIR/<sweep id>/ as `attnmech sweep` would (re-running\n"
    "resumes: complete points are kept), then draw DIR/NAME.svg (DIR/NAME-<panel>.svg when the figure has\n"
    "several panels), DIR/figure.json (the plotted numbers) and DIR/caption.md (what the paper shows, what we\n"
    "computed, the key numbers, the command). Shipped figures: <prefix>/share/attnmech/figures/\n"
    "(examples/figures in the source tree).\n";
const char *const kFigureAfter =
    "\n"
    "exit codes: 0 drawn, 1 a point failed or a panel had no data, 2 usage error (spec, options),\n"
    "128+n stopped by signal n (completed points kept)\n";

namespace {

namespace fs = std::filesystem;

struct FigureOptions {
  std::string name, out, plot_only;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<std::string> plugins;
  int jobs = 0;
  bool list = false, check = false, recompute = false, quiet = false;
  PageOptions page;
  uint32_t plot_formats = 0;  // --plots (0: the report library's default)
};

FigureOptions parse_figure_args(Args &a) {
  FigureOptions o;
  Opt id;
  std::string val;
  while (!a.done()) {
    if (!a.option(CMD_FIGURE, &id, &val)) {
      if (!o.name.empty() || a.is_option()) a.reject(" (NAME is already '" + o.name + "')");
      o.name = a.v[a.i++];
      continue;
    }
    switch (id) {
      case Opt::Out: o.out = val; break;
      case Opt::Set: a.add_set(val, &o.sets); break;
      case Opt::Jobs: o.jobs = a.jobs(val); break;
      case Opt::PlotOnly: o.plot_only = val; break;
      case Opt::Plugin: o.plugins.push_back(val); break;
      case Opt::List: o.list = true; break;
      case Opt::Check: o.check = true; break;
      case Opt::Recompute: o.recompute = true; break;
      case Opt::Quiet: o.quiet = true; break;
      case Opt::Plots: o.plot_formats = plots_option(val, "figure"); break;
      case Opt::Style:
      case Opt::FontSize:
      case Opt::Size: {
        const std::string why = page_option(id, val, &o.page);
        if (!why.empty()) throw UsageError(why, "figure");
        break;
      }
      default: throw RuntimeError("no handler for an option of `figure`");  // the table and this switch disagree
    }
  }
  if (o.list) return o;
  if (o.name.empty()) throw UsageError("missing NAME (a figure: see 'attnmech figure --list', or a .json spec)", "figure");
  if (!o.plot_only.empty() && !o.out.empty() && o.out != o.plot_only)
    throw UsageError("--plot-only DIR takes no other --out", "figure");
  if (o.out.empty() && o.plot_only.empty() && !o.check) throw UsageError("missing --out DIR", "figure");
  return o;
}

// Where the shipped figure specs are: <dir of attnmech>/<rel> (an install or the wheel), then the source tree.
std::vector<std::string> figure_dirs() {
  std::vector<std::string> dirs;
  std::vector<char> buf(PATH_MAX + 1, 0);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), PATH_MAX);
  if (n > 0) dirs.push_back(fs::path(std::string(buf.data(), static_cast<size_t>(n))).parent_path() / AM_FIGURES_REL_DIR);
  dirs.push_back(AM_FIGURES_SOURCE_DIR);
  return dirs;
}

std::string resolve_figure(const std::string &name) {
  std::error_code ec;
  // A path, or anything of that name here: the reader says what it is when it is not a file (a directory, a FIFO).
  if (fs::exists(name, ec) || name.find('/') != std::string::npos) return name;
  for (const auto &d : figure_dirs())
    for (const std::string &file : {name, name + ".json"})
      if (fs::is_regular_file(d + "/" + file, ec)) return d + "/" + file;
  throw UsageError("no figure '" + name + "' (not a file, not a shipped figure: see 'attnmech figure --list')", "figure");
}

int list_figures() {
  std::error_code ec;
  for (const auto &d : figure_dirs()) {
    if (!fs::is_directory(d, ec)) continue;
    std::vector<std::string> files;
    for (const auto &e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    std::printf("%-22s %-9s %-44s %s\n", "NAME", "RUN TIME", "PAPER", "TITLE");
    for (const auto &f : files) {
      const auto l = am::figure::list_entry(f);
      std::printf("%-22s %-9s %-44s %s\n", l.name.c_str(), l.runtime.c_str(), l.paper_ref.c_str(), l.title.c_str());
    }
    std::printf("(%zu figures in %s; run one: attnmech figure NAME --out DIR)\n", files.size(), d.c_str());
    return EXIT_OK;
  }
  throw RuntimeError("no figure specs found (searched " + figure_dirs()[0] + " and " + figure_dirs()[1] + ")");
}

// Every point of every sweep validated against the plugins (nothing computed): a sweep with no valid point is a
// usage error naming the sweep and the first reason.
void validate_points(Host &h, const am::figure::Figure &f, bool say) {
  for (const auto &s : f.sweeps) {
    std::string first;
    size_t bad = 0;
    const auto pts = am::sweep::expand(s.spec);
    for (const auto &p : pts) {
      am_run_spec *rs = nullptr;
      if (am_run_spec_create(&rs) != AM_OK) throw RuntimeError("out of memory");
      am_run_spec_set_task(rs, s.spec.task.c_str());
      am_run_spec_set_estimator(rs, s.spec.estimator.c_str());
      for (const auto &kv : p.settings)
        if (kv.first != "width") am_run_spec_set(rs, kv.first.c_str(), kv.second.c_str());
      const am_status st = am_run_validate(h.ctx, h.reg, rs);
      am_run_spec_destroy(&rs);
      if (st != AM_OK && ++bad == 1) first = h.error(st);
    }
    if (bad == pts.size()) throw UsageError("sweep \"" + s.id + "\": no point is valid; the first says: " + first, "figure");
    if (bad && say) std::fprintf(stderr, "attnmech figure: sweep \"%s\": %zu of %zu points are not valid: %s\n", s.id.c_str(), bad,
                          pts.size(), first.c_str());
  }
}

am::figure::Figure load(const FigureOptions &o) {
  try {
    am::figure::Figure f = am::figure::read_figure(resolve_figure(o.name), o.sets);
    f.style = page_style(o.page);
    f.plot_formats = o.plot_formats;
    am::figure::check_file_names(f);
    if (!o.plot_only.empty()) {  // draw what was run: each sweep's spec.json (with the --set of that run)
      for (auto &s : f.sweeps) {
        const std::string path = o.plot_only + "/" + s.id + "/spec.json";
        std::error_code ec;
        if (fs::is_regular_file(path, ec)) s.spec = am::sweep::read_spec_file(path, {});
      }
      am::figure::check_plots(f);
    }
    return f;
  } catch (const am::figure::SpecError &e) {
    throw UsageError(e.what(), "figure");
  } catch (const am::sweep::SpecError &e) {
    throw UsageError(e.what(), "figure");
  }
}

std::string command_line(const am::figure::Figure &f, const std::string &out) {
  std::string c = "attnmech figure " + f.name + " --out " + out;
  for (const auto &kv : f.sets) c += " --set " + kv.first + "=" + kv.second;
  return c;
}

int draw_figure(Host &h, const am::figure::Figure &f, const std::string &dir, bool quiet) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  am::figure::DrawStats st;
  try {
    st = am::figure::draw(h.ctx, f, dir, command_line(f, dir));
  } catch (const am::figure::SpecError &e) {
    throw UsageError(e.what(), "figure");
  } catch (const am::sweep::SweepError &e) {
    throw RuntimeError(e.what());
  }
  for (const auto &w : st.warnings) std::fprintf(stderr, "attnmech figure: no data: %s\n", w.c_str());
  for (const auto &m : st.incomplete)  // --plot-only of a figure still running draws what is there, and says so
    std::fprintf(stderr, "attnmech figure: %s are not drawn (not computed, failed or corrupt)\n", m.c_str());
  for (const auto &b : st.bad_points)  // after a run the sweep has computed them again; --plot-only runs nothing
    std::fprintf(stderr, "attnmech figure: error: a corrupt point, not drawn: %s (`attnmech figure %s --out %s` "
                 "computes it again)\n", b.c_str(), f.name.c_str(), dir.c_str());
  if (!quiet) {
    std::printf("figure %s: %zu series in %zu file(s):", f.name.c_str(), st.series, st.files.size());
    for (const auto &file : st.files) std::printf(" %s/%s", dir.c_str(), file.c_str());
    std::printf("\n  + %s/figure.json, %s/caption.md\n", dir.c_str(), dir.c_str());
  }
  note_plot_formats(st.files.size());
  if (st.empty_panels) std::fprintf(stderr, "attnmech figure: %zu panel(s) had nothing to draw\n", st.empty_panels);
  return st.empty_panels || !st.bad_points.empty() ? EXIT_RUNTIME : EXIT_OK;
}

int run_figure(const FigureOptions &o, const am::figure::Figure &f, bool mpi, int rank, int size) {
  {  // every sweep checked before any runs: a bad second sweep must not wait for the first one's hours
    Host h;
    h.sinks.quiet = true;
    h.open();
    h.load(o.plugins, true);
    validate_points(h, f, rank == 0 && !o.quiet);
  }
  if (rank == 0) prepare_out_dir("--out " + o.out, o.out);  // before the first sweep's compute
  int code = EXIT_OK;
  for (const auto &s : f.sweeps) {
    if (rank == 0 && !o.quiet) std::fprintf(stderr, "figure %s: sweep \"%s\" → %s/%s\n", f.name.c_str(), s.id.c_str(), o.out.c_str(), s.id.c_str());
    SweepJob job;
    job.out = o.out + "/" + s.id;
    job.plugins = o.plugins;
    job.jobs = o.jobs;
    job.quiet = o.quiet;
    job.recompute = o.recompute;
    job.plot_formats = o.plot_formats;
    int c;
    try {
      c = sweep_parsed(s.spec, job, mpi, rank, size);
    } catch (const UsageError &e) {
      throw UsageError("sweep \"" + s.id + "\": " + e.what(), "figure");
    }
    if (c >= 128) return c;  // stopped by a signal: completed points are kept
    code = std::max(code, c);
  }
  if (rank != 0) return EXIT_OK;
  Host h;
  h.sinks.quiet = o.quiet;
  h.open();
  return std::max(code, draw_figure(h, f, o.out, o.quiet));
}

}  // namespace

int cmd_figure(Args &a) {
  const FigureOptions o = parse_figure_args(a);
  if (o.list) return list_figures();
  std::error_code ec;  // --plot-only draws from what is there: a missing directory is not made
  if (!o.plot_only.empty() && !fs::is_directory(o.plot_only, ec))
    throw RuntimeError("--plot-only " + o.plot_only + ": no such directory (nothing was drawn)");
  const am::figure::Figure f = load(o);
  if (!o.plot_only.empty()) {
    Host h;
    h.sinks.quiet = o.quiet;
    h.open();
    return draw_figure(h, f, o.plot_only, o.quiet);
  }
  if (o.check) {
    Host h;
    h.sinks.quiet = o.quiet;
    h.open();
    h.load(o.plugins, true);
    validate_points(h, f, true);
    size_t n = 0;
    for (const auto &s : f.sweeps) n += am::sweep::expand(s.spec).size();
    std::printf("figure %s: %zu sweep(s), %zu points, %zu panel(s): valid\n", f.name.c_str(), f.sweeps.size(), n,
                f.panels.size());
    return EXIT_OK;
  }
  int rank = 0, size = 1;
  if (!am::sweep::mpi_start(nullptr, nullptr, &rank, &size)) return run_figure(o, f, false, 0, 1);
  int code = EXIT_OK;  // under MPI an error on one rank ends them all (as `sweep` does)
  try {
    code = run_figure(o, f, true, rank, size);
  } catch (const UsageError &e) {
    if (rank == 0) std::fprintf(stderr, "attnmech: usage error: %s\n(see 'attnmech figure --help')\n", e.what());
    code = -EXIT_USAGE;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "attnmech: error (rank %d): %s\n", rank, e.what());
    code = -EXIT_RUNTIME;
  }
  if (code < 0) am::sweep::mpi_abort(-code);
  am::sweep::mpi_stop();
  return code;
}

}  // namespace am::cli
