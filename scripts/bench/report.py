#!/usr/bin/env python3
"""Turn the outputs of scripts/bench.sh and scripts/bench-content.sh into docs/benchmarks.md.

    report.py --meta META.json --runs DIR --out docs/benchmarks.md [--strict]
              [--keep-content | --content-failed]
        the whole page. DIR holds a.txt .. e.txt (wrk --latency output, plus the BENCH_SCRIPT
        lines of the Lua scripts) and, when the content benchmarks ran, content.json with
        content-g.txt and content-i.txt. META.json holds the run's settings and facts (see
        scripts/bench.sh). --keep-content keeps the content section of the page as it is (they
        did not run); --content-failed marks them failed when DIR has no content.json. Without
        either and without content.json the section says "not measured yet" and states the
        targets.

    report.py --content-only --runs DIR --out docs/benchmarks.md [--strict]
        only the content section (the last of the page), from DIR; the rest of the page stays.

Prints a short summary; with --strict exits 1 when a target check fails or a run had errors.
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


def rounds_text(s):
    """How many rounds of (f) were run (the best of each side is compared)."""
    n = s.get("upload_round_count") or 1
    if n == 1:
        return ""
    return (f"{n} rounds, each the two floors then one upload of bytes of its own (no round's "
            f"content already stored); the best floor of each kind and the best upload are "
            f"compared. ")


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


# --- the content section (scripts/bench-content.sh) ---------------------------------------------

CONTENT_HEADING = "## Content: uploads, downloads and listings"
MB = 1_000_000
MIB = 1_048_576
# The targets of (f)-(j), and the settings of the scenarios when they have not run.
# (f): of the lower of its two floors measured in the same run, `dd` and one sha3-256 stream.
UPLOAD_OF_FLOOR = 0.75
SMALL_FILES_PER_S = 200
DOWNLOAD_OF_NGINX = 0.70
LIST_P99_MS = 20.0
CONTENT_RSS_MB = 150
CONTENT_DEFAULTS = {"upload_mib": 1024, "chunk_mib": 10, "small_clients": 8, "small_bytes": 4096,
                    "list_entries": 1000, "connections": 32, "download_reps": 3, "seconds": 10,
                    "warmup": 2}


def size_text(mib):
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib:,} MiB"


def load_content(runs_dir):
    """content.json of DIR with the parsed wrk runs of (g) and (i), or None."""
    path = os.path.join(runs_dir, "content.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        c = json.load(f)
    for key in "gi":
        p = os.path.join(runs_dir, f"content-{key}.txt")
        c[f"wrk_{key}"] = parse_wrk(open(p).read()) if os.path.exists(p) else None
    return c


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def content_section(c, failed=False):
    """The content section: (lines, checks, flagged). c is load_content's result; None when the
    benchmarks did not run (failed: they ran and produced nothing)."""
    s = dict(CONTENT_DEFAULTS)
    if c:
        s.update({k: c[k] for k in CONTENT_DEFAULTS if k in c})
    size = size_text(s["upload_mib"])
    lines = []
    w = lines.append
    w(CONTENT_HEADING)
    w("")
    w("Written by `scripts/bench-content.sh`, which `scripts/bench.sh` runs after (a)–(e) "
      "(`BENCH_CONTENT=0` skips it and keeps this section) and which runs alone too "
      "(`BENCH_ONLY=content scripts/bench.sh`), rewriting only this section. Raw output: "
      "`bench-out/content*`.")
    w("")
    w("How it is measured: a fresh cofferd (its own process, SQLite and the local blob store in a "
      "data directory under the temporary directory, so on that directory's disk; `storageQuota` "
      "and `maxUploadSize` raised with `cofferd settings set`), one user and a password-grant "
      "token; every `/rest` call carries it and `X-Coffer-Version: 28`. One scenario after another:")
    w("")
    w(f"- (f) a {size} file of random bytes uploaded in {s['chunk_mib']} MiB chunks, in order "
      f"(`POST /rest/folders/{{id}}/actions/initiateUpload`, then each chunk to "
      f"`POST /rest/uploads/{{id}}`, multipart, on one keep-alive connection, the bytes sent from "
      f"the file with `sendfile(2)` by `scripts/bench/content.py`), timed from the initiate request "
      f"to the 201 of the last chunk; the file's size and SHA3-256 fingerprint are checked, and one "
      f"streamed download of it. Two floors, measured in the same run: the disk, `dd if=/dev/zero "
      f"of=<temporary directory> bs=1M count={s['upload_mib']} conv=fdatasync`, timed, on the same "
      f"disk; and the fingerprint, one `openssl dgst -sha3-256` stream over the same file from "
      f"memory (Coffer names content by its sha3-256, computed as the bytes arrive, and no single "
      f"sha3-256 stream goes faster). {rounds_text(s)}The upload is compared with the lower of the "
      f"two. Coffer "
      f"appends each chunk to one staging file, hashing it with sha3-256 on one thread and md5 "
      f"beside the write on another as it arrives, and at the end fsyncs that file and links it "
      f"into place (`docs/storage.md`).")
    w(f"- (g) {s['small_bytes']:,}-byte files uploaded one shot "
      f"(`POST /rest/folders/{{id}}/actions/file`, the file in `body`), each with its own name and "
      f"content, by {s['small_clients']} concurrent clients: `wrk -t {s['small_clients']} "
      f"-c {s['small_clients']} -d {s['seconds']}s --latency` with `scripts/bench/upload.lua` after a "
      f"{s['warmup']}s warm-up; a response is good when it is 200 with the file.")
    w(f"- (h) the file of (f) downloaded (`GET /rest/files/{{id}}/content`) against nginx serving "
      f"the same source file from the same disk (`sendfile on`, one process, a spare loopback "
      f"port): `curl -o /dev/null`, {s['download_reps']} times each, alternating; the best of each "
      f"is compared (the median is shown too).")
    w(f"- (i) a folder of {s['list_entries']:,} files of 4 KiB listed: "
      f"`GET /rest/folders/{{id}}/children?limit={s['list_entries']}`, `wrk -t {s.get('list_threads', 2)} "
      f"-c {s['connections']} -d {s['seconds']}s --latency` after a warm-up, once cofferd is idle "
      f"again after seeding the folder; a preflight checks the number of entries.")
    w("- (j) cofferd's peak RSS: `VmHWM` of `/proc/PID/status`, reset with "
      "`echo 5 > /proc/PID/clear_refs` before (f) and read after (h).")
    w("")

    checks = []
    flagged = []
    targets = [
        ("f", f"(f) upload ≥ {UPLOAD_OF_FLOOR:.0%} of the lower floor (`dd`, sha3-256) MiB/s"),
        ("g", f"(g) ≥ {SMALL_FILES_PER_S} files/s"),
        ("h", f"(h) download ≥ {DOWNLOAD_OF_NGINX:.0%} of nginx MiB/s"),
        ("i", f"(i) p99 of the listing < {LIST_P99_MS:.0f} ms"),
        ("j", f"(j) cofferd peak RSS < {CONTENT_RSS_MB} MB"),
    ]
    if not c:
        if failed:
            w("**No result:** `scripts/bench-content.sh` failed in this run (see its output and "
              "`bench-out/content*`).")
        else:
            w("**Not measured yet.** Run `scripts/bench-content.sh` (or `just bench`) with a release "
              "build on a quiet machine; the figures and the checks below then fill in.")
        w("")
        w("### Content targets")
        w("")
        w("| check | measured | result |")
        w("|---|---|---|")
        for _, name in targets:
            verdict = "FAIL (no result)" if failed else "—"
            w(f"| {name} | {'no result' if failed else 'not measured yet'} | "
              f"{'**' + verdict + '**' if failed else verdict} |")
            if failed:
                checks.append((name, "—", verdict))
        w("")
        return lines, checks, flagged

    # the figures
    up = c.get("upload") or {}
    up_ok = bool(up) and not up.get("error") and up.get("size_ok") and up.get("fingerprint_ok")
    up_mib_s = up.get("mib_s") if up_ok else None
    dd = c.get("dd") or {}
    dd_mib_s = dd["bytes"] / MIB / dd["seconds"] if dd.get("seconds") else None
    dg = c.get("digests") or {}
    dg_mib_s = dg["bytes"] / MIB / dg["seconds"] if dg.get("seconds") else None
    # The lower floor; both must have been measured.
    floor_mib_s = min(dd_mib_s, dg_mib_s) if dd_mib_s and dg_mib_s else None
    floor_name = ("`dd`" if floor_mib_s == dd_mib_s else "sha3-256") if floor_mib_s else ""
    total = c["upload_mib"] * MIB
    best, med, dl_bad = {}, {}, []
    for server in ("nginx", "cofferd"):
        runs_ = [d for d in c.get("downloads", []) if d["server"] == server]
        good = [total / MIB / d["seconds"] for d in runs_
                if d["http"] == "200" and d["bytes"] == total and d["seconds"] > 0]
        if len(good) != len(runs_) or not runs_:
            dl_bad.append(server)
        best[server] = max(good) if good else None
        med[server] = median(good)
    g, i = c.get("wrk_g"), c.get("wrk_i")
    hwm_kb = c.get("vmhwm_kb") or 0

    def check(name, value_text, ok, dirty=""):
        if ok is None:
            verdict = "FAIL (no result)"
        elif dirty:
            verdict = f"FAIL ({dirty})"
        else:
            verdict = "PASS" if ok else "FAIL"
        checks.append((name, value_text, verdict))

    def wrk_dirty(key, r):
        if r is None or r["rps"] is None:
            flagged.append(f"({key}) produced no result (see bench-out/content-{key}.txt)")
            return None
        errs = errors_of(r)
        if errs:
            note = f"({key}) had {errs} failed requests"
            if r["first_error"]:
                note += f"; first: `{r['first_error'][:200]}`"
            flagged.append(note)
            return "errors in the run"
        return ""

    g_dirty = wrk_dirty("g", g)
    i_dirty = wrk_dirty("i", i)
    if not up_ok:
        flagged.append(f"(f) the upload failed or its file did not match: "
                       f"`{str(up.get('error') or 'see bench-out/content-f.json')[:200]}`")
    for server in dl_bad:
        flagged.append(f"(h) a download from {server} failed or was short (see bench-out/content-h.txt)")

    def pct(a, b):
        return f"{100 * a / b:.1f}%" if a is not None and b else "—"

    def mibs(x):
        return "—" if x is None else f"{x:,.0f} MiB/s"

    w("### Content run")
    w("")
    w(f"- Date: {c.get('date')}")
    w(f"- Machine: {c.get('nproc')} cores, {c.get('cpu_model')}, {c.get('mem_total')} memory, "
      f"Linux {c.get('kernel')}; temporary directory on {c.get('fs_type')} (`{c.get('fs_source')}`)")
    w(f"- Commit: `{c.get('commit')}`{' (with uncommitted changes)' if c.get('dirty') else ''}")
    build = c.get("build")
    w(f"- cofferd: {build} build (`{c.get('cofferd_bin')}`), `RUST_LOG=warn`, 127.0.0.1; extra "
      f"environment: `{c.get('cofferd_env') or 'none'}`; `storageQuota` {c.get('storage_quota'):,}, "
      f"`maxUploadSize` {c.get('max_upload_size'):,}")
    if build != "release":
        w(f"- **Not a release build: these figures do not measure Coffer.**")
    w(f"- Tools: {c.get('wrk_version')}; {c.get('nginx_version')}; {c.get('curl_version')}; "
      f"all on the same {c.get('nproc')} cores as the servers")
    w("")
    w("### Content results")
    w("")
    w("| scenario | Coffer | reference | Coffer / reference |")
    w("|---|---|---|---:|")
    f_coffer = (f"{mibs(up_mib_s)} ({up.get('seconds', 0):.2f} s, {up.get('chunks')} chunks)"
                if up_ok else "no result ⚠")
    f_ref = f"`dd` {mibs(dd_mib_s)} ({dd.get('seconds', 0):.2f} s)" if dd_mib_s else "—"
    w(f"| (f) {size} upload in {c['chunk_mib']} MiB chunks, sequential | {f_coffer} | {f_ref} | "
      f"{pct(up_mib_s, dd_mib_s)} |")
    if dg_mib_s:
        w(f"| (f) the same upload against one sha3-256 stream | {mibs(up_mib_s)} | "
          f"`openssl dgst -sha3-256` {mibs(dg_mib_s)} ({dg['seconds']:.2f} s) | "
          f"{pct(up_mib_s, dg_mib_s)} |")
    if g and g["rps"] is not None:
        mark = " ⚠" if errors_of(g) else ""
        g_text = (f"{fmt_num(g['rps'])} files/s{mark}; p50 {fmt_ms(g['p50'])} ms, p99 {fmt_ms(g['p99'])} ms; "
                  f"{fmt_num(g['requests'])} files, {fmt_num(errors_of(g))} failed")
    else:
        g_text = "no result ⚠"
    w(f"| (g) {c['small_bytes']:,}-byte one-shot uploads, {c['small_clients']} clients | {g_text} | "
      f"target {SMALL_FILES_PER_S} files/s | — |")
    h_coffer = (f"best {mibs(best['cofferd'])}, median {mibs(med['cofferd'])}"
                f"{' ⚠' if 'cofferd' in dl_bad else ''}")
    h_ref = (f"nginx best {mibs(best['nginx'])}, median {mibs(med['nginx'])}"
             f"{' ⚠' if 'nginx' in dl_bad else ''}")
    w(f"| (h) {size} download, {c['download_reps']} each | {h_coffer} | {h_ref} | "
      f"{pct(best['cofferd'], best['nginx'])} |")
    if i and i["rps"] is not None:
        mark = " ⚠" if errors_of(i) else ""
        i_text = (f"{fmt_num(i['rps'])} requests/s{mark}; p50 {fmt_ms(i['p50'])} ms, p99 "
                  f"{fmt_ms(i['p99'])} ms; {fmt_num(i['requests'])} requests, {fmt_num(errors_of(i))} failed")
    else:
        i_text = "no result ⚠"
    w(f"| (i) listing of {c['list_entries']:,} entries ({c.get('list_bytes', 0) / 1024:,.0f} KiB of "
      f"JSON), {c['connections']} connections | {i_text} | target p99 {LIST_P99_MS:.0f} ms | — |")
    j_text = (f"{hwm_kb * 1024 / MB:.1f} MB ({hwm_kb / 1024:.1f} MiB); VmRSS {c.get('vmrss_before_kb', 0) / 1024:.1f} "
              f"MiB before (f), {c.get('vmrss_after_kb', 0) / 1024:.1f} MiB after (h)") if hwm_kb else "no result ⚠"
    if hwm_kb and not c.get("vmhwm_reset"):
        j_text += " (VmHWM not reset: the peak since start)"
    w(f"| (j) cofferd peak RSS over (f)–(h) | {j_text} | target {CONTENT_RSS_MB} MB | — |")
    rounds = c.get("upload_rounds") or []
    if len(rounds) > 1:
        mib = c["upload_mib"]

        def rate(secs):
            return f"{mib / secs:,.0f}" if secs else "failed"

        w("")
        w("(f) round by round, MiB/s (`dd`, sha3-256, upload): " + "; ".join(
            f"{r['round']}: {rate(r['dd_seconds'])}, {rate(r['digest_seconds'])}, "
            f"{rate(r['upload_seconds'])}" for r in rounds) + ".")
    seed = c.get("seed")
    if seed:
        w("")
        w(f"The {c['list_entries']:,} files of (i) were seeded in {seed.get('seconds', 0):.1f} s "
          f"(4 connections, one-shot uploads; {seed.get('errors', 0)} failed).")
    w("")
    if flagged:
        w("**Flagged — these numbers are not valid measurements:**")
        w("")
        for f_ in flagged:
            w(f"- {f_}")
        w("")
    for note in c.get("notes", []):
        w(f"- {note}")
    if c.get("notes"):
        w("")

    check(targets[0][1], f"{pct(up_mib_s, floor_mib_s)} ({mibs(up_mib_s)} / {floor_name} "
          f"{mibs(floor_mib_s)})" if up_mib_s and floor_mib_s else "—",
          None if not (up_mib_s and floor_mib_s) else up_mib_s >= UPLOAD_OF_FLOOR * floor_mib_s)
    g_rps = g["rps"] if g else None
    check(targets[1][1], f"{fmt_num(g_rps)} files/s" if g_rps is not None else "—",
          None if g_dirty is None else g_rps >= SMALL_FILES_PER_S, g_dirty or "")
    bc, bn = best["cofferd"], best["nginx"]
    check(targets[2][1], f"{pct(bc, bn)} ({mibs(bc)} / {mibs(bn)})" if bc and bn else "—",
          None if not (bc and bn) else bc >= DOWNLOAD_OF_NGINX * bn,
          "a download failed" if dl_bad and bc and bn else "")
    i_p99 = i["p99"] if i else None
    check(targets[3][1], f"{fmt_ms(i_p99)} ms" if i_p99 is not None else "—",
          None if i_dirty is None or i_p99 is None else i_p99 < LIST_P99_MS, i_dirty or "")
    check(targets[4][1], f"{hwm_kb * 1024 / MB:.1f} MB" if hwm_kb else "—",
          None if not hwm_kb else hwm_kb * 1024 < CONTENT_RSS_MB * MB)
    if build != "release":
        checks[:] = [(n, v, f"{verdict} (not a release build)") for n, v, verdict in checks]
    w("### Content targets")
    w("")
    w("| check | measured | result |")
    w("|---|---|---|")
    for name, value, verdict in checks:
        w(f"| {name} | {value} | **{verdict}** |")
    w("")
    return lines, checks, flagged


# The mail section (scripts/bench/mail.py writes it, after the content section): kept as it is
# by every rewrite of the rest of the page.
MAIL_HEADING = "## Mail: sending and outgoing SMTP"


def split_mail(text):
    """(the page before the mail section, the mail section or "") of a page's text."""
    at = text.find("\n" + MAIL_HEADING + "\n")
    if at < 0:
        return text, ""
    return text[: at + 1], text[at + 1:]


