"""The benchmarks' databases are named from the environment, so that two checkouts can
run them on one server side by side."""

from __future__ import annotations

import pytest

from benchmarks import _bench_db


def test_the_prefix_names_every_benchmarks_database(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", "other_bench")
    assert _bench_db.bench_database_url().endswith("/other_bench")
    assert _bench_db.bench_database_url("adstudio_bench_render").endswith("/other_bench_render")
    assert _bench_db.bench_database_url("elsewhere").endswith("/elsewhere")  # not a default


def test_without_the_prefix_the_names_are_as_before(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", _bench_db.DEFAULT_DATABASE)
    assert _bench_db.bench_database_url("adstudio_bench_soak").endswith("/adstudio_bench_soak")


def test_a_prefix_that_is_no_database_name_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/adstudio")
    monkeypatch.setattr(_bench_db, "DATABASE_PREFIX", 'x"; DROP')
    with pytest.raises(SystemExit, match="ADSTUDIO_BENCH_DATABASE_PREFIX"):
        _bench_db.bench_database_url()
