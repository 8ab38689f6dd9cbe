/* attnmech-report — the companion library that writes, reads and draws results documents.
 *
 * A results document is an am_record (record.h) as a run builds it: attnmech_version, task, estimator,
 * seed, params, task_extras, runs [...], status, ... and `report` — the plots and summary blocks the
 * plugins declared (docs/abi.md "report spec"). This library knows no plugin and no result layout: it
 * draws any document from its `report` alone (lines, heat maps, bars, scatter) and formats the summary
 * from its `summary` blocks. (Problem directories, a task's input, are libattnmech's: problem.h.)
 *
 * Conventions (docs/abi.md): every call returns am_status (AM_OK = 0, negative = error) and leaves a
 * message on `ctx` (may be NULL); nothing is printed; strings handed out are freed with am_free();
 * growable structs start with uint32_t struct_size. Link with `pkg-config attnmech-report`. */
#ifndef ATTNMECH_REPORT_H
#define ATTNMECH_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <attnmech/record.h>

#if defined(AM_REPORT_BUILDING) && defined(__GNUC__)
#define AM_REPORT_API __attribute__((visibility("default")))
#else
#define AM_REPORT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Frozen at 1: since 3.5 the report library has attnmech's version (version.h: AM_VERSION_*, the same soname
 * number), and a function added to it is marked "Added in 3.y" like libattnmech's (docs/abi.md). */
#define AM_REPORT_VERSION 1

/* Called once per file written, with its name relative to the target directory ("results.json",
 * "runs.0.test.mean.npy", "U1_N10.svg"). `name` is valid only during the call. */
typedef void (*am_report_file_fn)(void *user, const char *name);

/* ---------------------------------------------------------------- results.json */

/* The results.json text of `doc` (docs/results-schema.md; npy_only arrays as references): objects keep key order, one key a line
 * (indent 1); numeric lists on one line and matrices one row a line; arrays as nested lists in
 * row-major order of their shape whatever their memory order; whole numbers below 2^53 as integers,
 * other numbers with 17 significant digits, NaN and ±Inf as null; integer arrays stay integers.
 * *text receives a NUL-terminated string the caller frees with am_free(). */
AM_REPORT_API am_status am_report_json(am_context *ctx, const am_record *doc, char **text);

/* Reads `path` (a results directory holding results.json, or the .json file itself) into a new record
 * *doc (caller destroys it with am_record_destroy). JSON numbers, strings, booleans, null, objects and
 * lists come back as such, except that a rectangular nested list of numbers (and nulls = NaN) comes back
 * as an f64 array of its shape (so "runs.0.U.0" is a [H, H] array as it was in the run); a list of
 * matrices of different shapes stays a list of arrays. A reference {"npy_file", "shape", "dtype"} (an array the
 * report kept out of results.json, `npy_only`; added in 3.1) comes back as the array of that .npy file of the
 * directory; a name outside the safe-name rule, a symlink or a dtype/shape mismatch is AM_ERR_FORMAT, a missing
 * file AM_ERR_IO. AM_ERR_IO: no such file; AM_ERR_FORMAT: not JSON. */
AM_REPORT_API am_status am_report_read(am_context *ctx, const char *path, am_record **doc);

/* ---------------------------------------------------------------- plot formats (added in 3.7) */

/* The files a plot becomes, as bits of a `formats` setting: <file>.svg, <file>.pdf (one page, 1 px = 1 pt),
 * <file>.png (the SVG's size x 2 pixels). PDF and PNG need a build with cairo (am_report_formats_available). */
#define AM_REPORT_FORMAT_SVG 1u
#define AM_REPORT_FORMAT_PDF 2u
#define AM_REPORT_FORMAT_PNG 4u
#define AM_REPORT_FORMAT_ALL 7u
/* `formats` 0: the default, SVG only. The environment variable AM_PLOT_FORMATS of 3.6 and earlier still applies
 * to it (and only to it): "svg" = SVG only, "all" = SVG, PDF and PNG (SVG only in a build without cairo). Before
 * 3.7 the default was SVG, PDF and PNG in a build with cairo: PNG encoding cost more CPU than a small run. */
