#!/usr/bin/env python3
"""The HTTP client and the report of the mail benchmarks (scripts/bench-mail.sh). Standard
library only.

    mail.py queue --base URL --token T --count N --threads K --domain D --out F
        N emails, each to one outside address (`bench-<n>@D`), `acl` no_auth, over K keep-alive
        connections: every one writes one message to the outbox. Writes {queued, failed, seconds}.

    mail.py drain --base URL --token T --count N --timeout S --out F
        polls GET /rest/mail/actions/counters (every 20 ms) until none of the caller's mail is
        `queued` any more; writes {sent, error, seconds} with the time from the first poll.

    mail.py report --runs DIR --out PAGE
        writes the "Mail" section of PAGE from DIR/mail.json and DIR/mail-k.txt (replacing the
        section when the page has it, else appending it), and prints the checks.
"""

import argparse
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse

HEADING = "## Mail: sending and outgoing SMTP"


def connect(base):
    u = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def headers(token):
    return {"Authorization": f"Bearer {token}", "X-Coffer-Version": "28",
            "Content-Type": "application/json"}


def queue(a):
    done = {"queued": 0, "failed": 0, "first_error": None}
    lock = threading.Lock()
    counter = iter(range(a.count))

    def worker():
        c = connect(a.base)
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            body = json.dumps({"to": [f"bench-{n}@{a.domain}"], "subject": f"Bench {n}",
                               "body": "Figures for review.", "acl": "no_auth"})
            c.request("POST", "/rest/mail/actions/sendFile", body, headers(a.token))
            r = c.getresponse()
            text = r.read()
            with lock:
                if r.status == 201:
                    done["queued"] += 1
                else:
                    done["failed"] += 1
                    done["first_error"] = done["first_error"] or f"{r.status} {text[:200]!r}"

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done["seconds"] = time.monotonic() - t0
    json.dump(done, open(a.out, "w"))
    print(json.dumps(done))


def counters(c, token):
    c.request("GET", "/rest/mail/actions/counters", headers=headers(token))
    r = c.getresponse()
    return json.loads(r.read())


def drain(a):
    c = connect(a.base)
    t0 = time.monotonic()
    while True:
        k = counters(c, a.token)
        if k["outgoingQueued"] == 0:
            break
        if time.monotonic() - t0 > a.timeout:
            break
        time.sleep(0.02)
    secs = time.monotonic() - t0
    out = {"queued_left": k["outgoingQueued"], "error": k["outgoingError"],
           "seconds": secs}
    json.dump(out, open(a.out, "w"))
    print(json.dumps(out))


def parse_wrk(text):
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    good = re.search(r"BENCH_SCRIPT ok=(\d+)", text)
    bad = re.search(r"BENCH_SCRIPT ok=\d+ errors=(\d+)", text)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)", text, re.M)
    ms = None
    if p99:
        v, u = float(p99.group(1)), p99.group(2)
        ms = v / 1000 if u == "us" else v * 1000 if u == "s" else v
    return {"rps": float(m.group(1)) if m else None, "good": int(good.group(1)) if good else None,
            "bad": int(bad.group(1)) if bad else None, "p99_ms": ms}


