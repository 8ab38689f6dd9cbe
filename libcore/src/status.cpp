// attnmech — status code names.
#include "internal.hpp"

extern "C" const char *am_status_string(am_status code) {
  switch (code) {
    case AM_OK: return "ok";
    case AM_CONVERGED_ROUNDOFF: return "converged to round-off";
    case AM_CANCELLED: return "cancelled";
    case AM_ERR_INVALID_ARGUMENT: return "invalid argument";
    case AM_ERR_SHAPE: return "shape mismatch";
    case AM_ERR_NONFINITE: return "non-finite value";
    case AM_ERR_DOMAIN: return "value out of domain";
    case AM_ERR_SINGULAR: return "matrix not positive definite";
    case AM_ERR_NOT_CONVERGED: return "not converged";
    case AM_ERR_NO_MEMORY: return "out of memory";
    case AM_ERR_IO: return "input/output error";
    case AM_ERR_FORMAT: return "unsupported or corrupt format";
    case AM_ERR_NOT_FOUND: return "not found";
    case AM_ERR_PLUGIN: return "plugin error";
    case AM_ERR_ABI: return "plugin ABI mismatch";
    case AM_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case AM_ERR_USAGE: return "usage error";
    case AM_ERR_INTERNAL: return "internal error";
    default: return "unknown status";
  }
}
