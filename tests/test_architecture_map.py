"""docs/ARCHITECTURE.md is the map a newcomer reads first: every module of the product is
named in its app's row of "Where things are", and every model in "What is stored". A
module or model added without a word there fails here."""

from __future__ import annotations

import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[1]
CONVENTIONAL = {"__init__.py", "apps.py", "urls.py"}
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
APPS = (
    "adstudio",
    "accounts",
    "audio",
    "conversations",
    "drafts",
    "evaluations",
    "providers",
    "renders",
    "speech",
    "voices",
    "workspaces",
)


def _rows_of(app: str) -> str:
    """The app's row of the module table, and the indented rows under it."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| `{app}/`"))
    rows = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("| `  "):
            break
        rows.append(line)
    return "\n".join(rows)


def _named(module: Path, rows: str, app: str) -> bool:
    """Its file name (or its path in the app, or its package's folder) in backticks."""
    relative = module.relative_to(ROOT / app)
    names = [str(relative), module.name, *(f"{part}/" for part in relative.parts[:-1])]
    return any(re.search(rf"`\s*{re.escape(name)}`", rows) for name in names)


def test_every_module_is_named_in_its_apps_row():
    missing = []
    for app in APPS:
        rows = _rows_of(app)
        for module in sorted((ROOT / app).rglob("*.py")):
            parts = module.relative_to(ROOT / app).parts
            # Django's own conventions, the same in every app: the table names what differs.
            if module.name in CONVENTIONAL or "migrations" in parts or "management" in parts:
                continue
            if not _named(module, rows, app):
                missing.append(str(module.relative_to(ROOT)))
    assert missing == [], f"modules the architecture page does not name: {missing}"


def test_every_model_is_in_what_is_stored():
    stored = DOC.split("## What is stored", 1)[1].split("\n## ", 1)[0]
    ours = [m for m in apps.get_models() if m._meta.app_label in APPS]
    missing = [m.__name__ for m in ours if f"**{m.__name__}**" not in stored]
    assert missing == [], f"models the architecture page does not list: {missing}"


def test_the_arrow_diagram_is_the_import_graph():
    from tests.support.architecture_diagram import diagram, page_diagram

    assert page_diagram() == diagram(), (
        "docs/ARCHITECTURE.md's diagram is not the import graph: "
        "python -m tests.support.architecture_diagram --write"
    )
