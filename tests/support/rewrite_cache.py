"""The test modules' assertions rewritten once, before pytest-xdist starts its test processes.

pytest keeps each test module's rewritten bytecode in its ``__pycache__``, but on a fresh
clone (CI's every run) the test processes start at the same moment, find no cache, and
each rewrites all two hundred modules itself: about 5 CPU-s a process. The controller,
which collects nothing under xdist, writes the cache first, and the processes read it.

It reuses pytest's own rewriting (``_pytest.assertion.rewrite``, as its import hook does),
so the bytecode is the one the hook would have written. If pytest's internals move, the
warm-up is skipped: the processes then rewrite the modules themselves, as before."""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import pytest


def _test_modules(config: pytest.Config) -> list[Path]:
    """The files the processes will rewrite: the test modules and the conftest files under
    the test paths."""
    patterns = [*config.getini("python_files"), "conftest.py"]
    roots = [config.rootpath / path for path in config.getini("testpaths")] or [config.rootpath]
    return sorted(
        path
        for root in roots
        for path in root.rglob("*.py")
        if "node_modules" not in path.parts
        and any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    starts_processes = config.pluginmanager.hasplugin("dsession")  # pytest-xdist's controller
    if (
        not starts_processes
        or sys.dont_write_bytecode
        or config.getoption("assertmode") != "rewrite"
    ):
        return
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
            try_makedirs,
        )

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    for path in _test_modules(config):
        pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc, state.trace) is not None or not try_makedirs(pyc.parent):
            continue
        try:
            source_stat, code = _rewrite_test(path, config)
        except SyntaxError:
            continue  # the test process reports it when it collects the module
        _write_pyc(state, code, source_stat, pyc)
