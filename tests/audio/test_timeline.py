"""The placement arithmetic against timelines computed by hand (docs/api.md's
definitions): after "start", after a track, a gap, an overlap, the music, each effect
placement, and the warnings."""

from __future__ import annotations

import pytest

from adstudio.speaking_time import spoken_seconds
from audio.timeline import estimated_script_seconds, timeline, voice_segments


def track(n: int, after: str = "start", overlap: float = 0.0, name: str = "") -> dict:
    return {"id": f"track-{n}", "playAfter": after, "overlap": overlap, "voiceName": name}


def spans(segments) -> list[tuple[str, float, float]]:
    return [(s.ref, round(s.start_s, 6), round(s.end_s, 6)) for s in segments]


def test_tracks_follow_each_other_with_gaps_and_overlaps():
    tracks = [
        track(0),
        track(1, "track-0", -0.5),  # half a second after track-0 ends
        track(2, "track-1", 1.0),  # a second before track-1 ends
        track(3, "start"),  # with track-0, from the start
        track(4, "track-0", 0.0),  # right after track-0, alongside track-1
    ]
    segments, joins = voice_segments(tracks, [4.0, 3.0, 2.5, 1.0, 2.0])

    # 0: 0-4; 1: 4.5-7.5; 2: 6.5-9; 3: 0-1; 4: 4-6
    assert spans(segments) == [
        ("track-0", 0.0, 4.0),
        ("track-1", 4.5, 7.5),
        ("track-2", 6.5, 9.0),
        ("track-3", 0.0, 1.0),
        ("track-4", 4.0, 6.0),
    ]
    assert [(j.after, j.track, j.overlap_s) for j in joins] == [
        ("track-0", "track-1", -0.5),
        ("track-1", "track-2", 1.0),
        ("track-0", "track-4", 0.0),
    ]


def test_an_overlap_longer_than_the_track_before_starts_at_zero():
    segments, _ = voice_segments([track(0), track(1, "track-0", 5.0)], [2.0, 1.0])
    assert spans(segments) == [("track-0", 0.0, 2.0), ("track-1", 0.0, 1.0)]


def test_a_track_after_a_later_or_unknown_track_is_refused():
    with pytest.raises(ValueError, match="track-0 plays after 'track-1'"):
        voice_segments([track(0, "track-1")], [1.0])


def test_the_whole_ad_with_music_and_each_effect_placement():
    voices = {"voiceTracks": [track(0, name="Ploy"), track(1, "track-0", -0.25, "Anan")]}
    music = {"musicPrompt": "warm pad at 90 bpm", "duration": 30}
    sfx = {
        "soundFxPrompts": [
            {"description": "chime", "placement": {"type": "start"}, "duration": 1.5},
            {
                "description": "whoosh",
                "placement": {"type": "afterVoice", "index": 0},
                "duration": 1.0,
            },
            {"description": "cheer", "placement": {"type": "end"}, "duration": 2.0},
        ]
    }
    made = timeline(slot_s=30, voices=voices, music=music, sfx=sfx, voice_lengths_s=[10.0, 12.5])

    assert spans(made.segments) == [
        ("track-0", 0.0, 10.0),
        ("track-1", 10.25, 22.75),
        ("music", 0.0, 30.0),
        ("sfx-0", 0.0, 1.5),
        ("sfx-1", 10.0, 11.0),
        ("sfx-2", 28.0, 30.0),
    ]
    assert made.warnings == [] and made.length_s == 30 and made.speech_end_s == 22.75
    assert made.as_json()["segments"][1] == {
        "kind": "voice",
        "ref": "track-1",
        "startS": 10.25,
        "endS": 22.75,
        "label": "Anan",
    }


def test_what_does_not_fit_is_warned_and_the_length_covers_it():
    voices = {"voiceTracks": [track(0), track(1, "track-0")]}
    music = {"musicPrompt": "pad", "duration": 15}
    sfx = {
        "soundFxPrompts": [
            {
                "description": "boom",
                "placement": {"type": "afterVoice", "index": 1},
                "duration": 3.0,
            },
            {
                "description": "ghost",
                "placement": {"type": "afterVoice", "index": 7},
                "duration": 1.0,
            },
        ]
    }
    made = timeline(slot_s=15, voices=voices, music=music, sfx=sfx, voice_lengths_s=[8.0, 9.0])

    assert made.warnings == [
        "the speech ends at 17.00 s, after the 15 s slot",
        "the music (15 s) stops before the speech ends (17.00 s)",
        "sfx-0 ('boom') plays until 20.00 s, after the 15 s slot",
        "sfx-1 follows voice track 7, which does not exist",
    ]
    assert made.length_s == 20.0
    assert [s.ref for s in made.segments] == ["track-0", "track-1", "music", "sfx-0"]


