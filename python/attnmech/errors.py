"""Exceptions and warnings: every non-OK status of the library becomes an `Error` subclass carrying the
library's message; informative outcomes (round-off stop, a run flagged `warning`) become `AttnmechWarning`s."""
from . import _lib


class Error(Exception):
    """A call into libattnmech failed.

    Attributes
    ----------
    status : int
        The library's status code (negative; `attnmech.errors.STATUS_NAMES` names them).
    message : str
        The library's message (from the context or record that failed), or the status name.
    result : object or None
        What the call produced before failing, when it produced anything: the partial `Results` of a run,
        the last-iterate `Solution` of a solve.
    """

    def __init__(self, status, message="", result=None):
        self.status = status
        self.message = message or _lib.status_string(status)
        self.result = result
        super().__init__(f"{self.message} ({_lib.status_string(status)})")


class UsageError(Error, ValueError):
    """A bad parameter value or name from the user (AM_ERR_USAGE; the CLI's exit code 2)."""


class InvalidArgument(UsageError):
    """An invalid argument reached the library (AM_ERR_INVALID_ARGUMENT)."""


class ShapeError(UsageError):
    """Arrays of mismatched shapes (AM_ERR_SHAPE)."""


class DomainError(Error, ValueError):
    """A value out of its range, e.g. a temperature <= 0 or a U that is not positive definite (AM_ERR_DOMAIN)."""


class NonFiniteError(DomainError):
    """NaN or Inf in the input (AM_ERR_NONFINITE)."""


class SingularError(DomainError):
    """A matrix that must be positive definite is not (AM_ERR_SINGULAR)."""


class NotConverged(Error):
    """An iterative method hit its limit (AM_ERR_NOT_CONVERGED); `result` holds the last iterate / the runs."""


class OutOfMemory(Error, MemoryError):
    """AM_ERR_NO_MEMORY (also the memory budget check: AM_MEMORY_LIMIT)."""


class FileError(Error, OSError):
    """A file cannot be opened, read or written (AM_ERR_IO)."""


class FormatError(Error):
    """A file or data in an unsupported or corrupt format (AM_ERR_FORMAT)."""


class NotFound(Error, LookupError):
    """A named item (array, key, plugin) does not exist (AM_ERR_NOT_FOUND)."""


class PluginError(Error):
    """A plugin cannot be loaded or misbehaved (AM_ERR_PLUGIN)."""


class ABIError(PluginError):
    """Plugin ABI version mismatch (AM_ERR_ABI)."""


class InternalError(Error):
    """A bug in the library (AM_ERR_INTERNAL, AM_ERR_BUFFER_TOO_SMALL): please report it."""


class Cancelled(Error):
    """A call was cancelled (AM_CANCELLED) other than by Ctrl-C (which raises KeyboardInterrupt)."""


class AttnmechWarning(UserWarning):
    """An informative outcome: a run flagged `warning` (e.g. R-hat > 1.01), a solver stopped by round-off."""


EXCEPTIONS = {
    _lib.AM_ERR_INVALID_ARGUMENT: InvalidArgument,
    _lib.AM_ERR_SHAPE: ShapeError,
    _lib.AM_ERR_NONFINITE: NonFiniteError,
    _lib.AM_ERR_DOMAIN: DomainError,
    _lib.AM_ERR_SINGULAR: SingularError,
    _lib.AM_ERR_NOT_CONVERGED: NotConverged,
    _lib.AM_ERR_NO_MEMORY: OutOfMemory,
    _lib.AM_ERR_IO: FileError,
    _lib.AM_ERR_FORMAT: FormatError,
    _lib.AM_ERR_NOT_FOUND: NotFound,
    _lib.AM_ERR_PLUGIN: PluginError,
    _lib.AM_ERR_ABI: ABIError,
    _lib.AM_ERR_BUFFER_TOO_SMALL: InternalError,
    _lib.AM_ERR_USAGE: UsageError,
    _lib.AM_ERR_INTERNAL: InternalError,
    _lib.AM_CANCELLED: Cancelled,
}


def error_for(status, message="", result=None):
    """The exception object for a status code (an unknown negative code gives the base `Error`)."""
    return EXCEPTIONS.get(status, Error)(status, message, result)
