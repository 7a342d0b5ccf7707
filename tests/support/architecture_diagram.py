"""The arrow diagram of docs/ARCHITECTURE.md, drawn from the import graph rather than by
hand: an arrow for every app that imports another (typing imports included, as the
layer contracts count them), an exception the layers contract ignores dotted (there is
none today).

    .venv/bin/python -m tests.support.architecture_diagram [--write]

prints the Mermaid block, or writes it over the page's; tests/test_architecture_map.py
fails while the page's block differs from it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
# Top to bottom, as the layers contract orders them.
PACKAGES = (
    "evaluations",
    "conversations",
    "renders",
    "drafts",
    "speech",
    "voices",
    "workspaces",
    "providers",
    "audio",
    "accounts",
    "adstudio",
)
# Arrows the layers contract ignores (pyproject.toml's ``ignore_imports``), drawn dotted.
EXCEPTIONS: set[tuple[str, str]] = set()
_BLOCK = re.compile(r"```mermaid\n.*?```\n", re.DOTALL)


def arrows() -> list[tuple[str, str]]:
    graph = grimp.build_graph(
        *PACKAGES, include_external_packages=False, exclude_type_checking_imports=False
    )
    return [
        (importer, imported)
        for importer in PACKAGES
        for imported in PACKAGES
        if importer != imported
        and graph.direct_import_exists(importer=importer, imported=imported, as_packages=True)
    ]


def diagram() -> str:
    lines = ["```mermaid", "graph TD"]
    for importer, imported in arrows():
        arrow = "-.->" if (importer, imported) in EXCEPTIONS else "-->"
        lines.append(f"  {importer} {arrow} {imported}")
    return "\n".join([*lines, "```"]) + "\n"


def page_diagram() -> str:
    match = _BLOCK.search(PAGE.read_text())
    return match.group(0) if match else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write it into the page")
    drawn = diagram()
    if parser.parse_args().write:
        PAGE.write_text(_BLOCK.sub(lambda _: drawn, PAGE.read_text(), count=1))
    else:
        print(drawn, end="")


if __name__ == "__main__":
    main()
