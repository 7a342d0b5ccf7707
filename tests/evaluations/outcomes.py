"""Hand-made outcomes for the scorers' tests: a good Thai 30-second ad, changed one way at a
time into a bad one."""

from __future__ import annotations

import copy

from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanTreeRecordingError

from evaluations.cases import AdOutcome, Brief, CaseInput, CaseMetadata, Refinement

# About 5.6 s at Thai's 12 letters a second: five and a call to action fill 95% of 30 s.
THAI_LINE = "สปอติฟายพรีเมียมแพ็กเกจครอบครัว ทุกคนในบ้านมีบัญชีของตัวเอง ฟังเพลงที่ชอบได้ไม่มีโฆษณา"
ENGLISH_LINE = "Meet Spotify Premium family plan."


def voice_tracks(lines: list[str], voice_ids: list[str]) -> list[dict]:
    return [
        {
            "id": f"track-{n}",
            "voiceId": voice_ids[n % len(voice_ids)],
            "voiceName": f"Voice {voice_ids[n % len(voice_ids)]}",
            "text": line,
            "playAfter": "start" if n == 0 else f"track-{n - 1}",
            "overlap": 0.0,
            "speed": 1.0,
        }
        for n, line in enumerate(lines)
    ]


def good_drafts() -> dict[str, dict]:
    return {
        "voices": {
            "voiceTracks": voice_tracks([THAI_LINE] * 5 + ["สมัครเลย"], ["th-f1", "th-m1"]),
            "estimatedDurationS": 28.5,
        },
        "music": {
            "musicPrompt": "Warm, modern instrumental bed at 96 bpm; no vocals",
            "musicProvider": "loudly",
            "duration": 30,
        },
        "sfx": {
            "soundFxPrompts": [
                {"description": "chime", "placement": {"type": "start"}, "duration": 1.5},
                {
                    "description": "whoosh",
                    "placement": {"type": "afterVoice", "index": 0},
                    "duration": 1.0,
                },
                {"description": "cheer", "placement": {"type": "end"}, "duration": 2.0},
            ]
        },
    }


def good_outcome(**changes) -> AdOutcome:
    drafts = good_drafts()
    fields = {
        "conversation_id": "c0",
        "language": "th",
        "market": "TH",
        "duration_s": 30,
        "first_drafts": copy.deepcopy(drafts),
        "drafts": drafts,
        "turns": [
            {
                "run_id": "r1",
                "status": "succeeded",
                "new_versions": {"voices": [1], "music": [1], "sfx": [1]},
                "tool_calls": 4,
                "rounds": 3,
                "prompt_tokens": 5000,
                "completion_tokens": 400,
                "cost_usd": 0.0123,
                "latency_s": 4.5,
            }
        ],
        "voices": {
            "th-f1": {"language": "th", "locale": "th-TH", "gender": "female"},
            "th-m1": {"language": "th", "locale": "th-TH", "gender": "male"},
            "th-f2": {"language": "th", "locale": "th-TH", "gender": "female"},
            "en-f1": {"language": "en", "locale": "en-US", "gender": "female"},
        },
        "catalogue_locales": ["th-TH"],
    }
    fields.update(changes)
    return AdOutcome.model_validate(fields)


def case_input(refinement: dict | None = None) -> CaseInput:
    return CaseInput(
        brief=Brief(
            clientDescription="Spotify Premium family plan",
            durationSeconds=30,
            market="TH",
            language="Thai",
        ),
        refinement=Refinement.model_validate(refinement) if refinement else None,
    )


def context(outcome: AdOutcome, inputs: CaseInput | None = None) -> EvaluatorContext:
    return EvaluatorContext(
        name="case",
        inputs=inputs or case_input(),
        metadata=CaseMetadata(),
        expected_output=None,
        output=outcome,
        duration=0.0,
        _span_tree=SpanTreeRecordingError("not recorded"),
        attributes={},
        metrics={},
    )
