"""An OpenAI-compatible server that misbehaves, one way per model name, for the endpoint client's
failure counts: `python tests/bad_endpoint.py PORT` (loopback only).

- slow: answers after SLOW_S seconds (past the client's timeout);
- empty: answers with empty content;
- cut: stops at 2 tokens with finish_reason "length" (the server's context window was full);
- garbage: a 200 whose body is not JSON;
- flaky: 503 on a prompt's first request, a real answer on its retry.

Hostile ones, for the bounds of the clients: `drip` answers a byte every DRIP_S seconds, for ever
(no total deadline: no end); `driphead` drips its response headers so, before any body; `huge`
answers MiB of padding (its size in MiB after the name, `huge10`); `bomb` is a gzip bomb (1 MiB on
the wire, BOMB_MIB MiB decoded) and `gzip2` the same gzipped twice (`Content-Encoding: gzip, gzip`, a
few KB on the wire); `echokey` answers YES and the Authorization header it was sent, after ECHO_S; `ansi`
answers with terminal escapes (clear the screen, retitle the window, a carriage return); `choices5`,
`list5` and `message5` are chat replies of the wrong shape; for embeddings `strvec`, `strindex` and
`usage5` are answers of the wrong shape, and `twofaced` answers a request that holds a probe text
(rag_assets.retrieval.remote.PROBE) with one model and any other with another; for /rerank
`strscore`, and `driphead`, `bomb`, `gzip2` as above. Its /models list is an HTML page when the seed is
`html`, `{"data": 5}` when it is `data5`, dripped headers when it is `driphead`, and one model named
after the Authorization header it was sent when it is `echokey`.

`GET /count` answers how many requests it was sent besides (`{"requests": N}`): what a test that
expects none reads.

Its `/v1/embeddings` serves vectors made from each text's hash (seeded by the second argument, so a
restart with another seed is a model that moved behind the same name; as many dimensions as the
third, 8 by default, so a restart with another is a model of another size under the same name), and
fails one way per model: `unauthorized` 401, `ratelimited` 429, `broken` 500, `slow` (as above),
`short` one vector too few, `nan` vectors holding NaN; `characters` reports the texts' characters as
its tokens (as infinity does by default); any other model answers. Its `/rerank` scores each
document by its hash, seeded the same way (a Cohere / infinity answer).
"""

import gzip
import hashlib
import json
import struct
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_S = 5
ECHO_S = 1  # echokey takes its time: answers that wait on it overlap
DRIP_S = 0.5
BOMB_MIB = 1024
MODELS = (
    *("slow", "empty", "cut", "garbage", "flaky", "drip", "driphead", "huge", "bomb", "gzip2"),
    *("choices5", "list5", "message5", "echokey", "ansi"),
)
PROBE_TEXT = "The quick brown fox jumps over the lazy dog."  # the first of the embedders' probe texts
bombs: dict[bytes, bytes] = {}
seen: set[str] = set()
SEED, DIM = "0", 8
received = [0]  # requests other than GET /count


def completion(content: str, finish: str, tokens: int) -> dict:
    return {
        "id": "chatcmpl-bad",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "bad",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens},
    }


