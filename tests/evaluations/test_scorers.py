"""Each scorer against a hand-made good ad and against the same ad made bad one way: the
bad one fails it, with a reason that names what is wrong."""

from __future__ import annotations

import asyncio
import copy

import pytest
from pydantic_evals import Case, Dataset

from evaluations import scorers
from evaluations.cases import CaseMetadata
from tests.evaluations.outcomes import (
    ENGLISH_LINE,
    THAI_LINE,
    case_input,
    context,
    good_drafts,
    good_outcome,
    voice_tracks,
)

PASS_FAIL = [
    scorers.RunsSucceeded,
    scorers.AllKindsDrafted,
    scorers.CleanToolCalls,
    scorers.VoicesInLanguage,
    scorers.ScriptInLanguage,
    scorers.ScriptFitsSlot,
    scorers.MusicUnderVoice,
    scorers.SfxInsideAd,
]


def results(scorer, outcome, inputs=None) -> dict:
    """The scorer's results by name: pass/fail and reason."""
    found = scorer().evaluate(context(outcome, inputs))
    if not isinstance(found, dict):
        found = {type(scorer()).__name__: found}
    return {name: (getattr(r, "value", r), getattr(r, "reason", None)) for name, r in found.items()}


def verdict(scorer, outcome, inputs=None) -> tuple[bool, str]:
    (only,) = results(scorer, outcome, inputs).values()
    return only


@pytest.mark.parametrize("scorer", PASS_FAIL)
def test_a_good_ad_passes(scorer):
    for value, reason in results(scorer, good_outcome()).values():
        assert value is True, reason


def with_drafts(**kinds) -> dict:
    drafts = good_drafts()
    for kind, payload in kinds.items():
        if payload is None:
            drafts.pop(kind)
        else:
            drafts[kind] = payload
    return drafts


def test_a_missing_kind_is_named():
    ok, reason = verdict(scorers.AllKindsDrafted, good_outcome(drafts=with_drafts(music=None)))
    assert (ok, reason) == (False, "no music draft")


def test_a_failed_turn_fails_the_case():
    turn = {**good_outcome().turns[0].model_dump(), "status": "failed", "error_code": "timeout"}
    ok, reason = verdict(scorers.RunsSucceeded, good_outcome(turns=[turn]))
    assert not ok and reason == "turn 1: failed timeout"
    assert verdict(scorers.RunsSucceeded, good_outcome(turns=[]))[0] is False


@pytest.mark.parametrize("counts", [{"tool_errors": 1}, {"argument_repairs": 2}])
def test_tool_errors_and_repairs_fail(counts):
    turn = {**good_outcome().turns[0].model_dump(), **counts}
    ok, reason = verdict(scorers.CleanToolCalls, good_outcome(turns=[turn]))
    assert not ok and "4 tool calls" in reason


def script_with(voice_ids: list[str]) -> dict:
    tracks = voice_tracks([THAI_LINE] * 5 + ["สมัครเลย"], voice_ids)
    return {"voiceTracks": tracks, "estimatedDurationS": 28.5}


def test_a_voice_of_another_language_or_unknown_fails():
    ok, reason = verdict(
        scorers.VoicesInLanguage, good_outcome(drafts=with_drafts(voices=script_with(["en-f1"])))
    )
    assert not ok and "a en voice for a th ad" in reason
    ok, reason = verdict(
        scorers.VoicesInLanguage, good_outcome(drafts=with_drafts(voices=script_with(["gone"])))
    )
    assert not ok and "voice gone is not in the catalogue" in reason


def test_the_markets_locale_is_asked_only_where_the_catalogue_has_it():
    voices = {"es-1": {"language": "es", "locale": "es-ES", "gender": "female"}}
    spanish = with_drafts(voices=script_with(["es-1"]))
    for_mexico = good_outcome(
        language="es",
        market="MX",
        drafts=spanish,
        voices=voices,
        catalogue_locales=["es-ES", "es-MX"],
    )
    ok, reason = verdict(scorers.VoicesInLanguage, for_mexico)
    assert not ok and "es-ES, not es-MX" in reason
    for_argentina = for_mexico.model_copy(update={"market": "AR"})
    assert verdict(scorers.VoicesInLanguage, for_argentina) == (True, "every voice speaks es")


SCRIPTS = {
    "th": THAI_LINE,
    "id": "Satu paket untuk seluruh keluarga, setiap orang punya akun sendiri tanpa iklan.",
    "vi": "Một gói cho cả gia đình, mỗi người một tài khoản riêng, nghe nhạc không quảng cáo.",
    "ja": "家族みんなで使えるひとつのプラン。それぞれのアカウントで、広告なしで音楽を楽しめます。",
    "es": "Un solo plan para toda la familia, cada uno con su propia cuenta y sin anuncios.",
    "pt": "Um só plano para toda a família, cada um com a sua conta e sem anúncios.",
    "de": "Ein Abo für die ganze Familie, jeder mit eigenem Konto und ganz ohne Werbung.",
    "en": "One plan for the whole family, everyone with their own account and no ads.",
}