def report(a):
    m = json.load(open(os.path.join(a.runs, "mail.json")))
    k_path = os.path.join(a.runs, "mail-k.txt")
    k = parse_wrk(open(k_path).read()) if os.path.exists(k_path) else {}
    s = m["settings"]
    lines = [HEADING, ""]
    w = lines.append
    w(f"Written by `scripts/bench-mail.sh` (which `scripts/bench.sh` runs after the content "
      f"benchmarks; alone: `BENCH_ONLY=mail scripts/bench.sh`) on {m['date']}, commit "
      f"`{m['commit']}`, {m['machine']}. Raw output: `bench-out/mail*`. A fresh cofferd (release "
      f"build, SQLite, local blob store) and the SMTP server of `scripts/smtp-test-server.sh` "
      f"(aiosmtpd, AUTH, loopback).")
    w("")
    w(f"- (k) internal sends: `POST /rest/mail/actions/sendFile` of an email with one stored "
      f"{s['attachment_mib']} MiB file attached (by id: the attachment is the stored version, "
      f"no byte is copied) to {s['recipients']} accounts, `wrk -t {s['clients']} -c "
      f"{s['clients']} -d {s['seconds']}s` after a {s['warmup']} s warm-up; each answer must be "
      f"201 with the email `sent` (every recipient's inbox entry written in the transaction).")
    w(f"- (l) outgoing SMTP: {s['smtp_count']} emails to outside addresses queued while no relay "
      f"is configured, then cofferd restarted with the relay (`COFFER_SMTP_WORKERS="
      f"{s['smtp_workers']}`); timed from its first answer until none is queued "
      f"(`GET /rest/mail/actions/counters` every 20 ms).")
    w("- (m) cofferd's peak RSS (VmHWM) over (k) and over (l), the larger.")
    w("")
    checks = []
    rps = k.get("rps")
    bad = k.get("bad")
    ok_k = rps is not None and rps >= 200 and bad == 0
    checks.append(("(k) internal sends, messages/s", f"{rps:.0f} (p99 {k.get('p99_ms') or 0:.1f} ms; "
                   f"{bad} bad answers)" if rps else "no result", "PASS" if ok_k else "FAIL",
                   ">= 200"))
    l = m.get("smtp") or {}
    rate = None
    if l.get("seconds") and l.get("queued_left") == 0:
        rate = s["smtp_count"] / l["seconds"]
    ok_l = rate is not None and rate >= 500 and l.get("error", 1) == 0
    checks.append(("(l) outgoing SMTP, messages/s per node",
                   f"{rate:.0f} ({s['smtp_count']} in {l['seconds']:.2f} s; {l.get('error')} in error)"
                   if rate else f"no result ({json.dumps(l)[:200]})", "PASS" if ok_l else "FAIL",
                   ">= 500"))
    hwm = m.get("hwm_kb") or 0
    ok_m = 0 < hwm < 150 * 1000
    checks.append(("(m) cofferd peak RSS", f"{hwm / 1000:.0f} MB", "PASS" if ok_m else "FAIL",
                   "< 150 MB"))
    w("| check | measured | target | result |")
    w("|---|---|---|---|")
    for name, value, verdict, target in checks:
        w(f"| {name} | {value} | {target} | **{verdict}** |")
    for n in m.get("notes") or []:
        w("")
        w(f"Note: {n}")
    w("")
    section = "\n".join(lines)
    page = open(a.out).read() if os.path.exists(a.out) else "# Benchmarks\n\n"
    at = page.find("\n" + HEADING + "\n")
    if at >= 0:
        nxt = page.find("\n## ", at + 1 + len(HEADING))
        page = page[: at + 1] + section + (page[nxt + 1:] if nxt >= 0 else "")
    else:
        page = page.rstrip("\n") + "\n\n" + section
    open(a.out, "w").write(page)
    for name, value, verdict, target in checks:
        print(f"{verdict:<6} {name}: {value} (target {target})")
    if a.strict and any(v != "PASS" for _, _, v, _ in checks):
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("queue")
    for n in ("--base", "--token", "--domain", "--out"):
        q.add_argument(n, required=True)
    q.add_argument("--count", type=int, required=True)
    q.add_argument("--threads", type=int, default=4)
    d = sub.add_parser("drain")
    for n in ("--base", "--token", "--out"):
        d.add_argument(n, required=True)
    d.add_argument("--count", type=int, required=True)
    d.add_argument("--timeout", type=float, default=300)
    r = sub.add_parser("report")
    r.add_argument("--runs", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--strict", action="store_true")
    a = ap.parse_args()
    {"queue": queue, "drain": drain, "report": report}[a.cmd](a)


if __name__ == "__main__":
    main()