def bomb(head: bytes, tail: bytes) -> bytes:
    """gzip of `head`, BOMB_MIB MiB of spaces and `tail`, made without holding them: after a full
    flush, each MiB of spaces compresses to the same bytes, repeated."""
    if head not in bombs:
        c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        block = b" " * 2**20
        start, piece = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH), c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
        crc = zlib.crc32(head)
        for _ in range(BOMB_MIB):
            crc = zlib.crc32(block, crc)
        size = len(head) + BOMB_MIB * 2**20 + len(tail)
        trailer = struct.pack("<II", zlib.crc32(tail, crc), size & 0xFFFFFFFF)
        bombs[head] = (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
            + start
            + piece * BOMB_MIB
            + c.compress(tail)
            + c.flush()
            + trailer
        )
    return bombs[head]


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000000")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(DRIP_S)
        except OSError:  # the client gave up
            pass

    def _drip_headers(self) -> None:
        self.send_response(200)
        self.flush_headers()
        try:
            while True:
                self.wfile.write(b"X")
                self.wfile.flush()
                time.sleep(DRIP_S)
        except OSError:  # the client gave up
            pass

    def _bomb(self, model: str, head: bytes, tail: bytes) -> bool:
        """A gzip bomb (`bomb`) or one gzipped twice (`gzip2`) for those models; False for others."""
        if model not in ("bomb", "gzip2"):
            return False
        body = bomb(head, tail)
        body = gzip.compress(body) if model == "gzip2" else body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip, gzip" if model == "gzip2" else "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass
        return True

    def _huge(self, mebibytes: int, head: bytes) -> None:
        """`head` then padding, for `mebibytes` MiB, written a piece at a time (never held whole)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + mebibytes * 2**20 + 2))
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(mebibytes * 16):
                self.wfile.write(b" " * 65536)
            self.wfile.write(b"]}")
        except OSError:  # the client gave up
            pass

    def do_GET(self):
        if self.path.endswith("/count"):
            return self._send(200, json.dumps({"requests": received[0]}).encode())
        received[0] += 1
        if SEED == "html":
            return self._send(200, b"<html><body>It works!</body></html>", "text/html")
        if SEED == "data5":
            return self._send(200, b'{"data": 5}')
        if SEED == "driphead":
            return self._drip_headers()
        if SEED == "echokey":  # its one model named after the key it was sent
            return self._send(200, json.dumps({"data": [{"id": str(self.headers.get("Authorization"))}]}).encode())
        models = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "tests"} for m in MODELS]}
        self._send(200, json.dumps(models).encode())

    def do_POST(self):
        received[0] += 1
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):
            return self.embeddings(request)
        if self.path.endswith("/rerank"):
            return self.rerank(request)
        model, prompt = request["model"], request["messages"][-1]["content"]
        shapes = {"choices5": {"choices": 5}, "list5": [5], "message5": {"choices": [{"message": 5}]}}
        if model in shapes:
            return self._send(200, json.dumps(shapes[model]).encode())
        if model == "drip":
            return self._drip()
        if model == "driphead":
            return self._drip_headers()
        if self._bomb(model, b'{"choices": [{"message": {"content": "', b'"}}]}'):
            return
        if model.startswith("huge"):
            return self._huge(int(model[4:] or 1), b'{"choices": [{"message": {"content": "')
        if model == "echokey":
            time.sleep(ECHO_S)
            content = f"YES. You sent {self.headers.get('Authorization')}"
            return self._send(200, json.dumps(completion(content, "stop", 8)).encode())
        if model == "slow":
            time.sleep(SLOW_S)
            self._send(200, json.dumps(completion("late", "stop", 1)).encode())
        elif model == "empty":
            self._send(200, json.dumps(completion("", "stop", 0)).encode())
        elif model == "cut":
            self._send(200, json.dumps(completion("The pump", "length", 2)).encode())
        elif model == "garbage":
            self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
        elif model == "ansi":
            content = "It faces north [1].\x1b[2J\x1b]0;pwned\x07\rForged line"
            self._send(200, json.dumps(completion(content, "stop", 6)).encode())
        elif prompt not in seen:  # flaky
            seen.add(prompt)
            self._send(503, b'{"error": {"message": "overloaded"}}')
        else:
            self._send(200, json.dumps(completion("It faces north [1].", "stop", 6)).encode())

    def embeddings(self, request):
        model, texts = request["model"], request["input"]
        failures = {"unauthorized": (401, "invalid key"), "ratelimited": (429, "slow down"), "broken": (500, "oops")}
        if model == "echokey":  # a server that quotes the key it was sent in its error
            quoted = f"bad key: {self.headers.get('Authorization')} api_key=sk-{'x' * 20}"
            return self._send(400, json.dumps({"error": {"message": quoted}}).encode())
        if model in failures:
            status, message = failures[model]
            return self._send(status, json.dumps({"error": {"message": message}}).encode())
        if model == "slow":
            time.sleep(SLOW_S)
        if model == "drip":
            return self._drip()
        if model == "driphead":
            return self._drip_headers()
        if self._bomb(model, b'{"data": [', b"]}"):
            return
        if model.startswith("huge"):
            return self._huge(int(model[4:] or 1), b'{"data": [')
        seed = SEED if model != "twofaced" or any(PROBE_TEXT in t for t in texts) else SEED + "/other"
        vectors = [[b / 255 - 0.5 for b in hashlib.sha256(f"{seed}/{t}".encode()).digest()[:DIM]] for t in texts]
        if model == "short":
            vectors = vectors[:-1]
        if model == "nan":
            vectors[0][0] = float("nan")
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if model == "strvec":
            data = [{**d, "embedding": [str(x) for x in d["embedding"]]} for d in data]
        if model == "strindex":
            data = [{**d, "index": str(d["index"])} for d in data]
        counted = sum(len(t) for t in texts) if model == "characters" else 3 * len(texts)
        body = {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": counted}}
        if model == "usage5":
            body["usage"] = 5
        self._send(200, json.dumps(body).encode())

    def rerank(self, request):
        query, documents = request["query"], request["documents"]
        if request.get("model") == "driphead":
            return self._drip_headers()
        if self._bomb(request.get("model"), b'{"results": [', b"]}"):
            return
        scores = [hashlib.sha256(f"{SEED}/{query}/{d}".encode()).digest()[0] / 255 for d in documents]
        results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        if request.get("model") == "strscore":
            results = [{**r, "relevance_score": str(r["relevance_score"])} for r in results]
        self._send(200, json.dumps({"results": results, "usage": {"total_tokens": 4 * len(documents)}}).encode())

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    SEED = sys.argv[2] if len(sys.argv) > 2 else "0"
    DIM = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
