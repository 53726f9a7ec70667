"""A TEST-ONLY OpenAI-compatible completion server: it generates no language, it streams
words from a fixed vocabulary at a configured pace. It stands in for an inference server
(vLLM, llama.cpp's server, Triton's OpenAI front end) behind HAProxy and Nginx in the
serving tests, because those servers need a model and minutes of build or GPU time.

What it serves (HTTP/1.1, keep-alive):

* ``POST /v1/completions`` and ``POST /v1/chat/completions``: ``max_tokens`` (or
  ``max_completion_tokens``) words, each ``--token-delay`` seconds after the previous one,
  the first ``--ttft`` seconds after the request (default: one token delay). With
  ``"stream": true`` as server-sent events (``data: {...}`` chunks, then ``data: [DONE]``,
  chunked transfer encoding); otherwise one JSON body after the last word. ``usage``
  counts prompt words and output words (one word is one token of the vocabulary that
  ``--write-tokenizer`` writes).
* ``GET /health`` (200, for HAProxy's health check) and ``GET /v1/models``.
* ``--api-key-env NAME`` / ``--api-key-file F``: requests must carry ``Authorization:
  Bearer KEY`` (401 else), the key read from the variable or the file, never from argv.
* ``--fail-every N``: every N-th completion request answers 500 (failure injection).

Control (for failover tests): ``serve --daemon --pidfile F`` detaches (stdio to
``--log``) and returns once it listens; ``stop --pidfile F`` kills it (SIGKILL: the
backend vanishes mid-stream, like a crashed replica).

``write-tokenizer DIR`` writes a word-level tokenizer (``tokenizer.json`` built with the
``tokenizers`` package, plus ``tokenizer_config.json``) whose vocabulary is exactly the
words this server emits, so a load generator counts one token per streamed word.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

VOCAB = [
    f"{a}{b}"
    for a in ("al", "be", "ce", "do", "ep", "fa", "ga", "hi")
    for b in ("ta", "ro", "mi", "nu", "ke", "vo", "sa", "lu")
]  # 64 words, lower case, no whitespace inside


class Backend:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.model = args.model
        self.key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
        if args.api_key_file:
            self.key = Path(args.api_key_file).read_text().strip()
        self.count = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                keep = headers.get("connection", "").lower() != "close"
                await self.route(method, path.split("?", 1)[0], headers, body, writer)
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def route(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        w: asyncio.StreamWriter,
    ) -> None:
        if method == "GET" and path == "/health":
            return await self.send(w, 200, {"status": "ok"})
        if self.key and headers.get("authorization", "") != f"Bearer {self.key}":
            return await self.send(w, 401, {"error": {"message": "bad or missing API key"}})
        if method == "GET" and path == "/v1/models":
            return await self.send(w, 200, {"object": "list", "data": [{"id": self.model}]})
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            return await self.send(w, 404, {"error": {"message": f"no route {path}"}})
        try:
            req = json.loads(body)
        except ValueError:
            return await self.send(w, 400, {"error": {"message": "body is not JSON"}})
        self.count += 1
        if self.args.fail_every and self.count % self.args.fail_every == 0:
            return await self.send(w, 500, {"error": {"message": "injected failure"}})
        chat = path.endswith("/chat/completions")
        n = int(req.get("max_completion_tokens") or req.get("max_tokens") or 16)
        if chat:
            prompt = " ".join(str(m.get("content", "")) for m in req.get("messages", []))
        else:
            prompt = str(req.get("prompt", ""))
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": n,
            "total_tokens": len(prompt.split()) + n,
        }
        rid = f"cmpl-{os.getpid()}-{self.count}"
        kind = "chat.completion" if chat else "text_completion"
        words = [VOCAB[(self.count + i) % len(VOCAB)] for i in range(n)]
        ttft = self.args.ttft if self.args.ttft is not None else self.args.token_delay
        if not req.get("stream"):
            await asyncio.sleep(ttft + self.args.token_delay * (n - 1))
            text = " ".join(words)
            choice: dict[str, object] = {"index": 0, "finish_reason": "length"}
            if chat:
                choice["message"] = {"role": "assistant", "content": text}
            else:
                choice["text"] = text
            doc = {"id": rid, "object": kind, "model": self.model, "choices": [choice]}
            return await self.send(w, 200, {**doc, "usage": usage})
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        start = time.monotonic()
        for i, word in enumerate(words):
            due = start + ttft + self.args.token_delay * i
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            text = word if i == 0 else " " + word
            last = i == n - 1
            if chat:
                delta: dict[str, str] = {"content": text}
                if i == 0:
                    delta["role"] = "assistant"
                ch: dict[str, object] = {"index": 0, "delta": delta}
            else:
                ch = {"index": 0, "text": text}
            ch["finish_reason"] = "length" if last else None
            chunk = {"id": rid, "object": f"{kind}.chunk" if chat else kind,
                     "model": self.model, "choices": [ch]}  # fmt: skip
            await self.chunk(w, chunk)
        opts = req.get("stream_options") or {}
        if opts.get("include_usage"):
            await self.chunk(w, {"id": rid, "object": kind, "model": self.model,
                                 "choices": [], "usage": usage})  # fmt: skip
        await self.raw_chunk(w, b"data: [DONE]\n\n")
        w.write(b"0\r\n\r\n")
        await w.drain()

    async def chunk(self, w: asyncio.StreamWriter, doc: dict[str, object]) -> None:
        await self.raw_chunk(w, b"data: " + json.dumps(doc).encode() + b"\n\n")

    async def raw_chunk(self, w: asyncio.StreamWriter, data: bytes) -> None:
        w.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await w.drain()

    async def send(self, w: asyncio.StreamWriter, code: int, doc: dict[str, object]) -> None:
        body = json.dumps(doc).encode()
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}.get(
            code, "Internal Server Error"
        )
        w.write(
            f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await w.drain()


async def serve(args: argparse.Namespace, ready_fd: int | None) -> None:
    backend = Backend(args)
    server = await asyncio.start_server(backend.handle, args.host, args.port, backlog=512)
    print(f"serving {args.model} on {args.host}:{args.port}", flush=True)
    if ready_fd is not None:
        os.write(ready_fd, b"ok")
        os.close(ready_fd)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def daemonize(args: argparse.Namespace) -> int | None:
    """Fork twice; the parent returns (exit code) once the child listens, the child None."""
    r, w = os.pipe()
    if os.fork() > 0:
        os.close(w)
        got = os.read(r, 2)
        return 0 if got == b"ok" else 1
    os.close(r)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    log = os.open(args.log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    if args.pidfile:
        Path(args.pidfile).write_text(str(os.getpid()))
    args.ready_fd = w
    return None


def stop(pidfile: str) -> int:
    try:
        pid = int(Path(pidfile).read_text())
    except (OSError, ValueError):
        print(f"stop: no pid in {pidfile}", file=sys.stderr)
        return 1
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    print(f"stopped {pid}", flush=True)
    return 0


def write_tokenizer(folder: str) -> int:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", *VOCAB, *(f"w{i}" for i in range(2000))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>",
           "model_max_length": 1_000_000}  # fmt: skip
    (out / "tokenizer_config.json").write_text(json.dumps(cfg))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--model", default="stub-model")
    s.add_argument("--token-delay", type=float, default=0.01, help="seconds between tokens")
    s.add_argument("--ttft", type=float, default=None, help="seconds to the first token")
    s.add_argument("--fail-every", type=int, default=0)
    s.add_argument("--api-key-env", default="")
    s.add_argument("--api-key-file", default="")
    s.add_argument("--daemon", action="store_true")
    s.add_argument("--pidfile", default="")
    s.add_argument("--log", default="")
    k = sub.add_parser("stop")
    k.add_argument("--pidfile", required=True)
    t = sub.add_parser("write-tokenizer")
    t.add_argument("folder")
    args = p.parse_args(argv)
    if args.cmd == "stop":
        return stop(args.pidfile)
    if args.cmd == "write-tokenizer":
        return write_tokenizer(args.folder)
    args.ready_fd = None
    if args.daemon:
        code = daemonize(args)
        if code is not None:
            return code
    elif args.pidfile:
        Path(args.pidfile).write_text(str(os.getpid()))
    asyncio.run(serve(args, args.ready_fd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
