/* attnmech — the context: where a call's error message, log lines and progress go.
 *
 * The library never prints and never exits. Every compute call takes an `am_context *` (NULL is
 * allowed: the call then only returns its status). On failure the context keeps a message naming
 * the problem, readable with am_context_last_error() until the next failing call on it.
 * A context is not thread-safe: use one per thread (am_context_cancel is the exception). */
#ifndef ATTNMECH_CONTEXT_H
#define ATTNMECH_CONTEXT_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum am_log_level { AM_LOG_DEBUG = 0, AM_LOG_INFO = 1, AM_LOG_WARN = 2, AM_LOG_ERROR = 3 } am_log_level;

/* Log sink. `message` is valid only during the call. */
typedef void (*am_log_fn)(void *user_data, am_log_level level, const char *message);
/* Progress sink: `done` of `total` units of the work named `label`; total <= 0: a count with no known total (an
 * open-ended loop, e.g. solver iterations; see am_context_convergence). Return nonzero to cancel (the running call
 * then stops at its next check and returns AM_CANCELLED). */
typedef int (*am_progress_fn)(void *user_data, double done, double total, const char *label);
/* Convergence sink (Added in 3.5): an open-ended loop (it ends when its stopping rule fires; an iteration limit is
 * only a cap) at iteration `iter`, where the rule's `measure` must fall to `target` (measure / target > 1: the
 * distance to the stop, e.g. the gradient norm over its tolerance). measure NaN or target <= 0: no distance known
 * yet. A host estimates the time left from how fast measure / target falls, never from the iteration cap. Return
 * nonzero to cancel. */
typedef int (*am_convergence_fn)(void *user_data, double iter, double measure, double target, const char *label);

/* Growable (docs/abi.md): struct_size first; a smaller struct from an older caller is accepted (the missing
 * fields take their defaults), every field is optional. */
typedef struct am_context_settings {
  uint32_t struct_size;   /* sizeof(am_context_settings) as the caller was compiled */
  am_log_fn log;          /* may be NULL */
  void *log_user;
  am_progress_fn progress;/* may be NULL */
  void *progress_user;
  int threads;            /* threads the library's own parallel loops may use; 0 = all cores */
  /* Added in 3.5: the convergence sink (may be NULL: am_context_convergence then reports to `progress` as
   * (iter, 0, label), a count without a total). */
  am_convergence_fn convergence;
  void *convergence_user;
  /* Added in 3.6: where an estimator may run its P-sized work (docs/scale.md "One solve across machines").
   * distribute: AM_DISTRIBUTE_AUTO (0, the default) lets the theory estimator spread one solve over the ranks of
   * MPI_COMM_WORLD when the process is one of several MPI ranks (a build with ScaLAPACK); AM_DISTRIBUTE_OFF keeps
   * every solve in this process (a farm whose ranks each run points of their own, as `attnmech sweep` does).
   * scalapack_block: rows and columns of a block of the block-cyclic layout; 0 = the default 64, others are
   * clamped to 8..1024. Read back with am_context_distribute / am_context_scalapack_block. */
  int distribute;
  int scalapack_block;
  /* Added in 3.8: the part of the data this process makes (docs/scale.md "Each rank makes its part of the data").
   * data_parts > 1: a task that can make its examples in parts makes only part data_part (0-based) of data_parts
   * — contiguous blocks of each split's examples, the same bits as the rows of the whole split — and says so in
   * the dataset (dataset.h, key `part`); an estimator that reads such a dataset gathers the rows of every part
   * from the other processes (MPI ranks 0..data_parts-1, data_part being this process's rank). 0 or 1 (the
   * default): the whole data. A host sets it only where an estimator will gather (the CLI under mpirun). */
  int data_part;
  int data_parts;
} am_context_settings;

/* Added in 3.6: the values of am_context_settings.distribute (an int there, so the struct's layout is fixed). */
typedef enum am_distribute { AM_DISTRIBUTE_AUTO = 0, AM_DISTRIBUTE_OFF = 1 } am_distribute;

typedef struct am_context am_context;

/* Fills the first `size` bytes (at most sizeof(am_context_settings)) with the defaults and sets struct_size.
 * Call it through am_context_default_settings(&s), which passes the caller's sizeof. */
AM_API void am_context_settings_init(am_context_settings *s, size_t size);
#define am_context_default_settings(s) am_context_settings_init((s), sizeof *(s))
AM_API am_status am_context_create(am_context **out, const am_context_settings *s);
/* Destroys *ctx and sets it to NULL; accepts NULL and *ctx == NULL. */
AM_API void am_context_destroy(am_context **ctx);
/* Message of the last failing call on this context ("" if none). Valid until the next call. */
AM_API const char *am_context_last_error(const am_context *ctx);
AM_API int am_context_threads(const am_context *ctx);

/* For plugins and tools: emit a log line / progress report through the context's sinks.
 * am_context_progress returns nonzero if the sink asked to cancel. */
