"""The golden set in the repository: every case valid, the spread of languages, slots and
refinements the evaluations rely on, and briefs the API itself accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from adstudio.languages import normalise_language
from drafts.api import BriefSerializer
from evaluations.datasets import InvalidGoldenSet, golden_set, golden_set_hash

GOLDEN = Path(__file__).resolve().parents[2] / "evals" / "dev.yaml"


def test_the_golden_set_spans_languages_slots_and_refinements():
    cases = golden_set(GOLDEN).cases
    first_turn = [c for c in cases if c.inputs.refinement is None]
    refinements = [c for c in cases if c.inputs.refinement is not None]
    languages = {normalise_language(c.inputs.brief.language).code for c in first_turn}

    assert len(first_turn) >= 24
    assert {"th", "id", "vi", "ja", "es", "pt", "de", "en"} <= languages
    assert {c.inputs.brief.durationSeconds for c in first_turn} >= {15, 30, 60}
    assert len({c.inputs.brief.market for c in first_turn}) >= 8
    assert len({c.metadata.tone for c in first_turn}) >= 8
    assert len(refinements) >= 6
    assert len({c.inputs.refinement.direction for c in refinements}) >= 6
    assert len({c.name for c in cases}) == len(cases)


@pytest.mark.parametrize("case", golden_set(GOLDEN).cases, ids=lambda case: case.name)
def test_every_brief_is_one_the_api_accepts(case):
    serializer = BriefSerializer(data=case.inputs.brief.model_dump())
    assert serializer.is_valid(), serializer.errors


def test_a_misspelt_field_is_an_error_naming_the_case_and_the_field(tmp_path):
    text = GOLDEN.read_text().replace("durationSeconds: 15", "durationSecs: 15", 1)
    broken = tmp_path / "broken.yaml"
    broken.write_text(text)
    with pytest.raises(InvalidGoldenSet) as caught:
        golden_set(broken)
    assert (
        "case 'th-bank-app-15': inputs.brief.durationSecs: Extra inputs are not permitted"
        in str(caught.value)
    )
    assert golden_set_hash(broken) != golden_set_hash(GOLDEN)
