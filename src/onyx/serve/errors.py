"""The errors a request can meet, each carrying the HTTP status and gRPC code the protocol gives it.

They derive from onyx's own exceptions, so code catching ``OnyxError`` or ``InvalidArgument`` keeps
working; the REST and gRPC front ends map them to ``{"error": "..."}`` with ``http_status`` and to
``grpc_code``.
"""

from __future__ import annotations

from onyx.errors import Fail, InvalidArgument, OnyxError


class ServeError(OnyxError):
    """Base of the serving errors; ``http_status`` and ``grpc_code`` (a grpc.StatusCode name)."""

    http_status = 500
    grpc_code = "INTERNAL"


class BadRequest(ServeError, InvalidArgument):
    """A malformed request: bad JSON, unknown datatype, a shape or size that does not add up."""

    http_status = 400
    grpc_code = "INVALID_ARGUMENT"


class NotFound(ServeError):
    """An unknown model or version, or one that is not loaded."""

    http_status = 404
    grpc_code = "NOT_FOUND"


class BodyTooLarge(ServeError):
    """A request body over the configured limit."""

    http_status = 413
    grpc_code = "RESOURCE_EXHAUSTED"


class Unavailable(ServeError):
    """The server is shutting down, or the model is being unloaded: the request was not run."""

    http_status = 503
    grpc_code = "UNAVAILABLE"


class ModelFailure(ServeError, Fail):
    """The model raised while running the request; the message is onyx's."""

    http_status = 500
    grpc_code = "INTERNAL"


class ConfigError(ServeError, InvalidArgument):
    """A config.pbtxt that cannot be parsed or does not fit its model (names the file, line and column)."""

    http_status = 400
    grpc_code = "INVALID_ARGUMENT"


def status_of(exc: BaseException) -> tuple[int, str]:
    """(HTTP status, gRPC code name) for any exception: serving errors as declared, onyx's
    InvalidArgument as 400, anything else as 500."""
    if isinstance(exc, ServeError):
        return exc.http_status, exc.grpc_code
    if isinstance(exc, InvalidArgument):
        return 400, "INVALID_ARGUMENT"
    return 500, "INTERNAL"
