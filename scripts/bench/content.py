#!/usr/bin/env python3
"""The HTTP client of the content benchmarks (scripts/bench-content.sh). Standard library only.

    content.py upload --base URL --token T --folder ID --file PATH --chunk BYTES --name NAME --out F
        (f) one chunked upload of PATH: POST /rest/folders/ID/actions/initiateUpload, then the
        chunks in order to POST /rest/uploads/{id} (multipart: compressionMode=NORMAL,
        compressionSize, originalSize, index from 1, lastChunk, then `content`), one keep-alive
        connection, each chunk's bytes sent from the file with sendfile(2). The time runs from the
        initiate request to the 201 of the last chunk. The SHA3-256 of PATH is computed first
        (untimed) and compared with the file's `fingerprint`. Writes a JSON result to F.

    content.py seed --base URL --token T --folder ID --count N --size BYTES --threads K --out F
        N one-shot uploads (POST /rest/folders/ID/actions/file, the file in `body`), each with its
        own name and content, over K keep-alive connections; for the listing of (i).

    content.py fetch --url URL --token T [--sha3 HEX] [--bytes N]
        one streamed GET, hashed; checks the size and the SHA3-256 when given. Prints
        `ok BYTES SECONDS` or `FAIL ...` (exit 1).

Every /rest request carries `Authorization: Bearer T` and `X-Coffer-Version: 28`.
"""

import argparse
import hashlib
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

VERSION = "28"
BOUNDARY = "coffer-bench-7d1f0c2a9b"


def connect(base):
    u = urllib.parse.urlsplit(base)
    if u.scheme != "http":
        raise SystemExit(f"content.py: only http:// bases ({base})")
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)


def headers(token, extra=None):
    h = {"Authorization": f"Bearer {token}", "X-Coffer-Version": VERSION}
    h.update(extra or {})
    return h


def answer(conn):
    """Status and body of the pending response (the body parsed as JSON when it is JSON)."""
    resp = conn.getresponse()
    raw = resp.read()
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw[:300].decode("utf-8", "replace")
    return resp.status, body


def text_part(name, value):
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
            f"{value}\r\n").encode()


def file_head(name, filename):
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; "
            f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()


TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def sha3_of(path):
    h = hashlib.sha3_256()
    with open(path, "rb") as f:
        while True:
            b = f.read(4 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def fail(msg, out=None, result=None):
    if out and result is not None:
        result["error"] = msg
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"content.py: {msg}", file=sys.stderr)
    sys.exit(1)


def upload(args):
    size = os.path.getsize(args.file)
    chunk = args.chunk
    chunks = max(1, -(-size // chunk))
    result = {"bytes": size, "chunk_bytes": chunk, "chunks": chunks}
    expected = sha3_of(args.file)
    conn = connect(args.base)
    path = f"/rest/folders/{urllib.parse.quote(args.folder, safe='')}/actions/initiateUpload"
    with open(args.file, "rb") as src:
        started = time.monotonic()
        body = json.dumps({"filename": args.name, "totalSize": size, "totalChunks": chunks})
        conn.request("POST", path, body=body,
                     headers=headers(args.token, {"Content-Type": "application/json"}))
        status, up = answer(conn)
        if status != 201 or not isinstance(up, dict) or "id" not in up:
            fail(f"initiateUpload answered HTTP {status}: {str(up)[:300]}", args.out, result)
        chunk_path = f"/rest/uploads/{up['id']}"
        done = None
        for index in range(1, chunks + 1):
            offset = (index - 1) * chunk
            n = min(chunk, size - offset)
            last = index == chunks
            head = b"".join([
                text_part("compressionMode", "NORMAL"),
                text_part("compressionSize", n),
                text_part("originalSize", n),
                text_part("index", index),
                text_part("lastChunk", 1 if last else 0),
                file_head("content", f"chunk-{index}"),
            ])
            conn.putrequest("POST", chunk_path, skip_accept_encoding=True)
            for k, v in headers(args.token, {"Content-Type": MULTIPART}).items():
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(head) + n + len(TAIL)))
            conn.endheaders()
            conn.sock.sendall(head)
            sent = 0
            while sent < n:
                k = conn.sock.sendfile(src, offset + sent, n - sent)
                if k == 0:
                    fail(f"chunk {index}: the source file ended early", args.out, result)
                sent += k
            conn.sock.sendall(TAIL)
            status, body = answer(conn)
            want = 201 if last else 200
            if status != want:
                fail(f"chunk {index}/{chunks} answered HTTP {status} (expected {want}): "
                     f"{str(body)[:300]}", args.out, result)
            if last:
                done = body
        seconds = time.monotonic() - started
    conn.close()
    result.update({
        "seconds": seconds,
        "mib_s": size / 1048576 / seconds,
        "file_id": done.get("id") if isinstance(done, dict) else None,
        "size_ok": isinstance(done, dict) and done.get("size") == size,
        "fingerprint_ok": isinstance(done, dict) and done.get("fingerprint") == expected,
        "sha3": expected,
    })
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"uploaded {size} bytes in {chunks} chunks in {seconds:.2f} s "
          f"({result['mib_s']:.1f} MiB/s); size ok: {result['size_ok']}, "
          f"fingerprint ok: {result['fingerprint_ok']}")
    if not (result["file_id"] and result["size_ok"] and result["fingerprint_ok"]):
        fail(f"the uploaded file does not match its source: {str(done)[:300]}", args.out, result)


