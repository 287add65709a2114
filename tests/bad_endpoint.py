"""An OpenAI-compatible server that misbehaves, one way per model name, for the endpoint client's
failure counts: `python tests/bad_endpoint.py PORT` (loopback only).

- slow: answers after SLOW_S seconds (past the client's timeout);
- empty: answers with empty content;
- cut: stops at 2 tokens with finish_reason "length" (the server's context window was full);
- garbage: a 200 whose body is not JSON;
- flaky: 503 on a prompt's first request, a real answer on its retry.
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_S = 5
MODELS = ("slow", "empty", "cut", "garbage", "flaky")
seen: set[str] = set()


def completion(content: str, finish: str, tokens: int) -> dict:
    return {
        "id": "chatcmpl-bad",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "bad",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens},
    }


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        models = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "tests"} for m in MODELS]}
        self._send(200, json.dumps(models).encode())

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model, prompt = request["model"], request["messages"][-1]["content"]
        if model == "slow":
            time.sleep(SLOW_S)
            self._send(200, json.dumps(completion("late", "stop", 1)).encode())
        elif model == "empty":
            self._send(200, json.dumps(completion("", "stop", 0)).encode())
        elif model == "cut":
            self._send(200, json.dumps(completion("The pump", "length", 2)).encode())
        elif model == "garbage":
            self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
        elif prompt not in seen:  # flaky
            seen.add(prompt)
            self._send(503, b'{"error": {"message": "overloaded"}}')
        else:
            self._send(200, json.dumps(completion("It faces north [1].", "stop", 6)).encode())

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
