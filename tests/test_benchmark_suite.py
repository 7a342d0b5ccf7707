"""``benchmarks/suite.py``'s account of where a run's time went, from the per-test records
its pytest plugin writes in each test process."""

from __future__ import annotations

from benchmarks.suite import where_the_time_went


def record(test: str, start: float, end: float, cpu: float, children: float = 0.0) -> dict:
    return {"test": test, "start": start, "end": end, "cpu_s": cpu, "children_cpu_s": children}


def test_spans_cpu_and_the_costliest_files():
    tests = {
        "gw1": [
            record("tests/b.py::test_one", 100.0, 101.5, 1.0),
            record("tests/b.py::test_two", 101.5, 110.0, 0.5, children=6.0),
        ],
        "gw0": [
            record("tests/a.py::test_one", 100.2, 100.4, 0.2),
            record("tests/c.py::test_x[1]", 100.4, 104.0, 3.0),
        ],
    }

    found = where_the_time_went(tests, top=2)

    assert found["spans"] == {
        "gw0": {"tests": 2, "from_s": 0.2, "to_s": 4.0, "busy_s": 3.8},
        "gw1": {"tests": 2, "from_s": 0.0, "to_s": 10.0, "busy_s": 10.0},
    }
    assert (found["cpu_s"], found["children_cpu_s"]) == (4.7, 6.0)
    assert found["files"] == [
        {"file": "tests/b.py", "cpu_s": 7.5},
        {"file": "tests/c.py", "cpu_s": 3.0},
    ]


def test_no_records_is_nothing_to_say():
    assert where_the_time_went({}) == {}
    assert where_the_time_went({"gw0": []}) == {}
