#!/usr/bin/env python3
"""Writes docs/errors.md: every stable code of the workspace, by crate, with what it means.

A code is `crate::area::name`, the crate being the directory under `crates/` that raises it.
It is raised by an error kind's `code()` arm (`Variant { .. } => "edit::write::create"`, the
summary then the first line of the variant's doc comment) or, for findings that are not
error kinds (the template audit and lint), by a code literal in the crate's non-test source
(the summary then names the function). The workspace test `tests/it/error_codes.rs` applies
the same rules and fails when a code is malformed, duplicated, unlisted, stale, referenced
without being raised, or never seen by a test; run `python3 scripts/error_codes.py` after
adding a code.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# An arm of a `code()` match: an optional `Enum::`/`Self::` path, the variant, its pattern.
ARM = re.compile(r'^\s*(?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Z][A-Za-z0-9_]*)\b[^"\n]*=>\s*"([a-z0-9_]+(?:::[a-z0-9_]+)+)"')
# A code literal: three lowercase parts.
LITERAL = re.compile(r'"([a-z0-9_]+::[a-z0-9_]+::[a-z0-9_]+)"')
FN = re.compile(r"^\s*(?:pub(?:\([a-z]+\))? )?fn ([a-z0-9_]+)")


def non_test_source(path: pathlib.Path, text: str) -> str:
    """The part of a source file that is not a test: nothing of a `tests.rs` file, and a file
    up to its `#[cfg(test)] mod … {` (test modules close a file, by the workspace's style)."""
    if path.name == "tests.rs" or "tests" in path.parts[:-1]:
        return ""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "#[cfg(test)]":
            after = [l for l in lines[i + 1 : i + 4] if not l.startswith("#[")]
            if after and re.match(r"^(pub(\([a-z]+\))? )?mod [a-z_]+ \{", after[0]):
                return "\n".join(lines[:i])
    return text


def variant_doc(text: str, variant: str) -> str:
    """The first line of the doc comment above `variant`'s definition in an enum."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.match(rf"^\s+{variant}\b\s*(\{{|\(|,|$)", line) and "=>" not in line:
            docs, message = [], ""
            j = i - 1
            # Back to the end of the previous variant: its doc and attributes lie between.
            indent = len(line) - len(line.lstrip())

            def ends_previous(s: str) -> bool:
                at = len(s) - len(s.lstrip())
                body = s.strip()
                return not body or (at <= indent and not body.startswith(("///", "#[", ")]")))

            while j >= 0 and not ends_previous(lines[j]):
                s = lines[j].strip()
                if s.startswith("///"):
                    docs.append(s[3:].strip())
                m = re.match(r'#\[error\("(.*?)"', s)
                if m:
                    message = m.group(1)
                j -= 1
            docs.reverse()
            if docs:
                first = " ".join(docs).split(". ")[0].rstrip(".")
            else:
                # thiserror's message, its fields shown as `…`.
                first = re.sub(r"\{[^}]*\}", "…", message)
            # Rustdoc's intra-doc links mean nothing here: their text only.
            first = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", first)
            first = re.sub(r"\[(`[^`\]]+`)\]", r"\1", first)
            if first:
                return first.replace("|", "\\|")
    return ""


def codes():
    """(crate, file, code, summary) for every code a crate raises: the `code()` arms of each
    file, then the literals no arm raises."""
    arms, literals, seen = [], [], set()
    files = [(p, non_test_source(p, p.read_text())) for p in sorted(ROOT.glob("crates/*/src/**/*.rs"))]
    for path, text in files:
        crate = path.relative_to(ROOT).parts[1]
        for line in text.split("\n"):
            m = ARM.match(line)
            if m:
                arms.append((crate, str(path.relative_to(ROOT)), m.group(2), variant_doc(text, m.group(1))))
                seen.add(m.group(2))
    for path, text in files:
        crate = path.relative_to(ROOT).parts[1]
        function = None
        for line in text.split("\n"):
            f = FN.match(line)
            if f:
                function = f.group(1)
            for code in LITERAL.findall(line):
                if code.split("::")[0] == crate and code not in seen:
                    seen.add(code)
                    literals.append((crate, str(path.relative_to(ROOT)), code, f"Raised by `{function}`"))
    order = {c: i for i, c in enumerate(sorted({r[0] for r in arms + literals}))}
    return sorted(arms + literals, key=lambda r: order[r[0]])


def main() -> int:
    rows = codes()
    parts = [
        "# Error codes",
        "",
        "Every typed error and warning of the libraries carries a stable code",
        "`crate::area::name` (`Kind::code`), its help beside it (`Kind::help`) and, for a file,",
        "where it is (offset and path, once: the `Finding` around the kind). This is the list of",
        "every code, by crate, with the file that raises it; the chapters explain them (the",
        "template audit and lint in [templates.md](templates.md)). Generated by",
        "`python3 scripts/error_codes.py`; the workspace test `error_codes` fails when a code is",
        "malformed, duplicated or unlisted, when this list is stale, when source names a code no",
        "crate raises, or when no test sees a code.",
    ]
    crate = None
    for c, file, code, summary in rows:
        if c != crate:
            crate = c
            parts += ["", f"## `crates/{c}`", "", "| code | what | raised in |", "|---|---|---|"]
        parts.append(f"| `{code}` | {summary} | `{file}` |")
    (ROOT / "docs" / "errors.md").write_text("\n".join(parts) + "\n")
    print(f"{len(rows)} codes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
