"""HTTP to servers that are not ours, bounded: every answer read within a total deadline (from the
request sent to the last byte received: a server that drips bytes cannot hold a call open past it)
and within a size cap (an answer that grows past it is cut off, never read whole into memory). Both
the project's own client of embedding and rerank endpoints (`remote.Endpoint`) and the OpenAI client
of a generator endpoint (`answering.endpoint.EndpointLM`) send through `client(...)`.
"""

from __future__ import annotations

import time

import httpx


class Oversized(httpx.TransportError):
    """An answer larger than the cap."""


class _Limited(httpx.SyncByteStream):
    def __init__(self, inner, max_bytes: int, deadline: float, timeout_s: float):
        self.inner, self.max_bytes, self.deadline, self.timeout_s = inner, max_bytes, deadline, timeout_s

    def __iter__(self):
        seen = 0
        for chunk in self.inner:
            seen += len(chunk)
            if seen > self.max_bytes:
                raise Oversized(f"an answer larger than {self.max_bytes:,} bytes")
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout(f"no whole answer within {self.timeout_s:g} s")
            yield chunk

    def close(self) -> None:
        self.inner.close()


class Bounded(httpx.HTTPTransport):
    def __init__(self, max_bytes: int, timeout_s: float, **kwargs):
        super().__init__(**kwargs)
        self.max_bytes, self.timeout_s = max_bytes, timeout_s

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.timeout_s
        response = super().handle_request(request)
        if time.monotonic() > deadline:
            response.close()
            raise httpx.ReadTimeout(f"no answer within {self.timeout_s:g} s")
        response.stream = _Limited(response.stream, self.max_bytes, deadline, self.timeout_s)
        return response


def client(timeout_s: float, max_bytes: int, connections: int = 4) -> httpx.Client:
    """A kept-alive client whose every answer is bounded by `timeout_s` seconds and `max_bytes`."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(transport=Bounded(max_bytes, timeout_s, limits=limits), timeout=timeout_s)
