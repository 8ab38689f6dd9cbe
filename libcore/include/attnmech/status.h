/* attnmech — status codes. Every fallible call returns one; 0 is success, errors are negative,
 * positive values are informative outcomes (the call did its work but with a caveat). */
#ifndef ATTNMECH_STATUS_H
#define ATTNMECH_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define AM_API __declspec(dllexport)
#elif defined(__GNUC__)
#define AM_API __attribute__((visibility("default")))
#else
#define AM_API
#endif

typedef int32_t am_status;

enum {
  AM_OK = 0,
  AM_CONVERGED_ROUNDOFF = 1,   /* solver: stopped on the Newton decrement; gradient stalled by round-off */
  AM_CANCELLED = 2,            /* a progress callback asked to stop; partial results are valid */

  AM_ERR_INVALID_ARGUMENT = -1, /* NULL pointer, bad enum value, zero size, inconsistent settings */
  AM_ERR_SHAPE = -2,            /* mismatched array shapes */
  AM_ERR_NONFINITE = -3,        /* NaN or Inf in the input */
  AM_ERR_DOMAIN = -4,           /* value out of range: T <= 0, variance <= 0, width <= 0, ... */
  AM_ERR_SINGULAR = -5,         /* a matrix that must be positive definite is not (numerically) */
  AM_ERR_NOT_CONVERGED = -6,    /* iterative method hit its limit; outputs hold the last iterate */
  AM_ERR_NO_MEMORY = -7,
  AM_ERR_IO = -8,               /* file cannot be opened/read/written */
  AM_ERR_FORMAT = -9,           /* file or data in an unsupported or corrupt format */
  AM_ERR_NOT_FOUND = -10,       /* a named item (array, key, plugin) does not exist */
  AM_ERR_PLUGIN = -11,          /* plugin cannot be loaded or misbehaved */
  AM_ERR_ABI = -12,             /* plugin ABI version mismatch */
  AM_ERR_BUFFER_TOO_SMALL = -13,/* caller buffer too small; *needed holds the size */
  AM_ERR_USAGE = -14,           /* bad parameter value from a user (tools map it to exit code 2) */
  AM_ERR_INTERNAL = -15         /* a bug: please report */
};

/* Static, never-NULL English name of a status code. */
AM_API const char *am_status_string(am_status code);

#ifdef __cplusplus
}
#endif
#endif
