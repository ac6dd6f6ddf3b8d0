#!/usr/bin/env python3
"""Checks that includes between the provider's layers point down only.

Each directory under prov/iwarpx/src is a layer (a CMake target). A file in
layer L may include headers of L and of the layers L depends on (ALLOWED below,
transitively closed). Test files (*_test.cc) and fuzzers may also include
testing/, as may their test-only headers (*_test_util.h, *_fixture.h). Exit
status 1 lists every violation.
"""
import pathlib
import re
import sys

# Layer -> layers it may include directly (DESIGN.md: base <- wire <- transport/mem
# <- engine <- progress <- ofi). Extend this table when a layer is added.
ALLOWED = {
    "base": set(),
    "wire": {"base"},
    "transport": {"base", "wire"},
    "mem": {"base", "wire"},
    "cm": {"base", "wire", "transport"},
    "qp": {"base", "wire", "transport", "mem", "cm"},
    "rd": {"base", "wire", "transport", "mem", "qp"},
    "progress": {"base", "transport", "qp", "cm", "rd", "mem", "wire"},
    "rdm": {"base", "wire", "transport", "mem", "qp", "cm", "rd", "progress"},
    "ofi": {"base", "wire", "transport", "mem", "qp", "cm", "rd", "progress", "rdm"},
    "testing": None,  # test helpers may include anything
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def closure(layer):
    seen, todo = set(), [layer]
    while todo:
        for dep in ALLOWED.get(todo.pop(), set()) or set():
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen | {layer}


def main():
    root = pathlib.Path(__file__).resolve().parent.parent / "prov/iwarpx/src"
    errors = []
    for f in sorted(root.rglob("*")):
        if f.suffix not in (".h", ".cc") or not f.is_file():
            continue
        layer = f.relative_to(root).parts[0]
        if layer not in ALLOWED:
            errors.append(f"{f}: directory '{layer}' is not a known layer (add it to ALLOWED)")
            continue
        if ALLOWED[layer] is None:
            continue
        ok = closure(layer)
        # Tests, fuzzers and their test-only headers may use testing/ too.
        if f.name.endswith(("_test.cc", "_fuzzer.cc", "_test_util.h", "_fixture.h")):
            ok = ok | {"testing"}
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) not in ok:
                errors.append(f"{f}:{n}: layer '{layer}' must not include '{m.group(1)}/'")
    for e in errors:
        print(e)
    print(f"check_layers: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
