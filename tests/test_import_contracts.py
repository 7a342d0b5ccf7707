"""The import graph's contracts (pyproject's ``[tool.importlinter]``): the apps in layers
with the project package below them all (imports for typing count), the conversations
app's wings in layers, no import cycle (inside ``adstudio.observability`` too, whose
modules are in layers under a face they do not import back, and inside ``adstudio.asgi``,
whose modules do not import the package that hands out the application), nothing of the
tests, the test bed or the benchmarks imported by the product, and providers that are
handed the hooks they report to. import-linter checks the real graph; the same contracts
must refuse a graph given one arrow more."""

from __future__ import annotations

import copy
from pathlib import Path

import grimp
import pytest
from importlinter import api  # configures import-linter for use from Python
from importlinter.application.use_cases import lint_imports
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

ROOT = Path(__file__).resolve().parent.parent
CONFIG = api.read_configuration(str(ROOT / "pyproject.toml"))
CONTRACTS = {
    "layers": LayersContract,
    "acyclic_siblings": AcyclicSiblingsContract,
    "forbidden": ForbiddenContract,
}


def test_the_code_keeps_its_import_contracts(capsys):
    """``lint-imports``, run from Python."""
    passed = lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None)
    assert passed, capsys.readouterr().out[-4000:]
    assert "Contracts: 8 kept, 0 broken." in capsys.readouterr().out


@pytest.fixture(scope="module")
def real_graph() -> grimp.ImportGraph:
    packages = CONFIG["session_options"]["root_packages"]
    # as lint-imports builds it: imports under TYPE_CHECKING count (the option is read
    # as a string, as import-linter reads it); read afresh, never from a cache that a
    # checkout's moved files can leave stale
    assert CONFIG["session_options"]["exclude_type_checking_imports"] == "False"
    return grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)


@pytest.fixture
def graph(real_graph) -> grimp.ImportGraph:
    return copy.deepcopy(real_graph)


def kept(graph: grimp.ImportGraph) -> dict[str, bool]:
    results = {}
    for options in CONFIG["contracts_options"]:
        options = dict(options)
        name, kind = options.pop("name"), options.pop("type")
        contract = CONTRACTS[kind](
            name=name, session_options=CONFIG["session_options"], contract_options=options
        )
        # a contract removes its ignored imports from the graph it checks
        checked = contract.check(copy.deepcopy(graph), verbose=False)
        results[kind] = results.get(kind, True) and checked.kept
    return results


@pytest.mark.parametrize(
    ("importer", "imported", "broken"),
    [
        ("adstudio.db.sql", "conversations.models", "layers"),  # the project package reaching up
        ("voices.selectors", "workspaces.access", "layers"),  # two apps of one layer
        ("providers.router", "voices.models", "layers"),  # the providers on the catalogue
        ("adstudio.wsgi", "providers.router", "layers"),
        ("adstudio.settings", "providers.configuration", "layers"),  # the settings neither
        (
            "conversations.record.tokens",
            "conversations.agent.loop",
            "acyclic_siblings",
        ),  # loop -> state -> tokens
        # the conversations app's wings: the lifecycle on the loop, the reads on a wake-up
        ("conversations.runs.claim", "conversations.agent.state", "layers"),
        ("conversations.selectors", "conversations.events.wakeups", "layers"),
        ("conversations.record.log", "conversations.events.wakeups", "layers"),  # one layer
        (
            "conversations.agent.loop",
            "testbed.fake_openai",
            "forbidden",
        ),  # the product on its fakes
        ("providers.resilience", "adstudio.observability.hooks", "forbidden"),
        # observability's modules: a cycle, an arrow across a layer, the face imported back
        ("adstudio.observability.metrics", "adstudio.observability.hooks", "acyclic_siblings"),
        ("adstudio.observability.metrics", "adstudio.observability.tracing", "layers"),
        ("adstudio.observability.hooks", "adstudio.observability", "forbidden"),
        ("adstudio.db.sql", "adstudio.db.batch", "acyclic_siblings"),  # batch -> sql
        # the ASGI package's modules: a cycle, the package imported back
        ("adstudio.asgi.routing", "adstudio.asgi.stack", "acyclic_siblings"),
        ("adstudio.asgi.health", "adstudio.asgi", "forbidden"),
    ],
)
def test_one_arrow_more_breaks_a_contract(graph, importer, imported, broken):
    assert kept(graph) == {"layers": True, "acyclic_siblings": True, "forbidden": True}
    graph.add_import(importer=importer, imported=imported)
    assert kept(graph)[broken] is False
