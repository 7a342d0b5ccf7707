"""The token benchmark's model of a provider's prompt cache, by which the design's cost
target is counted."""

from __future__ import annotations

import pytest

from benchmarks.tokens import cacheable


@pytest.mark.parametrize(
    ("prefix", "cached"),
    [(0, 0), (834, 0), (1023, 0), (1024, 1024), (1151, 1024), (1298, 1280), (2128, 2048)],
)
def test_a_shared_prefix_is_cached_from_1024_tokens_in_steps_of_128(prefix, cached):
    assert cacheable(prefix) == cached
