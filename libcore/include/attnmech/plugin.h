/* attnmech — what a plugin sees: its descriptor, its parameter table and the host it is given.
 * (The host side — loading plugins, looking them up, making hosts for instances — is registry.h.)
 *
 * A plugin is a shared module exporting one symbol, `am_plugin_entry`, a function that takes no
 * arguments and only returns the address of a static, read-only am_plugin_desc. The host calls it,
 * checks `abi_version` (exact match with AM_ABI_VERSION) and `struct_size` before it reads anything
 * else or calls any other plugin code. Plugins must have no static constructors, keep their state in
 * their instance, never in globals, and report errors through the host's context (never print/exit).
 * Descriptors only grow at the end; a host accepts a larger struct_size than it knows.
 * See docs/writing-a-plugin.md. */
#ifndef ATTNMECH_PLUGIN_H
#define ATTNMECH_PLUGIN_H

#include "version.h"
#include "record.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum am_plugin_kind { AM_PLUGIN_TASK = 1, AM_PLUGIN_ESTIMATOR = 2 } am_plugin_kind;

/* Data kinds, as a bit mask. A task makes one kind; an estimator accepts a mask.
 * AM_DATA_NONE: the estimator can run without a task (e.g. a replica curve). */
enum { AM_DATA_ATTENTION = 1u << 0, AM_DATA_SEQUENCE = 1u << 1, AM_DATA_NONE = 1u << 2 };

typedef enum am_param_type {
  AM_PARAM_INT = 1,        /* whole number; min/max apply */
  AM_PARAM_REAL = 2,       /* min/max apply */
  AM_PARAM_BOOL = 3,       /* 0/1/true/false/yes/no */
  AM_PARAM_STRING = 4,
  AM_PARAM_CHOICE = 5,     /* one of `choices` ("a|b|c") */
  AM_PARAM_INT_LIST = 6,   /* comma-separated; min/max apply to each */
  AM_PARAM_REAL_LIST = 7
} am_param_type;

typedef struct am_param_def {
  uint32_t struct_size;       /* sizeof(am_param_def); the host walks a table with the stride of params[0] */
  const char *name;
  am_param_type type;
  const char *default_value;  /* text as a user would type it; "" = unset (string/list) */
  const char *help;
  double min, max;            /* inclusive bounds for numbers; ignored when min > max */
  const char *choices;        /* AM_PARAM_CHOICE only */
} am_param_def;

/* One table row in C99 or C++: AM_PARAM("n", AM_PARAM_INT, "1000", "number of draws", 1, 1e9, NULL). */
#define AM_PARAM(name, type, default_value, help, min, max, choices) \
  { (uint32_t)sizeof(am_param_def), (name), (type), (default_value), (help), (min), (max), (choices) }

struct am_host;
/* A chunk of a parallel loop: items [begin, end) on worker `worker` (0-based). */
typedef void (*am_host_parallel_fn)(void *user, size_t begin, size_t end, int worker);

/* What the host gives an instance (kept alive until destroy). Validated parameters arrive as a record:
 * every key of the table is present; INT/REAL/BOOL as numbers, STRING/CHOICE as strings, lists as 1-D
 * f64 arrays. A task's params also hold `widths` (1-D f64) when the user gave the host key `widths` and the
 * task has no parameter of that name: a task that knows its depth before making data should refuse a list of
 * the wrong length in create (the host checks it again against the dataset after make_dataset). */
typedef struct am_host {
  uint32_t struct_size;
  am_context *ctx;            /* errors (am_context_fail), log, progress, cancel */
  const am_record *params;
  uint64_t seed;              /* the run's seed (host key `seed`) */
  uint64_t rng_stream;        /* am_rng_init(&rng, seed, rng_stream) gives this instance's own stream */
  int threads;                /* threads the instance may use (host key `threads`; 0 = all cores) */
  /* Host services; never NULL from an ABI-2 host. parallel_for runs fn over [0, n) on the host's threads
   * (contiguous chunks, one per worker, split by n and the thread count only); blas_threads_set sets
   * BLAS's process-global thread count and returns the previous one (n <= 0: query only). */
  am_status (*parallel_for)(const struct am_host *host, size_t n, am_host_parallel_fn fn, void *user);
  int (*blas_threads_set)(int n);
} am_host;

