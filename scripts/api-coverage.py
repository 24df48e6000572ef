#!/usr/bin/env python3
"""Fills the tests column of docs/api.md: for each implemented endpoint, the end-to-end tests
whose body calls that method and path. Run after adding tests: python3 scripts/api-coverage.py"""
import re, pathlib

root = pathlib.Path(__file__).resolve().parent.parent
tests = {}
for f in sorted((root / "tests" / "tests").rglob("*.rs")):
    src = f.read_text()
    for m in re.finditer(r'#\[test\]\s*fn (\w+)\(\)\s*\{', src):
        start = m.end()
        nxt = src.find("#[test]", start)
        tests[f"{f.name}::{m.group(1)}"] = src[start: nxt if nxt > 0 else len(src)]

def pattern(path):
    # "/rest/devices/{id}" -> a regex over the literal path strings in test code
    parts = [re.escape(p) if not p.startswith("{") else r'[^/"?]+' for p in path.split("/")]
    return re.compile(r'"' + "/".join(parts) + r'(\?[^"]*)?"|format!\("' + "/".join(parts))

def covering(method, path):
    pat = pattern(path)
    hits = []
    for name, body in tests.items():
        for m in pat.finditer(body):
            window = body[max(0, m.start() - 120): m.start()]
            if method == "ANY" or f'"{method}"' in window or (method == "POST" and ("form(" in window or "post" in window.lower())) or (method == "GET" and "get(" in window.lower()):
                hits.append(name)
                break
    return hits

doc = root / "docs" / "api.md"
lines = doc.read_text().splitlines()
out = []
for line in lines:
    m = re.match(r'\| `(GET|POST|PUT|PATCH|DELETE) (/[^ `]*)[^`]*` \| implemented[^|]*\| (.*) \|$', line)
    if m and "oauth/token" not in m.group(2):
        hits = covering(m.group(1), m.group(2))
        if hits:
            shown = ", ".join(f"`{h}`" for h in hits[:4]) + (f" (+{len(hits) - 4} more)" if len(hits) > 4 else "")
            line = line[: line.rindex("|", 0, len(line) - 1)] + f"| {shown} |"
    out.append(line)
doc.write_text("\n".join(out) + "\n")
