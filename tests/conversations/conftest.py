"""Fixtures of the agent-run stories, shared by the loop tests of every wire format."""

from __future__ import annotations

import pytest


@pytest.fixture
def en_ad(make_ad):
    return make_ad(language="en", market="US", audience="Parents")


@pytest.fixture
def voices(make_voice):
    return [
        make_voice(language="en", gender="male", name="Jack", style="upbeat"),
        make_voice(language="en", gender="female", name="Rachel", style="calm"),
    ]