#define AM_REPORT_FORMATS_DEFAULT 0u

/* The formats this build can write: AM_REPORT_FORMAT_SVG, with cairo | PDF | PNG. Added in 3.7. */
AM_REPORT_API uint32_t am_report_formats_available(void);

/* Parses a list of plot formats, comma-separated names among "svg", "pdf", "png" and "all" (every one; spaces
 * around names allowed; e.g. "svg,pdf"), into *formats (AM_REPORT_FORMAT_* bits). AM_ERR_USAGE with a message
 * naming the valid names for an empty list, an empty or unknown name, or a format this build cannot write (PDF
 * and PNG without cairo). Added in 3.7. */
AM_REPORT_API am_status am_report_parse_formats(am_context *ctx, const char *list, uint32_t *formats);

/* ---------------------------------------------------------------- writing a results directory */

typedef struct am_report_write_options {
  uint32_t struct_size;        /* sizeof(am_report_write_options); smaller than this first version: AM_ERR_INVALID_ARGUMENT */
  int plots;                   /* draw doc.report.plots (default 1), as `formats` says */
  size_t npy_min_elements;     /* arrays with at least this many elements become .npy files only (default 16) */
  am_report_file_fn on_file;   /* told every file written (default NULL) */
  void *user;                  /* passed to on_file */
  /* Added in 3.7: the files of each plot, AM_REPORT_FORMAT_* bits (default AM_REPORT_FORMATS_DEFAULT: SVG only,
   * or AM_PLOT_FORMATS); a format this build cannot write is AM_ERR_USAGE before anything is written. */
  uint32_t formats;
} am_report_write_options;

#define AM_REPORT_WRITE_OPTIONS_INIT {sizeof(am_report_write_options), 1, 16, NULL, NULL, AM_REPORT_FORMATS_DEFAULT}

/* Fills *opt with the defaults (plots 1, npy_min_elements 16, formats AM_REPORT_FORMATS_DEFAULT), writing no more
 * than the caller's sizeof and setting struct_size to it (the rule of docs/abi.md: a program built against an
 * older, smaller struct is never written past its end). */
AM_REPORT_API void am_report_write_options_init(am_report_write_options *opt, size_t size);
#define am_report_write_default_options(opt) am_report_write_options_init((opt), sizeof *(opt))

/* Checks that `dir` can become a results directory before anything is computed: `dir` is absent, or an
 * empty directory, or a directory holding results.json (a previous run, which a write replaces
 * whole); its nearest existing ancestor is a writable directory. AM_ERR_IO with the reason otherwise. Since 3.5
 * it checks am_report_check_settings first. */
AM_REPORT_API am_status am_report_check_dir(am_context *ctx, const char *dir);

/* Checks the report library's settings from the environment before anything is computed: AM_PLOT_FORMATS is
 * unset, "all" (SVG, PDF and PNG in a build with cairo) or "svg" (SVG only); it applies to a `formats` setting of
 * AM_REPORT_FORMATS_DEFAULT only. AM_ERR_USAGE naming the variable and its values otherwise (a write would refuse
 * to draw). Added in 3.5. */
AM_REPORT_API am_status am_report_check_settings(am_context *ctx);

