#!/usr/bin/env python3
"""Pre-generate single-use RS256 JWT assertions for the jwt-bearer grant benchmark.

    assertions.py generate --key PRIVATE.pem --iss CLIENT_ID --sub EMAIL --aud URL \
                           --count N --files F --out DIR [--lifetime 290] [--procs P]
        writes DIR/assert.1 .. DIR/assert.F, one compact JWT per line, N in all (spread evenly),
        each with its own jti; signing runs in P processes (default: the number of cores).

    assertions.py verify --pub PUBLIC.pem FILE [--limit 5] [--aud URL]
        decodes and verifies the first assertions of FILE and prints their claims.

Needs the PyPI package `cryptography` (scripts/bench.sh installs it into a venv when missing).
The JWT encoding is done by hand: base64url(header).base64url(claims).base64url(RS256 signature).
"""

import argparse
import base64
import json
import multiprocessing
import os
import sys
import time
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


HEADER = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}, separators=(",", ":")).encode())


def _work(job):
    """Write the files of one worker: job = (key_path, claims_base, lifetime, [(path, count), ...])."""
    key_path, base, lifetime, files = job
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    written = 0
    for path, count in files:
        lines = []
        for _ in range(count):
            now = int(time.time())
            claims = dict(base, iat=now, exp=now + lifetime, jti=uuid.uuid4().hex)
            signing_input = HEADER + "." + b64url(json.dumps(claims, separators=(",", ":")).encode())
            sig = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
            lines.append(signing_input + "." + b64url(sig))
        with open(path, "w") as f:
            f.write("\n".join(lines))
            f.write("\n")
        written += count
    return written


def generate(args):
    os.makedirs(args.out, exist_ok=True)
    base = {"iss": args.iss, "sub": args.sub, "aud": args.aud}
    per, extra = divmod(args.count, args.files)
    files = [
        (os.path.join(args.out, f"assert.{i + 1}"), per + (1 if i < extra else 0))
        for i in range(args.files)
    ]
    procs = max(1, min(args.procs or os.cpu_count() or 1, len(files)))
    jobs = [(args.key, base, args.lifetime, files[k::procs]) for k in range(procs)]
    started = time.time()
    if procs == 1:
        total = _work(jobs[0])
    else:
        with multiprocessing.Pool(procs) as pool:
            total = sum(pool.map(_work, jobs))
    print(
        f"generated {total} assertions in {len(files)} files with {procs} processes "
        f"in {time.time() - started:.1f}s",
        file=sys.stderr,
    )


def verify(args):
    with open(args.pub, "rb") as f:
        pub = serialization.load_pem_public_key(f.read())
    seen = set()
    now = int(time.time())
    with open(args.file) as f:
        for n, line in enumerate(f):
            if n >= args.limit:
                break
            token = line.strip()
            head_b64, claims_b64, sig_b64 = token.split(".")
            header = json.loads(b64url_decode(head_b64))
            claims = json.loads(b64url_decode(claims_b64))
            pub.verify(
                b64url_decode(sig_b64),
                f"{head_b64}.{claims_b64}".encode("ascii"),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )  # raises InvalidSignature
            assert header == {"alg": "RS256", "typ": "JWT"}, header
            assert claims["exp"] - claims["iat"] <= 300, claims
            assert claims["iat"] <= now + 1 and claims["exp"] > now, claims
            assert claims["jti"] not in seen, "duplicate jti"
            if args.aud:
                assert claims["aud"] == args.aud, claims
            seen.add(claims["jti"])
            print(json.dumps({"header": header, "claims": claims, "signature": "ok"}))
    print(f"verified {len(seen)} assertions", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--key", required=True)
    g.add_argument("--iss", required=True)
    g.add_argument("--sub", required=True)
    g.add_argument("--aud", required=True)
    g.add_argument("--count", type=int, required=True)
    g.add_argument("--files", type=int, default=1)
    g.add_argument("--out", required=True)
    g.add_argument("--lifetime", type=int, default=290)
    g.add_argument("--procs", type=int, default=0)
    v = sub.add_parser("verify")
    v.add_argument("--pub", required=True)
    v.add_argument("--limit", type=int, default=5)
    v.add_argument("--aud")
    v.add_argument("file")
    args = p.parse_args()
    if args.cmd == "generate":
        if args.count < 1 or args.files < 1:
            p.error("--count and --files must be positive")
        generate(args)
    else:
        verify(args)


if __name__ == "__main__":
    main()