AM_API void am_context_log(am_context *ctx, am_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
AM_API int am_context_progress(am_context *ctx, double done, double total, const char *label);
/* Added in 3.5. For an open-ended iterative loop (L-BFGS, Newton): iteration `iter`, its stopping rule's measure and
 * the target it must reach (see am_convergence_fn), to the convergence sink; without one, to the progress sink as
 * (iter, 0, label). Returns nonzero if cancelled, as am_context_progress. */
AM_API int am_context_convergence(am_context *ctx, double iter, double measure, double target, const char *label);
/* Record an error message on the context and return `code` (for plugins reporting their own errors). */
AM_API am_status am_context_fail(am_context *ctx, am_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The one deallocator for memory the library hands out that has no destroy function of its own (the arrays of
 * am_dataset_xi, strings); accepts NULL. Never free() such memory yourself: the library may change allocator. */
AM_API void am_free(void *p);

/* Cancel: thread-safe and async-signal-safe (a lock-free atomic store, callable from a signal handler or
 * another thread). Every running call on the context stops at its next progress check and returns
 * AM_CANCELLED with its partial results. A progress sink returning nonzero sets the same flag. */
AM_API void am_context_cancel(am_context *ctx);
AM_API int am_context_cancelled(const am_context *ctx);
AM_API void am_context_reset_cancel(am_context *ctx);

/* Scope: a short label ("run 2/7 N=30") that log lines (as "[scope] message") and progress labels of this
 * context carry until changed; NULL or "" clears it. The run API sets it per stage. */
AM_API am_status am_context_set_scope(am_context *ctx, const char *scope);

/* Runs fn(user, begin, end, worker) over [0, n) split into contiguous chunks, one per worker, on
 * min(n, am_context_threads(ctx)) threads (worker = chunk index 0, 1, …; the calling thread runs chunk 0).
 * The split depends only on n and the thread count. fn must not throw or longjmp. BLAS calls inside fn
 * should run single-threaded (see am_blas_threads_set). Returns AM_ERR_NO_MEMORY if threads cannot start
 * (then nothing ran). */
typedef void (*am_parallel_fn)(void *user, size_t begin, size_t end, int worker);
AM_API am_status am_parallel_for(am_context *ctx, size_t n, am_parallel_fn fn, void *user);

/* OpenBLAS's thread count is process-global. am_blas_threads_set(n > 0) sets it and returns the previous
 * count; n <= 0 only queries. Returns 0 (and does nothing) when the BLAS in use has no such control. The
 * library itself never changes it except through this call; see docs/embedding.md on re-entrancy. */
AM_API int am_blas_threads_set(int n);

/* Before a large allocation: AM_OK when `bytes` fit the memory budget, else AM_ERR_NO_MEMORY with a message
 * "<what> needs 8.1 GB; this machine has 23.4 GB (set AM_MEMORY_LIMIT=..., e.g. 64G, to allow more)". The
 * budget is the physical memory, or AM_MEMORY_LIMIT (bytes, or a number with K/M/G/T) when it is set — the
 * override for machines with swap or for jobs that know better. Without AM_MEMORY_LIMIT, an address-space limit
 * (RLIMIT_AS, `ulimit -v`) below the physical memory is the budget. *budget (may be NULL) gets the budget. */
AM_API am_status am_memory_check(am_context *ctx, double bytes, const char *what, double *budget);

/* Before BLAS work: AM_OK unless the address-space limit (RLIMIT_AS, `ulimit -v`) is below what OpenBLAS needs for
 * its buffers (measured: 512 MiB per thread of its pool, 2 GiB more per further thread in use; below that OpenBLAS
 * spins forever inside its buffer allocation instead of failing). Then AM_ERR_NO_MEMORY with "the address-space
 * limit (ulimit -v) is 0.2 GB; OpenBLAS with 1 thread (1 in use) needs at least 0.5 GB …". am_run_execute
 * calls it; hosts call it early to refuse before any work. */
AM_API am_status am_address_space_check(am_context *ctx);

/* Added in 3.6. The context's distribution setting: AM_DISTRIBUTE_OFF when its settings said so, else
 * AM_DISTRIBUTE_AUTO (also for ctx == NULL). Estimators read it; the library itself distributes nothing. */
AM_API int am_context_distribute(const am_context *ctx);
/* Added in 3.8. The part of the data this process makes: *part (0-based) of *parts, as the settings'
 * data_part/data_parts say; *parts = 1, *part = 0 (the whole data) when they are not set, out of range, or ctx is
 * NULL. Either pointer may be NULL. */
AM_API void am_context_data_part(const am_context *ctx, int *part, int *parts);
/* Added in 3.6. The block size of a distributed run: the settings' scalapack_block clamped to 8..1024, 64 when it
 * is 0 or ctx is NULL. */
AM_API int am_context_scalapack_block(const am_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
