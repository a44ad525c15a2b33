#!/usr/bin/env python3
"""The studio's folders are layers (studio/README.md): a folder includes only the folders below it.

    common    guard, theme, canvas colours          (nothing of the studio)
    document  the model and its edits               common
    canvas    scene, items, layouts, the view       common, document
    panels    inspector, palette, run, train, value common, document
    insight   runs dashboard, pass stepper, profiler common, document, canvas
    app       the window and main                   everything

Exits 1 naming every file that includes a folder its layer may not see, and every source file
directly in studio/ (each belongs to a folder)."""
import pathlib
import re
import sys

ALLOWED = {
    "common": set(),
    "document": {"common"},
    "canvas": {"common", "document"},
    "panels": {"common", "document"},
    "insight": {"common", "document", "canvas"},
    "app": {"common", "document", "canvas", "panels", "insight"},
}

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
studio = root / "studio"
bad = []
for path in sorted(studio.rglob("*")):
    if path.suffix not in (".h", ".cpp"):
        continue
    rel = path.relative_to(studio)
    if len(rel.parts) != 2 or rel.parts[0] not in ALLOWED:
        bad.append(f"{path}: not in one of the folders {sorted(ALLOWED)}")
        continue
    layer = rel.parts[0]
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = re.match(r'\s*#\s*include\s+"studio/([a-z_]+)/', line)
        if m and m.group(1) != layer and m.group(1) not in ALLOWED[layer]:
            bad.append(f"{path}:{number}: {layer}/ may not include {m.group(1)}/ "
                       f"(allowed: {', '.join(sorted(ALLOWED[layer])) or 'nothing'})")
        if re.match(r'\s*#\s*include\s+"studio/[a-z_]+\.h"', line):
            bad.append(f"{path}:{number}: includes a studio header outside the folders")
print("\n".join(bad) if bad else f"studio layers: {sum(1 for _ in studio.rglob('*.cpp'))} sources, no include across the rules")
sys.exit(1 if bad else 0)
