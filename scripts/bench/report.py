#!/usr/bin/env python3
"""Turn the wrk outputs of scripts/bench.sh into docs/benchmarks.md.

    report.py --meta META.json --runs DIR --out docs/benchmarks.md [--strict]

DIR holds a.txt .. e.txt (wrk --latency output, plus the BENCH_SCRIPT lines of the Lua
scripts). META.json holds the run's settings and facts (see scripts/bench.sh). Prints a short
summary; with --strict exits 1 when a target check fails or a run had errors.
Standard library only.
"""

import argparse
import json
import os
import re
import sys

SCENARIOS = [
    ("a", "cofferd `GET /health` (unauthenticated floor)"),
    ("b", "cofferd `GET /rest/users/me` (Bearer token, `X-Coffer-Version: 28`)"),
    ("c", "cofferd `POST /oauth/token` `refresh_token` (rotating, one chain per connection)"),
    ("d", "cofferd `POST /oauth/token` JWT bearer assertion (RS256, single-use jti)"),
    ("e", "oidc-peer `POST /token` `client_credentials`"),
]

UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def to_ms(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text.strip())
    if not m:
        return None
    return float(m.group(1)) * UNIT_MS[m.group(2)]


def parse_wrk(text):
    """The numbers of one wrk --latency run, or None for those it did not print."""
    r = {"rps": None, "p50": None, "p99": None, "requests": None, "non2xx": 0, "socket_errors": 0,
         "script_ok": None, "script_errors": None, "exhausted": 0, "first_error": None}
    m = re.search(r"^Requests/sec:\s+([0-9.]+)", text, re.M)
    if m:
        r["rps"] = float(m.group(1))
    for pct, key in (("50", "p50"), ("99", "p99")):
        m = re.search(r"^\s+" + pct + r"%\s+(\S+)", text, re.M)
        if m:
            r[key] = to_ms(m.group(1))
    m = re.search(r"^\s+(\d+) requests in", text, re.M)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if m:
        r["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r["socket_errors"] = sum(int(x) for x in m.groups())
    m = re.search(r"^BENCH_SCRIPT ok=(\d+) errors=(\d+) exhausted=(\d+)", text, re.M)
    if m:
        r["script_ok"], r["script_errors"], r["exhausted"] = (int(x) for x in m.groups())
    m = re.search(r"^BENCH_FIRST_ERROR (.*)$", text, re.M)
    if m:
        r["first_error"] = m.group(1).strip()
    return r


def errors_of(r):
    """Failed requests of a run: non-2xx, socket errors, and what the Lua script rejected."""
    if r is None or r["rps"] is None:
        return None
    return max(r["non2xx"], r["script_errors"] or 0) + r["socket_errors"]


def fmt_num(x, digits=0):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def fmt_ms(x):
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meta", required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()

    with open(args.meta) as f:
        meta = json.load(f)
    runs = {}
    for key, _ in SCENARIOS:
        path = os.path.join(args.runs, f"{key}.txt")
        runs[key] = parse_wrk(open(path).read()) if os.path.exists(path) else None

    def rps(k):
        return runs[k]["rps"] if runs[k] else None

    def clean(k):
        return errors_of(runs[k]) == 0 and not (runs[k] or {}).get("exhausted")

    checks = []

    def check(name, value_text, ok, needs):
        dirty = [k for k in needs if not clean(k)]
        if ok is None:
            verdict = "FAIL (no result)"
        elif dirty:
            verdict = "FAIL (errors in run " + ", ".join(f"({k})" for k in dirty) + ")"
        else:
            verdict = "PASS" if ok else "FAIL"
        checks.append((name, value_text, verdict))

    a, b, c, d, e = rps("a"), rps("b"), rps("c"), rps("d"), rps("e")
    if a and b is not None:
        check("(b) ≥ 35% of (a) requests/s", f"{100 * b / a:.1f}% ({fmt_num(b)} / {fmt_num(a)})",
              b >= 0.35 * a, "ab")
    else:
        check("(b) ≥ 35% of (a) requests/s", "—", None, "ab")
    if e and c is not None:
        check("(c) ≥ 1.5 × (e) requests/s", f"{c / e:.2f}× ({fmt_num(c)} / {fmt_num(e)})",
              c >= 1.5 * e, "ce")
    else:
        check("(c) ≥ 1.5 × (e) requests/s", "—", None, "ce")
    if e and d is not None:
        check("(d) ≥ 2 × (e) requests/s", f"{d / e:.2f}× ({fmt_num(d)} / {fmt_num(e)})",
              d >= 2 * e, "de")
    else:
        check("(d) ≥ 2 × (e) requests/s", "—", None, "de")
    p99b = runs["b"]["p99"] if runs["b"] else None
    check("p99 of (b) < 10 ms", f"{fmt_ms(p99b)} ms" if p99b is not None else "—",
          None if p99b is None else p99b < 10.0, "b")
    hwm_kb = meta.get("cofferd_vmhwm_kb")
    limit_kb = 150 * 1024
    check("cofferd peak RSS < 150 MiB",
          f"{hwm_kb / 1024:.1f} MiB" if hwm_kb else "—",
          None if not hwm_kb else hwm_kb < limit_kb, "")

    lines = []
    w = lines.append
    w("# Benchmarks")
    w("")
    w("Written by `scripts/bench.sh` (`just bench`); rerun it to refresh this page. Raw wrk output of the")
    w("latest run is in `bench-out/` (not committed).")
    w("")
    w("## Run")
    w("")
    w(f"- Date: {meta.get('date')}")
    w(f"- Machine: {meta.get('nproc')} cores, {meta.get('cpu_model')}, {meta.get('mem_total')} memory, "
      f"Linux {meta.get('kernel')}")
    w(f"- Commit: `{meta.get('commit')}`{' (with uncommitted changes)' if meta.get('dirty') else ''}")
    w(f"- cofferd: release build (`cargo build --release -p cofferd`), SQLite in a fresh data directory, "
      f"`RUST_LOG=warn`, listening on 127.0.0.1; extra environment: `{meta.get('cofferd_env') or 'none'}`")
    w(f"- Peer: oidc-provider {meta.get('peer_version')} on Node.js {meta.get('node_version')} "
      f"(`../shared/bench/oidc-peer`, in-memory store), 127.0.0.1")
    w(f"- Load generator: {meta.get('wrk_version')}, one wrk per scenario, "
      f"`-t {meta.get('threads')} -c {meta.get('connections')} -d {meta.get('seconds')}s "
      f"--timeout {meta.get('timeout')} --latency` for all five scenarios (one connection per wrk "
      f"thread, which the refresh-token chains need); a {meta.get('warmup')}s warm-up run before (a), "
      f"(b) and (e), none before (c) and (d), whose tokens and assertions are single use. wrk, the "
      f"server and the peer share the same {meta.get('nproc')} cores.")
    w(f"- Scenarios run one after another; cofferd is stopped before the peer runs. JWT assertions: "
      f"{meta.get('jwt_count')} pre-generated ({meta.get('jwt_per_thread')} per connection), "
      f"generated just before (d).")
    w("")
    w("## Results")
    w("")
    w("| scenario | requests/s | p50 ms | p99 ms | requests | non-2xx | socket errors | script-rejected |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    flagged = []
    for key, title in SCENARIOS:
        r = runs[key]
        if r is None or r["rps"] is None:
            w(f"| ({key}) {title} | no result | | | | | | |")
            flagged.append(f"({key}) produced no result (see bench-out/{key}.txt)")
            continue
        errs = errors_of(r)
        mark = " ⚠" if errs or r["exhausted"] else ""
        se = "—" if r["script_errors"] is None else fmt_num(r["script_errors"])
        w(f"| ({key}) {title}{mark} | {fmt_num(r['rps'])} | {fmt_ms(r['p50'])} | {fmt_ms(r['p99'])} | "
          f"{fmt_num(r['requests'])} | {fmt_num(r['non2xx'])} | {fmt_num(r['socket_errors'])} | {se} |")
        if errs:
            note = f"({key}) had {errs} failed requests"
            if r["first_error"]:
                note += f"; first: `{r['first_error'][:200]}`"
            flagged.append(note)
        if r["exhausted"]:
            flagged.append(f"({key}) ran out of pre-generated assertions on {r['exhausted']} connections: "
                           f"its requests/s is a lower bound (raise BENCH_JWT_RATE)")
    w("")
    w(f"cofferd peak RSS (VmHWM after (a)–(d)): "
      f"{(hwm_kb / 1024):.1f} MiB" if hwm_kb else "cofferd peak RSS: not measured")
    wal = meta.get("wal_peak_bytes")
    if wal:
        w("")
        w(f"SQLite WAL (`coffer.db-wal`) at its largest during (c), sampled every 0.2 s: "
          f"{wal / 1048576:.1f} MiB (the writer checkpoints in its commit past 32 MiB; "
          f"`docs/performance.md`)")
    w("")
    if flagged:
        w("**Flagged runs — their numbers are not valid measurements:**")
        w("")
        for f_ in flagged:
            w(f"- {f_}")
        w("")
    else:
        w("Every request of every run succeeded.")
        w("")
    for note in meta.get("notes", []):
        w(f"- {note}")
    if meta.get("notes"):
        w("")
    w("## Targets")
    w("")
    w("| check | measured | result |")
    w("|---|---|---|")
    for name, value, verdict in checks:
        w(f"| {name} | {value} | **{verdict}** |")
    w("")
    w("What was measured and changed, and what limits the write path: `docs/performance.md`.")
    w("")
    w("Webhook delivery: `docs/benchmarks-webhooks.md`.")
    w("")
    w("SCIM listing: `docs/benchmarks-scim.md`.")
    w("")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))

    print("scenario   req/s       p50 ms    p99 ms    errors")
    for key, _ in SCENARIOS:
        r = runs[key]
        if r is None or r["rps"] is None:
            print(f"({key})        no result")
            continue
        flag = "  <-- ERRORS" if errors_of(r) else ""
        flag += "  <-- EXHAUSTED" if r["exhausted"] else ""
        print(f"({key})  {fmt_num(r['rps']):>12}  {fmt_ms(r['p50']):>8}  {fmt_ms(r['p99']):>8}  "
              f"{errors_of(r):>8}{flag}")
    print(f"cofferd peak RSS: {hwm_kb / 1024:.1f} MiB" if hwm_kb else "cofferd peak RSS: —")
    for name, value, verdict in checks:
        print(f"{verdict:<6} {name}: {value}")
    for f_ in flagged:
        print("FLAGGED: " + f_)
    print(f"wrote {args.out}")
    failed = flagged or any(not v.startswith("PASS") for _, _, v in checks)
    if args.strict and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
