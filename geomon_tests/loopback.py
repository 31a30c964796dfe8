"""Loopback HTTP servers for tests: real sockets on 127.0.0.1 speaking JSON wire formats."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler whose ``state`` is the dict given to ``serve``."""

    @property
    def state(self) -> dict[str, Any]:
        return self.server.state  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def send_json(self, body: Any, status: int = 200) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a client with many requests in flight is not refused at the socket (the default: 5)


@contextlib.contextmanager
def serve(handler: Callable[..., BaseHTTPRequestHandler], state: dict[str, Any] | None = None) -> Iterator[str]:
    """Run ``handler`` on a free port; yields ``http://127.0.0.1:PORT``."""
    server = _Server(("127.0.0.1", 0), handler)
    server.state = state if state is not None else {}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class ScriptedModel(JSONHandler):
    """An OpenAI-compatible endpoint whose answers a test scripts: ``state["answer"](messages) -> str`` (None:
    refused with HTTP 400).

    For what no real model can be made to do on cue (answer exactly right, or exactly wrong for some
    countries); every other test talks to real llama.cpp servers.
    """

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": m, "object": "model"} for m in self.state["models"]]})
        else:
            self.send_json({"error": "not found"}, status=404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state.setdefault("calls", 0)
        self.state["calls"] += 1
        text = self.state["answer"](body["messages"])
        if text is None:  # the script refuses this request, as a server rejects one it cannot serve (not retried)
            self.send_json({"error": {"message": "scripted refusal", "type": "invalid_request_error"}}, status=400)
            return
        self.send_json(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


class ScriptedBaseModel(ScriptedModel):
    """A base model behind a llama.cpp server whose log-probabilities a test scripts: one token per character
    (``/tokenize``), a continuation forced by a token-id grammar scored ``state["logprob"](prompt, continuation)``
    (spread over its tokens, llama.cpp's ``logprobs.content``) or refused with HTTP 400 where
    ``state["broken"](prompt, continuation)``, any other completion ``state["answer"](prompt)``.
    ``state["completions"]`` counts the completions asked."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            self.send_json({"tokens": [ord(c) for c in body["content"]]})
            return
        self.state["completions"] = self.state.get("completions", 0) + 1
        forced = "".join(chr(int(i)) for i in re.findall(r"<\[(\d+)\]>", body.get("grammar") or ""))
        logprobs = None
        if forced and self.state.get("broken", lambda prompt, text: False)(body["prompt"], forced):
            self.send_json({"error": {"message": "scripted failure", "type": "invalid_request_error"}}, status=400)
            return
        if forced:
            each = self.state["logprob"](body["prompt"], forced) / len(forced)
            logprobs = {"content": [{"token": c, "logprob": each, "top_logprobs": []} for c in forced]}
        text = forced or self.state["answer"](body["prompt"])
        choice = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": "stop"}
        usage = {"prompt_tokens": 1, "completion_tokens": len(text), "total_tokens": 1 + len(text)}
        self.send_json(
            {"id": "x", "object": "text_completion", "created": 0, "model": body["model"], "choices": [choice],
             "usage": usage}
        )  # fmt: skip


class Webhook(JSONHandler):
    """Receives alert posts (Slack-compatible or generic JSON); ``state["status"]`` sets the reply code."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.state["posts"].append({"path": self.path, "body": json.loads(body)})
        self.send_json({"ok": True}, status=self.state.get("status", 200))


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def file_server(directory: Path) -> contextlib.AbstractContextManager[str]:
    """Serve ``directory``'s files the way GitHub's raw host serves a release's."""
    return serve(functools.partial(QuietFiles, directory=str(directory)))