@pytest.mark.parametrize("language", sorted(SCRIPTS))
def test_a_script_in_its_ads_language_passes_and_english_in_another_fails(language):
    ours = {"voiceTracks": voice_tracks([SCRIPTS[language]], ["v"]), "estimatedDurationS": 5}
    ok, reason = verdict(
        scorers.ScriptInLanguage, good_outcome(language=language, drafts=with_drafts(voices=ours))
    )
    assert ok, reason
    if language != "en":
        english = {"voiceTracks": voice_tracks([ENGLISH_LINE], ["v"]), "estimatedDurationS": 2}
        ok, reason = verdict(
            scorers.ScriptInLanguage,
            good_outcome(language=language, drafts=with_drafts(voices=english)),
        )
        assert not ok and reason.startswith("written in en")


@pytest.mark.parametrize(
    ("lines", "fits"),
    [
        ([THAI_LINE] * 2, False),  # about 11 s for 30 s: the "11.8 s for a 30 s slot"
        ([THAI_LINE] * 6, False),  # about 33.5 s: past the slot
        ([THAI_LINE] * 5, True),  # about 28 s
    ],
)
def test_the_script_must_fill_three_quarters_of_the_slot_to_all_of_it(lines, fits):
    voices = {"voiceTracks": voice_tracks(lines, ["th-f1"]), "estimatedDurationS": 0}
    ok, reason = verdict(scorers.ScriptFitsSlot, good_outcome(drafts=with_drafts(voices=voices)))
    assert ok is fits, reason


def test_overlapping_lines_count_once():
    tracks = voice_tracks([THAI_LINE] * 6, ["th-f1"])
    for track in tracks[1:]:
        track["overlap"] = 1.0  # each line starts a second before the last one ends
    voices = {"voiceTracks": tracks, "estimatedDurationS": 0}
    ok, reason = verdict(scorers.ScriptFitsSlot, good_outcome(drafts=with_drafts(voices=voices)))
    assert ok, reason  # 33.5 s of speech, 5 s of it overlapped: 28.5 s


@pytest.mark.parametrize(
    ("prompt", "duration", "instrumental", "length"),
    [
        ("Upbeat pop with female vocals singing the brand name", 30, False, True),
        ("Warm pad, no vocals", 30, True, True),
        ("Warm pad", 30, False, True),
        ("Instrumental acoustic guitar", 20, True, False),
    ],
)
def test_music_is_an_instrumental_bed_as_long_as_the_ad(prompt, duration, instrumental, length):
    music = {"musicPrompt": prompt, "musicProvider": "loudly", "duration": duration}
    found = results(scorers.MusicUnderVoice, good_outcome(drafts=with_drafts(music=music)))
    assert found["music_instrumental"][0] is instrumental, found
    assert found["music_length"][0] is length, found


@pytest.mark.parametrize(
    ("effect", "says"),
    [
        ({"placement": {"type": "afterVoice", "index": 9}, "duration": 1.0}, "does not exist"),
        (
            {"placement": {"type": "end"}, "duration": 45.0},
            "plays until 45.00 s, after the 30 s slot",
        ),
        ({"placement": {"type": "afterVoice", "index": 5}, "duration": 3.0}, "after the 30 s slot"),
        ({"placement": {"type": "start"}, "duration": 0.0}, "sfx-0 lasts 0.0 s"),
    ],
)
def test_an_effect_outside_the_ad_fails(effect, says):
    sfx = {"soundFxPrompts": [{"description": "boom", **effect}]}
    ok, reason = verdict(scorers.SfxInsideAd, good_outcome(drafts=with_drafts(sfx=sfx)))
    assert not ok and says in reason, reason


MORE_UPBEAT = {
    "message": "make the music more upbeat",
    "changes": ["music"],
    "direction": "music_more_upbeat",
}


def refined(kinds: dict[str, list[int]], **drafts) -> object:
    first = good_outcome()
    second = {**first.turns[0].model_dump(), "run_id": "r2", "new_versions": kinds}
    return good_outcome(turns=[first.turns[0].model_dump(), second], drafts=with_drafts(**drafts))


def test_refinement_scorers_say_nothing_of_a_first_turn_case():
    assert results(scorers.RefinementScope, good_outcome()) == {}
    assert results(scorers.RefinementDirection, good_outcome()) == {}


