"""HTTP to servers that are not ours, bounded on the wire. Every endpoint call (embeddings and rerank
through `remote.Endpoint`, a generator or judge and their `/models` through the OpenAI client of
`answering.endpoint.EndpointLM`) is sent by `client(...)`, whose transport holds two bounds:

- **A total deadline**, from connect to the last byte, the response headers included: every socket
  operation is given only the time left before the deadline (not httpx's per-read timeout, which a
  server that drips one byte a second never trips), so a server that drips its headers or its body
  is cut off at the deadline.
- **A size cap on decoded bytes**: the answer is decoded here (gzip or deflate, one encoding at most:
  `gzip, gzip` is refused) a bounded piece at a time, so a few KB that decode to GB are cut at the
  cap without being held.

It also keeps the Bearer keys it sends, so that `masked` can take every one of them out of a reply
before the reply is stored, printed, logged or served (an endpoint that echoes its Authorization
header must not hand the key on).
"""

from __future__ import annotations

import contextvars
import threading
import time
import zlib

import httpcore
import httpx

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
_SENT: set[str] = set()  # the Bearer keys this process has sent
_SENT_LOCK = threading.Lock()
NO_KEY = "none"  # what the OpenAI client sends where the server wants no key: no secret
MASK = "[key]"
PIECE = 64 * 1024  # bytes decoded at a time
ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}  # zlib's wbits for each


class Refused(httpx.TransportError):
    """An answer not read: past its size, or in an encoding this transport does not read."""


class Oversized(Refused):
    """An answer larger than the cap, decoded."""


def masked(text: str) -> str:
    """`text` with every key this process has sent to an endpoint replaced by MASK."""
    with _SENT_LOCK:
        keys = sorted(_SENT, key=len, reverse=True)
    for key in keys:
        text = text.replace(key, MASK)
    return text


def _left(timeout: float | None) -> float | None:
    """`timeout`, cut to the time left before the current request's deadline (ReadTimeout past it)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("past the answer's deadline")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str):
        return self.inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """The sockets of a connection pool, each operation bounded by the current request's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend):
        self.inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _Stream(self.inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _Stream(self.inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _Decoded(httpx.SyncByteStream):
    """The answer's bytes decoded (when encoded) and counted, each raw read within the deadline."""

    def __init__(self, inner, encoding: str | None, max_bytes: int, deadline: float, timeout_s: float):
        self.inner, self.max_bytes, self.deadline, self.timeout_s = inner, max_bytes, deadline, timeout_s
        self.decoder = zlib.decompressobj(ENCODINGS[encoding]) if encoding else None
        self.raw_deflate = encoding == "deflate"  # some servers send deflate without its zlib header

    def _raw(self):
        chunks = iter(self.inner)
        while True:
            token = _DEADLINE.set(self.deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _DEADLINE.reset(token)
            if chunk is None:
                return
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout(f"no whole answer within {self.timeout_s:g} s")
            yield chunk

    def _decode(self, chunk: bytes):
        """Pieces of at most PIECE bytes and the room left under the cap (and one byte more, to know
        it is over): the caller counts each before the next is made."""
        try:
            while chunk:
                piece = self.decoder.decompress(chunk, min(PIECE, self.max_bytes - self.seen + 1))
                chunk = self.decoder.unconsumed_tail
                yield piece
        except zlib.error:
            if not (self.raw_deflate and self.seen == 0):
                raise Refused("an answer whose encoded body cannot be decoded") from None
            self.decoder, self.raw_deflate = zlib.decompressobj(-zlib.MAX_WBITS), False
            yield from self._decode(chunk)

    def __iter__(self):
        self.seen = 0
        for chunk in self._raw():
            for piece in self._decode(chunk) if self.decoder else (chunk,):
                self.seen += len(piece)
                if self.seen > self.max_bytes:
                    raise Oversized(f"an answer larger than {self.max_bytes:,} bytes")
                if piece:
                    yield piece

    def close(self) -> None:
        self.inner.close()


class Bounded(httpx.HTTPTransport):
    def __init__(self, max_bytes: int, timeout_s: float, **kwargs):
        super().__init__(**kwargs)
        self.max_bytes, self.timeout_s = max_bytes, timeout_s
        self._pool._network_backend = _Backend(self._pool._network_backend)  # httpx names no hook for it

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.timeout_s
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and key.strip() and key.strip() != NO_KEY:
            with _SENT_LOCK:
                _SENT.add(key.strip())
        request.headers["Accept-Encoding"] = ", ".join(ENCODINGS)
        token = _DEADLINE.set(deadline)
        try:
            response = super().handle_request(request)
        finally:
            _DEADLINE.reset(token)
        encodings = [e for e in response.headers.get_list("content-encoding", split_commas=True) if e]
        encodings = [e.strip().lower() for e in encodings if e.strip().lower() != "identity"]
        if len(encodings) > 1 or (encodings and encodings[0] not in ENCODINGS):
            response.close()
            raise Refused(f"an answer in the content encoding {', '.join(encodings)} (one of gzip, deflate at most)")
        for header in ("content-encoding", "content-length"):  # decoded here: httpx must not decode again
            response.headers.pop(header, None)
        response.stream = _Decoded(
            response.stream, encodings[0] if encodings else None, self.max_bytes, deadline, self.timeout_s
        )
        return response


def client(timeout_s: float, max_bytes: int, connections: int = 4) -> httpx.Client:
    """A kept-alive client whose every answer is bounded by `timeout_s` seconds and `max_bytes`."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(transport=Bounded(max_bytes, timeout_s, limits=limits), timeout=timeout_s)
