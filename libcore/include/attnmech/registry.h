/* attnmech — the host side of plugins: the registry that finds and loads them, what it can tell about them,
 * hosts for instances, and parameter parsing. A plugin author needs only plugin.h; a host (the CLI, the run API,
 * an embedding program) uses this header.
 *
 *   am_registry *r;  am_registry_create(&r);
 *   am_registry_discover(ctx, r, exe_dir);                 // AM_PLUGIN_PATH → build tree → install dir
 *   am_registry_summary s = {sizeof s};  am_registry_info(r, &s);
 *   for (size_t i = 0; i < s.plugins; ++i) { am_plugin_info p = {sizeof p}; am_registry_plugin_info(r, i, &p); … }
 *
 * The info structs are growable outputs (docs/abi.md): the caller sets struct_size; the library writes at most
 * that many bytes and leaves struct_size = the bytes it wrote. Strings they hold live as long as the registry
 * (install_dir: as long as the library). */
#ifndef ATTNMECH_REGISTRY_H
#define ATTNMECH_REGISTRY_H

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct am_registry am_registry;

AM_API am_status am_registry_create(am_registry **out);
/* Plugins are never unloaded; destroying the registry forgets them. */
AM_API void am_registry_destroy(am_registry **r);
/* Load one module file. Failures are added to the load report and returned. */
AM_API am_status am_registry_load_file(am_context *ctx, am_registry *r, const char *path);
/* Load every module in `dir` and one level below it (files ending in the platform's module suffix). */
AM_API am_status am_registry_scan_dir(am_context *ctx, am_registry *r, const char *dir);
/* The standard discovery order: AM_PLUGIN_PATH (colon-separated dirs), then
 * <exe_dir>/../plugins (build tree), then the install dir. exe_dir may be NULL.
 * Plugins of the build tree and the install dir are built-in: a module found earlier (AM_PLUGIN_PATH, a file
 * loaded with am_registry_load_file) under a built-in's name is not used, and the load report says so, unless
 * shadowing is allowed (am_registry_allow_shadowing, or AM_PLUGIN_SHADOW=1 in the environment of discover). */
AM_API am_status am_registry_discover(am_context *ctx, am_registry *r, const char *exe_dir);
/* allow != 0: a third-party module may shadow a built-in plugin of the same name (the report still notes it). */
AM_API void am_registry_allow_shadowing(am_registry *r, int allow);
AM_API const am_plugin_desc *am_registry_find(const am_registry *r, const char *name, uint32_t kind /* 0 = any */);

/* What the registry holds. Added in 3.0 (it replaces ABI 2's count/at getters). */
typedef struct am_registry_summary {
  uint32_t struct_size;     /* sizeof(am_registry_summary), set by the caller */
  size_t plugins;           /* plugins loaded: am_registry_plugin_info(r, 0 … plugins-1) */
  size_t search_dirs;       /* directories discover/scan_dir looked in: am_registry_search_dir_info */
  size_t report_lines;      /* load-report lines: am_registry_report_line */
  /* The install dir, found relative to the loaded library itself (not a configure-time path, so a moved prefix
   * keeps working): <dir of libattnmech.so>/attnmech-plugins-<ABI>; "" when the library cannot tell where it was
   * loaded from (e.g. linked statically). */
  const char *install_dir;
} am_registry_summary;
/* r may be NULL (counts 0; install_dir still given). AM_ERR_INVALID_ARGUMENT when out is NULL or its struct_size
 * does not reach past struct_size. */
AM_API am_status am_registry_info(const am_registry *r, am_registry_summary *out);

/* Plugin i (0-based, in load order). Added in 3.0. */
typedef struct am_plugin_info {
  uint32_t struct_size;     /* sizeof(am_plugin_info), set by the caller */
  const am_plugin_desc *desc;
  const char *path;         /* the module file it was loaded from (resolved) */
} am_plugin_info;
/* AM_ERR_INVALID_ARGUMENT when i is out of range (out is then zeroed past struct_size) or an argument is NULL. */
AM_API am_status am_registry_plugin_info(const am_registry *r, size_t i, am_plugin_info *out);

/* Directory i that discover/scan_dir looked in, in order, each once (also those that do not exist), so a host can
 * say where it looked. Added in 3.0. */
typedef struct am_search_dir_info {
  uint32_t struct_size;     /* sizeof(am_search_dir_info), set by the caller */
  const char *path;
  const char *source;       /* "AM_PLUGIN_PATH", "build tree", "install dir" or "scan" (an am_registry_scan_dir call) */
  size_t plugins;           /* modules loaded from it (0: missing or none usable) */
} am_search_dir_info;
/* AM_ERR_INVALID_ARGUMENT when i is out of range or an argument is NULL. */
AM_API am_status am_registry_search_dir_info(const am_registry *r, size_t i, am_search_dir_info *out);

/* Load report line i: "<path>: <reason>", one per failure; NULL when i is out of range. */
AM_API const char *am_registry_report_line(const am_registry *r, size_t i);

/* Row i of a descriptor's parameter table (walks the table with the stride of its rows; NULL if out of range). */
AM_API const am_param_def *am_plugin_param(const am_plugin_desc *d, uint32_t i);

/* Parse user settings ("key" → "text") against a plugin's table into a params record (defaults
 * filled in). Unknown keys are left for the caller: `consumed[i]` is set to 1 for each key used.
 * A bad value is AM_ERR_USAGE with a message naming the key and the allowed range. */
AM_API am_status am_params_parse(am_context *ctx, const am_plugin_desc *d, size_t n, const char *const *keys,
                                 const char *const *values, int *consumed, am_record *params);

#ifdef __cplusplus
}
#endif
#endif