def test_only_the_asked_kind_may_change():
    upbeat = {**good_drafts()["music"], "musicPrompt": "Upbeat instrumental, no vocals"}
    inputs = case_input(MORE_UPBEAT)
    good = refined({"music": [2]}, music=upbeat)
    assert verdict(scorers.RefinementScope, good, inputs) == (True, "only music")
    bad = refined({"music": [2], "voices": [2]}, music=upbeat)
    assert verdict(scorers.RefinementScope, bad, inputs) == (False, "voices changed unasked")
    none = refined({})
    assert verdict(scorers.RefinementScope, none, inputs) == (False, "no new music")


@pytest.mark.parametrize(
    ("direction", "changed", "passes"),
    [
        ("music_more_upbeat", {"music": {"musicPrompt": "Upbeat instrumental, no vocals"}}, True),
        ("music_more_upbeat", {"music": {"musicPrompt": "Instrumental bed at 128 bpm"}}, True),
        ("music_more_upbeat", {"music": {"musicPrompt": "Calm instrumental bed at 80 bpm"}}, False),
        ("music_calmer", {"music": {"musicPrompt": "Soft, gentle instrumental"}}, True),
        ("music_calmer", {}, False),  # the same prompt
        ("script_shorter", {"voices": [THAI_LINE] * 3}, True),
        ("script_shorter", {"voices": [THAI_LINE] * 6}, False),
        ("script_longer", {"voices": [THAI_LINE] * 6}, True),
        ("female_voice_swapped", {"voices_ids": ["th-f2", "th-m1"]}, True),
        ("female_voice_swapped", {"voices_ids": ["th-m1", "th-f1"]}, False),
        ("male_voice_swapped", {"voices_ids": ["th-f1", "th-f2"]}, True),
        ("no_sound_effects", {"sfx": {"soundFxPrompts": []}}, True),
        ("no_sound_effects", {}, False),
    ],
)
def test_the_change_goes_the_way_asked(direction, changed, passes):
    drafts = copy.deepcopy(good_drafts())
    if "music" in changed:
        drafts["music"] = {**drafts["music"], **changed["music"]}
    if "voices" in changed:
        drafts["voices"] = {"voiceTracks": voice_tracks(changed["voices"], ["th-f1", "th-m1"])}
    if "voices_ids" in changed:
        drafts["voices"] = script_with(changed["voices_ids"])
    if "sfx" in changed:
        drafts["sfx"] = changed["sfx"]
    kind = "music" if direction.startswith("music") else "sfx" if "sound" in direction else "voices"
    outcome = refined({kind: [2]}, **drafts)
    inputs = case_input({"message": "change it", "changes": [kind], "direction": direction})
    ok, reason = verdict(scorers.RefinementDirection, outcome, inputs)
    assert ok is passes, reason


def test_the_cost_of_a_case_is_reported_as_numbers():
    assert results(scorers.RunCost, good_outcome()) == {
        "tokens": (5400.0, None),
        "cost_usd": (0.0123, None),
        "latency_s": (4.5, None),
        "rounds": (3.0, None),
    }


def test_the_scorers_run_in_pydantic_evals():
    """A dataset of the good ad and an English script for a Thai ad, through the engine."""
    # Twelve lines of five words: about 24 s, 80% of the slot (a Latin word in a Thai
    # script is read as a word), so only the language is wrong.
    english = with_drafts(voices={"voiceTracks": voice_tracks([ENGLISH_LINE] * 12, ["th-f1"])})
    outcomes = {"good": good_outcome(), "english": good_outcome(drafts=english)}

    def inputs(name: str):
        brief = case_input().brief.model_copy(update={"clientDescription": name})
        return case_input().model_copy(update={"brief": brief})

    dataset = Dataset(
        name="two ads",
        cases=[Case(name=name, inputs=inputs(name), metadata=CaseMetadata()) for name in outcomes],
        evaluators=[scorer() for scorer in scorers.SCORERS],
    )

    async def produce(case_inputs):
        return outcomes[case_inputs.brief.clientDescription]

    report = asyncio.run(dataset.evaluate(produce, progress=False))
    cases = {case.name: case for case in report.cases}
    assert all(a.value for a in cases["good"].assertions.values()), cases["good"].assertions
    failed = {name for name, a in cases["english"].assertions.items() if not a.value}
    assert failed == {"ScriptInLanguage"}
    assert cases["good"].scores["tokens"].value == 5400.0


def test_a_measured_length_wins_over_the_estimate():
    """With a scratch track rendered, the script's length is what it measured."""
    ok, reason = verdict(scorers.ScriptFitsSlot, good_outcome(measured_speech_s=12.04))
    assert not ok and reason.startswith("measured 12 s for a 30 s slot (40%")
    ok, reason = verdict(scorers.ScriptFitsSlot, good_outcome(measured_speech_s=27.5))
    assert ok and reason.startswith("measured 27.5 s")