def old_mail(path):
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return split_mail(f.read())[1]


def split_content(text):
    """(the page before the content section, the section) of a page's text, without the mail
    section."""
    text = split_mail(text)[0]
    at = text.find("\n" + CONTENT_HEADING + "\n")
    if at < 0:
        return text, None
    return text[: at + 1], text[at + 1:]


def content_only(args):
    c = load_content(args.runs)
    lines, checks, flagged = content_section(c)
    page = ""
    if os.path.exists(args.out):
        with open(args.out) as f:
            page = f.read()
    head, _ = split_content(page)
    if not head.strip():
        head = "# Benchmarks\n\n"
    if not head.endswith("\n\n"):
        head = head.rstrip("\n") + "\n\n"
    mail = split_mail(page)[1]
    with open(args.out, "w") as f:
        f.write(head + "\n".join(lines) + ("\n" + mail if mail else ""))
    print_content_summary(c, checks, flagged)
    print(f"wrote the content section of {args.out}")
    if args.strict and (flagged or any(not v.startswith("PASS") for _, _, v in checks)):
        sys.exit(1)


def print_content_summary(c, checks, flagged):
    if not c and not checks:
        print("content: not measured")
        return
    for name, value, verdict in checks:
        print(f"{verdict:<6} {name}: {value}")
    for f_ in flagged:
        print("FLAGGED: " + f_)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meta")
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--content-only", action="store_true")
    ap.add_argument("--keep-content", action="store_true")
    ap.add_argument("--content-failed", action="store_true")
    args = ap.parse_args()
    if args.content_only:
        content_only(args)
        return
    if not args.meta:
        ap.error("--meta is needed (unless --content-only)")

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
      f"(`scripts/bench/oidc-peer`: a minimal server with an in-memory store and one `client_credentials` client), 127.0.0.1")
    w(f"- Load generator: {meta.get('wrk_version')}, one wrk per scenario, "
      f"`-t {meta.get('threads')} -c {meta.get('connections')} -d {meta.get('seconds')}s "
      f"--timeout {meta.get('timeout')} --latency` for all five scenarios (one connection per wrk "
      f"thread, which the refresh-token chains need); a {meta.get('warmup')}s warm-up run before (a), "
      f"(b) and (e), none before (c) and (d), whose tokens and assertions are single use. wrk, the "
      f"server and the peer share the same {meta.get('nproc')} cores.")
    w(f"- Scenarios run one after another; cofferd is stopped before the peer runs. JWT assertions: "
      f"{meta.get('jwt_count')} pre-generated ({meta.get('jwt_per_thread')} per connection), "
      f"generated just before (d), which starts once cofferd is idle again after (c) (under 5% of a "
      f"core over a second).")
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

    content = None
    c_checks, c_flagged = [], []
    kept = None
    if args.keep_content and os.path.exists(args.out):
        with open(args.out) as f:
            kept = split_content(f.read())[1]
    if kept:
        text = "\n".join(lines) + "\n" + kept
    else:
        content = None if args.keep_content else load_content(args.runs)
        c_lines, c_checks, c_flagged = content_section(
            content, failed=args.content_failed and not args.keep_content)
        text = "\n".join(lines + c_lines)

    mail = old_mail(args.out)
    if mail:
        text = text.rstrip("\n") + "\n\n" + mail
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)

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
    if kept:
        print("content: the section of the page kept (not run)")
    elif content or c_checks:
        print_content_summary(content, c_checks, c_flagged)
    print(f"wrote {args.out}")
    failed = flagged or c_flagged or any(not v.startswith("PASS") for _, _, v in checks + c_checks)
    if args.strict and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
