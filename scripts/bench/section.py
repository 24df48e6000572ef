"""One section of docs/benchmarks.md, rewritten in place by the benchmark that owns it.

A section runs from its heading line (`begin`) to its end marker (`end`, an HTML comment the
section itself ends with); the rest of the page is kept as it is, one blank line after the
section. A page without the section gets it at its end.
"""
import os


def write_section(report, begin, end, section):
    old = open(report).read() if os.path.exists(report) else "# Benchmarks\n"
    a, b = old.find("\n" + begin + "\n"), old.find(end)
    if a >= 0 and b > a:
        a += 1
        rest = old[b + len(end):].lstrip("\n")
        new = old[:a] + section + ("\n" + rest if rest else "")
    else:
        new = old.rstrip("\n") + "\n\n" + section
    open(report, "w").write(new)
