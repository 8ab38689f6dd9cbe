/* attnmech — records: small ordered trees of named values (numbers, strings, booleans, n-d arrays,
 * objects, lists). One structure serves three jobs:
 *   - a dataset handed from a task plugin to an estimator (conventions in dataset.h),
 *   - validated plugin parameters (every key of the plugin's table present, typed),
 *   - results: tools serialise a record to results.json (arrays as nested lists) and .npy files.
 * The root owns every node; node pointers stay valid until the root is destroyed or the key is
 * replaced. Keys of an object keep insertion order; setting an existing key replaces its value.
 * Threads: several threads may read one tree at once, failing lookups included (a call's outcome is kept per
 * thread, below); building calls and destroy take the tree alone (docs/embedding.md). */
#ifndef ATTNMECH_RECORD_H
#define ATTNMECH_RECORD_H

#include "array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct am_record am_record;

typedef enum am_record_type {
  AM_REC_NULL = 0, AM_REC_NUMBER = 1, AM_REC_STRING = 2, AM_REC_BOOL = 3,
  AM_REC_ARRAY = 4, AM_REC_OBJECT = 5, AM_REC_LIST = 6
} am_record_type;

/* Errors: every building call and every typed lookup (set_*, object, list, append_*, remove, array,
 * get_number/string/array/vector) records its outcome on its tree: a status, read with
 * am_record_last_status(any node of the tree), and on failure a message ("no key 'U'", "'test' is a number,
 * not an object", "setting 'mean': out of memory"), read with am_record_last_error. A successful call resets
 * them to AM_OK and "" (no stale message survives it). Calls returning a node return NULL on failure; the
 * status tells why: AM_ERR_FORMAT for a type clash ("... is a list, not an object"), AM_ERR_NO_MEMORY for out
 * of memory, AM_ERR_INVALID_ARGUMENT for a call on a node of the wrong kind.
 * The outcome is kept per thread, not in the tree (since 3.5): the two functions report the calling thread's
 * last recorded call when it was on this tree (else AM_OK and ""), so lookups on a const tree write nothing and
 * several threads may read one tree at once, each seeing its own outcome. Read it right after the call. */
AM_API const char *am_record_last_error(const am_record *node);
/* Status of the last recorded call on the tree of `node` (AM_OK after a success; AM_ERR_INVALID_ARGUMENT
 * for node == NULL). */
AM_API am_status am_record_last_status(const am_record *node);

/* A new empty object (the root). */
AM_API am_status am_record_create(am_record **out);
AM_API void am_record_destroy(am_record **root);
/* Deep copy of any node as a new root. */
AM_API am_status am_record_clone(const am_record *node, am_record **out);

/* --- building (on an object node) --- */
AM_API am_status am_record_set_number(am_record *obj, const char *key, double v);
AM_API am_status am_record_set_string(am_record *obj, const char *key, const char *s);
AM_API am_status am_record_set_bool(am_record *obj, const char *key, int v);
AM_API am_status am_record_set_null(am_record *obj, const char *key);
/* Copies the data. */
AM_API am_status am_record_set_array(am_record *obj, const char *key, const am_array_view *v);
/* Shorthands: a 1-D f64 array, a column-major rows×cols f64 matrix (stored as a [rows, cols] array). */
AM_API am_status am_record_set_vector(am_record *obj, const char *key, const double *v, size_t n);
AM_API am_status am_record_set_matrix(am_record *obj, const char *key, const double *m, size_t rows, size_t cols,
                                      size_t ld);
/* Deep-copies `value` under `key`. */
AM_API am_status am_record_set_copy(am_record *obj, const char *key, const am_record *value);
/* Child object / list under `key`, created if absent (NULL if `key` holds another type or on OOM). */
AM_API am_record *am_record_object(am_record *obj, const char *key);
AM_API am_record *am_record_list(am_record *obj, const char *key);
/* Append to a list node: a new empty object / a number / a string. */
AM_API am_record *am_record_append_object(am_record *list);
AM_API am_status am_record_append_number(am_record *list, double v);
AM_API am_status am_record_append_string(am_record *list, const char *s);
/* Append a copy of an n-d array to a list node (e.g. the list of matrices U_1..U_L). */
AM_API am_status am_record_append_array(am_record *list, const am_array_view *v);
AM_API am_status am_record_remove(am_record *obj, const char *key);

/* --- reading --- */
AM_API am_record_type am_record_type_of(const am_record *n);
AM_API size_t am_record_size(const am_record *n);                    /* children of object/list, else 0 */
AM_API const char *am_record_key(const am_record *n, size_t i);     /* object keys; NULL for lists */
AM_API const am_record *am_record_at(const am_record *n, size_t i);
AM_API const am_record *am_record_get(const am_record *obj, const char *key);   /* NULL if absent */
AM_API am_record *am_record_get_mut(am_record *obj, const char *key);
AM_API double am_record_number(const am_record *n);                 /* NaN if not a number/bool */
AM_API const char *am_record_string(const am_record *n);            /* NULL if not a string */
AM_API int am_record_bool(const am_record *n);
AM_API am_status am_record_array(const am_record *n, am_array_view *v);

/* Typed lookups on an object: AM_ERR_NOT_FOUND if absent, AM_ERR_FORMAT if of another type.
 * get_vector copies a numeric array, or a list of numbers, or a single number, into `out`
 * (cap elements; *n receives the count; out may be NULL to ask for the count). */
AM_API am_status am_record_get_number(const am_record *obj, const char *key, double *v);
AM_API am_status am_record_get_string(const am_record *obj, const char *key, const char **s);
AM_API am_status am_record_get_array(const am_record *obj, const char *key, am_array_view *v);
AM_API am_status am_record_get_vector(const am_record *obj, const char *key, double *out, size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