/* This instance's random stream: am_rng_init(out, host->seed, host->rng_stream). */
AM_API void am_host_rng(const am_host *host, am_rng *out);

/* A host for one plugin instance with this library's services (parallel_for on ctx's threads, BLAS thread
 * control): what the run API (libattnmech) gives plugins; for hosts and tests that create instances themselves.
 * am_host_init(&host, …) passes the caller's sizeof(am_host): the library writes at most that many bytes and
 * sets struct_size (a plugin reads a field appended later only when host->struct_size covers it). */
AM_API void am_host_fill(am_host *host, size_t size, am_context *ctx, const am_record *params, uint64_t seed,
                         uint64_t rng_stream, int threads);
#define am_host_init(host, ctx, params, seed, rng_stream, threads) \
  am_host_fill((host), sizeof *(host), (ctx), (params), (seed), (rng_stream), (threads))

typedef struct am_plugin_desc {
  uint32_t abi_version;       /* AM_ABI_VERSION — must stay the first field */
  uint32_t struct_size;       /* sizeof(am_plugin_desc) as the plugin was built */
  uint32_t kind;              /* am_plugin_kind */
  const char *name;           /* unique, [a-z0-9_-]+ */
  const char *version;
  const char *description;    /* one line */
  const am_param_def *params;
  uint32_t n_params;
  uint32_t data_kinds;        /* task: the kind it makes; estimator: mask of kinds accepted */
  const char *default_estimator;  /* task only (e.g. "theory") */
  /* Create an instance; the host keeps `host` alive until destroy. */
  am_status (*create)(const am_host *host, void **instance);
  void (*destroy)(void *instance);
  /* Task: fill `dataset` (dataset.h conventions); `extras` is written to results.json as "task_extras". */
  am_status (*make_dataset)(void *instance, am_record *dataset, am_record *extras);
  /* Estimator: one run on `dataset` (NULL when run without a task; the task's data, never changed after
   * make_dataset); fill `run` (an entry of "runs"). `inputs` (never NULL, may be empty) holds what the host sets
   * per run: "widths" (f64 list W_0..W_L replacing the dataset's: the width scan or the host key widths) and
   * "start" (the spec's starting state, am_run_spec_set_start). The host creates the instance once per run spec
   * and calls estimate once per width: keep caches of the dataset (e.g. ξ) in the instance, and draw random
   * numbers from a stream made afresh in each call (am_host_rng), so a width gives the same numbers alone or
   * inside a scan. Return AM_CANCELLED when stopped by the context. */
  am_status (*estimate)(void *instance, const am_record *dataset, const am_record *inputs, am_record *run);
  /* Optional: plots and summary lines (docs/abi.md "report spec") of a results document this plugin took part in; NULL = none. */
  am_status (*describe)(am_context *ctx, const am_record *results, am_record *report);
} am_plugin_desc;

typedef const am_plugin_desc *(*am_plugin_entry_fn)(void);
#define AM_PLUGIN_ENTRY_NAME "am_plugin_entry"

/* Marks the one exported function of a plugin, in C99 and in C++:
 *   AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &desc; } */
#ifdef __cplusplus
#define AM_PLUGIN_EXTERN_C extern "C"
#else
#define AM_PLUGIN_EXTERN_C
#endif
#if defined(_WIN32)
#define AM_PLUGIN_EXPORT AM_PLUGIN_EXTERN_C __declspec(dllexport)
#elif defined(__GNUC__)
#define AM_PLUGIN_EXPORT AM_PLUGIN_EXTERN_C __attribute__((visibility("default")))
#else
#define AM_PLUGIN_EXPORT AM_PLUGIN_EXTERN_C
#endif

#ifdef __cplusplus
}
#endif
#endif