def seed(args):
    path = f"/rest/folders/{urllib.parse.quote(args.folder, safe='')}/actions/file"
    filler = os.urandom(args.size)
    lock = threading.Lock()
    state = {"next": 0, "ok": 0, "errors": 0, "first_error": ""}

    def worker():
        conn = connect(args.base)
        while True:
            with lock:
                if state["next"] >= args.count:
                    break
                state["next"] += 1
                n = state["next"]
            name = f"entry-{n:05d}.bin"
            content = (name.encode() + filler)[: args.size]
            body = file_head("body", name) + content + TAIL
            try:
                conn.request("POST", path, body=body,
                             headers=headers(args.token, {"Content-Type": MULTIPART}))
                status, resp = answer(conn)
            except (OSError, http.client.HTTPException) as e:
                status, resp = 0, repr(e)
                conn.close()
                conn = connect(args.base)
            with lock:
                if status == 200:
                    state["ok"] += 1
                else:
                    state["errors"] += 1
                    if not state["first_error"]:
                        state["first_error"] = f"{name}: HTTP {status} {str(resp)[:200]}"
        conn.close()

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(max(1, args.threads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    result = {"count": args.count, "ok": state["ok"], "errors": state["errors"],
              "first_error": state["first_error"], "seconds": seconds}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"seeded {state['ok']} of {args.count} files in {seconds:.1f} s "
          f"({state['ok'] / seconds:.0f} files/s), {state['errors']} errors")
    if state["errors"]:
        fail(f"seeding failed: {state['first_error']}")


def fetch(args):
    u = urllib.parse.urlsplit(args.url)
    conn = connect(f"{u.scheme}://{u.netloc}")
    h = headers(args.token) if args.token else {}
    started = time.monotonic()
    conn.request("GET", u.path + (f"?{u.query}" if u.query else ""), headers=h)
    resp = conn.getresponse()
    digest = hashlib.sha3_256()
    n = 0
    while True:
        b = resp.read(4 << 20)
        if not b:
            break
        digest.update(b)
        n += len(b)
    seconds = time.monotonic() - started
    problems = []
    if resp.status != 200:
        problems.append(f"HTTP {resp.status}")
    if args.bytes is not None and n != args.bytes:
        problems.append(f"{n} bytes (expected {args.bytes})")
    if args.sha3 and digest.hexdigest() != args.sha3:
        problems.append("SHA3-256 differs from the source")
    if problems:
        print("FAIL " + "; ".join(problems))
        sys.exit(1)
    print(f"ok {n} {seconds:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("upload")
    u.add_argument("--base", required=True)
    u.add_argument("--token", required=True)
    u.add_argument("--folder", required=True)
    u.add_argument("--file", required=True)
    u.add_argument("--chunk", type=int, required=True)
    u.add_argument("--name", required=True)
    u.add_argument("--out", required=True)
    s = sub.add_parser("seed")
    s.add_argument("--base", required=True)
    s.add_argument("--token", required=True)
    s.add_argument("--folder", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--size", type=int, default=4096)
    s.add_argument("--threads", type=int, default=4)
    s.add_argument("--out", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--url", required=True)
    f.add_argument("--token")
    f.add_argument("--sha3")
    f.add_argument("--bytes", type=int)
    args = p.parse_args()
    if args.cmd == "upload":
        if args.chunk < 1:
            p.error("--chunk must be positive")
        upload(args)
    elif args.cmd == "seed":
        if args.count < 1 or args.size < 32:
            p.error("--count must be positive and --size at least 32")
        seed(args)
    else:
        fetch(args)


if __name__ == "__main__":
    main()