def test_the_estimate_reads_each_track_at_its_speed():
    """A track at speed 0.5 takes twice as long; the estimate the voice tool writes and
    the scorers read is the same one."""
    line = "One plan for the whole family, everyone with their own account and no ads."
    tracks = [
        {"id": "track-0", "text": line, "playAfter": "start", "speed": 1.0},
        {"id": "track-1", "text": line, "playAfter": "track-0", "speed": 0.5},
    ]
    one = spoken_seconds(line, language="en")
    assert estimated_script_seconds(tracks, language="en") == round(one + 2 * one, 1)
    tracks[1]["speed"] = 2.0
    assert estimated_script_seconds(tracks, language="en") == round(one + one / 2, 1)
    del tracks[1]["speed"]  # absent: 1.0
    assert estimated_script_seconds(tracks, language="en") == round(2 * one, 1)


def test_a_latin_brand_in_a_chinese_line_is_read_as_words():
    chinese = "认识一下家庭方案。"
    with_brand = "认识一下Spotify Premium家庭方案。"
    extra = spoken_seconds(with_brand, language="zh") - spoken_seconds(chinese, language="zh")
    assert extra == pytest.approx(2 / 2.5)  # two words, not 14 letters (3.1 s)


def test_a_render_leaves_a_pre_roll_and_a_gap_where_the_script_gives_neither():
    tracks = [
        track(0),
        track(1, "track-0", 0.0),  # neither: the default gap
        track(2, "track-1", -0.5),  # a gap of its own: kept
        track(3, "track-2", 0.25),  # an overlap: kept
    ]
    segments, joins = voice_segments(tracks, [2.0, 1.0, 1.0, 1.0], preroll_s=0.3, gap_s=0.25)

    assert spans(segments) == [
        ("track-0", 0.3, 2.3),
        ("track-1", 2.55, 3.55),
        ("track-2", 4.05, 5.05),
        ("track-3", 4.8, 5.8),
    ]
    assert [round(j.overlap_s, 6) for j in joins] == [-0.25, -0.5, 0.25]
    # an estimate passes neither: the script as written
    plain, _ = voice_segments(tracks, [2.0, 1.0, 1.0, 1.0])
    assert spans(plain)[:2] == [("track-0", 0.0, 2.0), ("track-1", 2.0, 3.0)]


def test_each_effect_says_how_long_it_plays_under_speech():
    voices = {"voiceTracks": [track(0), track(1, "track-0", -1.0), track(2, "start")]}
    sfx = {
        "soundFxPrompts": [
            {"description": "chime", "placement": {"type": "start"}, "duration": 1.5},
            {"description": "gap", "placement": {"type": "afterVoice", "index": 0}, "duration": 1},
            {"description": "cheer", "placement": {"type": "end"}, "duration": 2.0},
        ]
    }
    made = timeline(
        slot_s=10, voices=voices, music=None, sfx=sfx, voice_lengths_s=[4.0, 3.0, 2.0], gap_s=9
    )
    effects = [s for s in made.as_json()["segments"] if s["kind"] == "sfx"]

    # chime 0-1.5 under track-0 (and track-2, counted once); the effect in the gap 4-5
    # under nothing; cheer 8-10 under track-1 (5-8): none
    assert [(e["ref"], e["underSpeechS"]) for e in effects] == [
        ("sfx-0", 1.5),
        ("sfx-1", 0.0),
        ("sfx-2", 0.0),
    ]
    made = timeline(slot_s=10, voices=voices, music=None, sfx=sfx, voice_lengths_s=[4.0, 4.0, 2.0])
    # track-1 now 5-9: the cheer (8-10) plays under its last second
    assert [s.under_speech_s for s in made.segments if s.kind == "sfx"] == [1.5, 0.0, 1.0]
    assert "underSpeechS" not in made.as_json()["segments"][0]  # voices do not carry it
