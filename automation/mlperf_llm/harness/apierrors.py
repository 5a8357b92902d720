"""What a request to a server can fail with: plain exceptions, without the HTTP client (client.py),
so that code which only names them (serverwatch.py, the transformers backend's run) needs no aiohttp."""

from __future__ import annotations


class ApiError(Exception):
    """A request failed. `retryable` is False for answers that will not change (4xx); `unreachable`
    is True when no whole answer came (the connection was refused, lost or timed out)."""

    def __init__(self, endpoint: str, message: str, status: int | None = None, retryable: bool = True,
                 unreachable: bool = False):
        super().__init__(f"{endpoint}: {message}")
        self.endpoint = endpoint
        self.message = message
        self.status = status
        self.retryable = retryable
        self.unreachable = unreachable


class PreflightError(Exception):
    """The servers cannot run this benchmark (unreachable, wrong model, ...); raised before LoadGen."""
