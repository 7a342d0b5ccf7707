"""The search_voices tool as the model sees it: its schema, results and error results."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from adstudio.tools import ToolContext, ToolError
from voices.tools import SEARCH_VOICES

pytestmark = pytest.mark.django_db


def call(ad, **arguments: Any) -> dict[str, Any]:
    """Validate like the executor does, then run the handler."""
    args = SEARCH_VOICES.args_model.model_validate(arguments)
    return SEARCH_VOICES.handler(ToolContext(ad=ad), args)


def error_of(ad, **arguments: Any) -> dict[str, Any]:
    with pytest.raises(ToolError) as caught:
        call(ad, **arguments)
    return caught.value.as_result()


def test_schema_matches_the_design():
    schema = SEARCH_VOICES.parameters_schema()

    assert SEARCH_VOICES.name == "search_voices"
    assert schema["type"] == "object"
    assert schema["required"] == ["language"]
    # Unknown filters are refused by the tool (below), not announced on every call.
    assert "additionalProperties" not in schema
    properties = schema["properties"]
    assert list(properties) == ["language", "gender", "accent", "style", "count"]
    assert properties["language"]["type"] == "string"
    assert properties["gender"] == {"enum": ["male", "female"], "type": "string"}
    assert properties["accent"]["type"] == "string"
    assert properties["style"]["type"] == "string"
    # The count is clamped, never refused, and leaving it out is the usual 10: no bounds
    # or default to state.
    assert properties["count"] == {"type": "integer"}
    # Plain optional fields (no anyOf/null, no titles): every provider accepts them.
    assert "anyOf" not in str(schema)
    assert "title" not in str(schema)
    for name in ("language", "accent", "style"):
        assert properties[name]["description"]


def test_description_tells_the_model_how_to_use_it():
    description = SEARCH_VOICES.description
    assert "only their ids may be a voiceId" in description
    assert "Filter only as the brief asks" in description
    assert "best first" in description


@pytest.mark.parametrize(("count", "expected"), [(0, 1), (-3, 1), (7, 7), (51, 50), (999, 50)])
def test_out_of_range_count_is_clamped_not_refused(count, expected):
    args = SEARCH_VOICES.args_model.model_validate({"language": "th", "count": count})
    assert args.count == expected


def test_nulls_and_blanks_mean_no_filter():
    args = SEARCH_VOICES.args_model.model_validate(
        {"language": "th", "gender": None, "accent": " ", "style": "", "count": None}
    )
    assert (args.gender, args.accent, args.style, args.count) == (None, None, None, 10)


@pytest.mark.parametrize(
    ("arguments", "location"),
    [
        ({}, "language"),
        ({"language": "th", "gender": "robot"}, "gender"),
        ({"language": "th", "age": "young"}, "age"),
        ({"language": "th", "count": "many"}, "count"),
    ],
)
def test_invalid_arguments_are_refused_by_the_schema(arguments, location):
    with pytest.raises(ValidationError) as caught:
        SEARCH_VOICES.args_model.model_validate(arguments)
    assert caught.value.errors()[0]["loc"] == (location,)


def test_results(ad, make_voice, django_assert_num_queries):
    voice = make_voice(name="Somchai", language="th", gender="male", style="warm")
    make_voice(name="Malee", language="th", gender="female", style="warm")

    with django_assert_num_queries(1):
        result = call(ad, language="Thai", gender="Male", style="warm", count=5)

    assert result == {
        "voices": [
            {
                "id": str(voice.pk),
                "name": "Somchai",
                "language": "th",
                "gender": "male",
                "style": "warm",
            }
        ],
        "count": 1,
    }


def test_no_match_returns_the_facets_that_exist(ad, make_voice):
    make_voice(language="th", gender="female", accent="central", locale="th-TH", style="warm")
    make_voice(language="th", gender="female", accent="isan", use_case="advertisement")
    make_voice(language="th", gender="male", accent="central", approved=False)

    result = error_of(ad, language="th", gender="male", style="warm")

    assert result == {
        "error": "No approved Thai (th) voice matches gender='male', style='warm'.",
        "suggestion": "Drop or change the filter that excludes everything; 'available' lists "
        "what this language has (value: number of voices).",
        "available": {
            "genders": {"female": 2},
            "accents": {"central": 1, "isan": 1},
            "locales": {"th-TH": 1},
            "styles": {"advertisement": 1, "warm": 1},
        },
    }


def test_no_match_costs_two_queries_once_facets_are_cached(
    ad, make_voice, django_assert_num_queries
):
    make_voice(language="th", gender="female")
    error_of(ad, language="th", gender="male")  # computes and caches the facets

    with django_assert_num_queries(2):  # the search, then the catalogue version
        assert error_of(ad, language="th", gender="male")["available"]["genders"] == {"female": 1}


def test_unknown_language_lists_the_catalogue_languages(ad, make_voice):
    make_voice(language="th")
    make_voice(language="en")
    make_voice(language="en")

    result = error_of(ad, language="thia")

    assert (
        result["error"]
        == "Unknown language 'thia'. Did you mean: th (Thai), ta (Tamil), hi (Hindi)?"
    )
    assert result["suggestion"] == "Call search_voices again with one of the available languages."
    assert result["available"] == {"languages": {"en": 2, "th": 1}}


def test_language_missing_from_the_catalogue_lists_the_languages_there(ad, make_voice):
    make_voice(language="en")
    make_voice(language="sw", approved=False)

    result = error_of(ad, language="Swahili", gender="female")

    assert result["error"] == "The catalogue has no approved voices in Swahili (sw)."
    assert "pick one of the available languages" in result["suggestion"]
    assert result["available"] == {"languages": {"en": 1}}


def test_locale_in_the_language_is_named_in_the_error(ad, make_voice):
    make_voice(language="pt", locale="pt-PT")

    result = error_of(ad, language="pt-BR")

    assert result["error"] == "No approved Portuguese (pt-BR) voice matches this search."
    assert result["available"]["locales"] == {"pt-PT": 1}
