"""The Range header read as RFC 9110 says: one range answered, anything else whole, and a
range that misses the file unsatisfiable."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adstudio.byte_ranges import ByteRange, Unsatisfiable, requested_range


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        ("bytes=0-99", 1000, ByteRange(0, 99)),
        ("bytes=990-", 1000, ByteRange(990, 999)),
        ("bytes=-10", 1000, ByteRange(990, 999)),
        ("bytes=-5000", 1000, ByteRange(0, 999)),  # more than the file: all of it
        ("bytes=10-5000", 1000, ByteRange(10, 999)),
        ("Bytes = 1 - 2", 1000, ByteRange(1, 2)),
        (None, 1000, None),
        ("", 1000, None),
        ("items=0-1", 1000, None),  # another unit
        ("bytes=0-1,4-5", 1000, None),  # several: answered whole
        ("bytes=5-2", 1000, None),  # not a valid range: ignored
        ("bytes=-", 1000, None),
        ("bytes=a-b", 1000, None),
    ],
)
def test_one_range_or_the_whole_file(header, size, expected):
    assert requested_range(header, size) == expected


@pytest.mark.parametrize(
    ("header", "size"), [("bytes=1000-", 1000), ("bytes=-0", 10), ("bytes=0-", 0)]
)
def test_a_range_that_misses_the_file_is_unsatisfiable(header, size):
    with pytest.raises(Unsatisfiable):
        requested_range(header, size)


@given(start=st.integers(0, 10_000), end=st.integers(0, 10_000), size=st.integers(1, 5_000))
def test_an_answered_range_always_lies_within_the_file(start, end, size):
    try:
        answered = requested_range(f"bytes={start}-{end}", size)
    except Unsatisfiable:
        assert start >= size
        return
    if answered is None:
        assert end < start
        return
    assert 0 <= answered.start <= answered.end < size
    assert answered.content_range(size) == f"bytes {answered.start}-{answered.end}/{size}"
