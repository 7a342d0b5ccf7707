"""Parsing and repairing tool-call arguments, table-driven with what models really send."""

from __future__ import annotations

import json

import pytest

from providers.arguments import dump_arguments, parse_arguments

TRACKS = {
    "tracks": [
        {"voiceId": "12", "text": "Don't wait: the whole family listens free."},
        {"voiceId": "7", "text": "It's one plan, and everyone's in."},
    ]
}

VALID = [
    ("plain object", json.dumps(TRACKS), TRACKS),
    ("unicode script", '{"text": "สวัสดีครับ"}', {"text": "สวัสดีครับ"}),
    ("whitespace around", '  \n{"language": "th"}\n ', {"language": "th"}),
    ("empty string is a zero-argument call", "", {}),
    ("null is a zero-argument call", "null", {}),
]

REPAIRED = [
    ("trailing comma", '{"language": "th", "count": 3,}', {"language": "th", "count": 3}),
    (
        "single quotes with an apostrophe inside double quotes",
        "{'voiceId': '12', 'text': \"Don't stop the music\"}",
        {"voiceId": "12", "text": "Don't stop the music"},
    ),
    (
        "single quotes with an escaped apostrophe",
        "{'text': 'We don\\'t do ads like this'}",
        {"text": "We don't do ads like this"},
    ),
    ("unquoted keys", '{language: "th", gender: "female"}', {"language": "th", "gender": "female"}),
    (
        "truncated object (max tokens hit)",
        '{"tracks": [{"voiceId": "12", "text": "Don\'t wait"}',
        {"tracks": [{"voiceId": "12", "text": "Don't wait"}]},
    ),
    ("markdown fence", '```json\n{"prompt": "upbeat ukulele"}\n```', {"prompt": "upbeat ukulele"}),
    ("double-encoded string", json.dumps(json.dumps({"language": "th"})), {"language": "th"}),
    ("python booleans", "{'parallel': True, 'count': None}", {"parallel": True, "count": None}),
]

UNREPAIRABLE = [
    ("prose", "I will search for Thai voices now"),
    ("a list", '[{"language": "th"}]'),
    ("a number", "42"),
]


@pytest.mark.parametrize(("label", "raw", "expected"), VALID, ids=[c[0] for c in VALID])
def test_valid_arguments_parse_without_repair(label, raw, expected):
    parsed = parse_arguments(raw)

    assert parsed.arguments == expected
    assert parsed.parse_error is None
    assert parsed.repaired is False


@pytest.mark.parametrize(("label", "raw", "expected"), REPAIRED, ids=[c[0] for c in REPAIRED])
def test_malformed_arguments_are_repaired(label, raw, expected):
    parsed = parse_arguments(raw)

    assert parsed.arguments == expected
    assert parsed.parse_error is None
    assert parsed.repaired is True


@pytest.mark.parametrize(("label", "raw"), UNREPAIRABLE, ids=[c[0] for c in UNREPAIRABLE])
def test_unrepairable_arguments_become_a_parse_error_not_a_crash(label, raw):
    parsed = parse_arguments(raw)

    assert parsed.arguments == {}
    assert parsed.parse_error
    assert "JSON" in parsed.parse_error


def test_apostrophes_in_script_lines_survive_repair_untouched():
    # A regex turning ' into " would corrupt every one of these lines.
    raw = "{'tracks': [{'voiceId': '3', 'text': \"Don't miss it, it's today's deal\"}],}"

    parsed = parse_arguments(raw)

    assert parsed.arguments["tracks"][0]["text"] == "Don't miss it, it's today's deal"


def test_dump_is_deterministic_compact_and_valid_json():
    a = {"tracks": [{"voiceId": "1", "text": "ไทย"}], "b": 1}
    b = {"b": 1, "tracks": [{"text": "ไทย", "voiceId": "1"}]}

    assert dump_arguments(a) == dump_arguments(b)
    assert dump_arguments(a) == '{"b":1,"tracks":[{"text":"ไทย","voiceId":"1"}]}'
    assert json.loads(dump_arguments(a)) == a