/* Writes `doc` as the results directory `dir`, atomically: every array of >= npy_min_elements elements as
 * <dotted.path>.npy (object keys and list indices joined with dots from the document root: runs.0.test.mean.npy,
 * runs.0.U.0.npy, task_extras.X.npy; the .npy keeps the array's dtype, shape and memory order), results.json
 * (the text of am_report_json, except that since 3.3 each of those arrays is only a reference {"npy_file",
 * "shape", "dtype"} to its .npy; written as the record is walked, never whole in memory) and, with opt.plots,
 * the plots of doc.report.plots (SVG; since 3.7 the files opt.formats asks for). Added in 3.1:
 * arrays under doc.report.npy_only are .npy files only (whatever their size; results.json holds references to
 * them) and doc.report.files are written as text files (docs/abi.md "report spec").
 * Everything goes into a fresh sibling `<dir>.tmp-XXXXXX` (missing parents are created), each file and
 * the directory are fsync'ed, then the new directory replaces `dir` by rename (the old one, if any, is
 * moved aside to `<dir>.old-XXXXXX` and removed): a reader sees the old complete run or the new complete
 * one, and no file of an older run remains. On failure `dir` is left as it was and the temporary
 * directory is removed. The checks of am_report_check_dir run first. `opt` may be NULL (defaults); a
 * smaller struct_size (an older caller) takes the defaults for the fields it lacks. Since 3.5 plots that cannot
 * be drawn do not discard the results: the directory goes in place without them (with the plots drawn before
 * the failure), opt.on_file is told its files, and the status is the plots' error ("the results are written to
 * <dir>, but not all of their plots: ..."). */
AM_REPORT_API am_status am_report_write(am_context *ctx, const am_record *doc, const char *dir,
                                        const am_report_write_options *opt);

/* ---------------------------------------------------------------- plots and summary */

/* Draws every plot of doc.report.plots into the existing directory `dir` as <file>.svg (in place, not
 * atomic; files of the same names are overwritten). Plots whose data paths do not resolve are skipped;
 * a file that cannot be written is AM_ERR_IO. A document without `report` draws nothing (AM_OK). The formats
 * are the default's (AM_REPORT_FORMATS_DEFAULT); am_report_plot_with_options chooses them. */
AM_REPORT_API am_status am_report_plot(am_context *ctx, const am_record *doc, const char *dir,
                                       am_report_file_fn on_file, void *user);

/* Added in 3.7: how am_report_plot_with_options and am_report_compare_with_options draw. */
typedef struct am_report_plot_options {
  uint32_t struct_size;       /* sizeof(am_report_plot_options) */
  uint32_t formats;           /* AM_REPORT_FORMAT_* bits (default AM_REPORT_FORMATS_DEFAULT: SVG only, or AM_PLOT_FORMATS) */
  am_report_file_fn on_file;  /* told every file written (default NULL) */
  void *user;                 /* passed to on_file */
} am_report_plot_options;

/* Fills *opt with the defaults, writing no more than `size` bytes (struct_size set to it). Added in 3.7. */
AM_REPORT_API void am_report_plot_options_init(am_report_plot_options *opt, size_t size);
#define am_report_plot_default_options(opt) am_report_plot_options_init((opt), sizeof *(opt))

/* am_report_plot with options (NULL: the defaults): each plot as the files opt->formats asks for; a format this
 * build cannot write is AM_ERR_USAGE before anything is drawn. Added in 3.7. */
AM_REPORT_API am_status am_report_plot_with_options(am_context *ctx, const am_record *doc, const char *dir,
                                                    const am_report_plot_options *opt);

/* The human summary of `doc`: a generic header (task, estimator, seed, status and each run's status),
 * then every block of doc.report.summary (tables, values, matrices, text), blocks separated by a blank
 * line. *text is freed with am_free(). */
AM_REPORT_API am_status am_report_summary(am_context *ctx, const am_record *doc, char **text);

/* Overlays several documents (`labels[i]` names docs[i]) into `dir` (must exist): for every plot file of
 * kind "lines" that at least two documents declare, compare_<file>.svg holds the series (and reference
 * lines) of each of them, their labels prefixed with "<label>: ". */
AM_REPORT_API am_status am_report_compare(am_context *ctx, const am_record *const *docs, const char *const *labels,
                                          size_t n, const char *dir, am_report_file_fn on_file, void *user);

/* am_report_compare with options (NULL: the defaults), as am_report_plot_with_options. Added in 3.7. */
AM_REPORT_API am_status am_report_compare_with_options(am_context *ctx, const am_record *const *docs,
                                                       const char *const *labels, size_t n, const char *dir,
                                                       const am_report_plot_options *opt);

#ifdef __cplusplus
}
#endif
#endif
