"""The scratch track from the audio itself: each voice track starts where the timeline
says, within 10 ms; the file decodes at the ad's length and the loudness target; the bed
ducks under speech; effects are told apart; a language without a voice is read in
English and said so. Mastering, presets and the files: test_mastering.py."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile

from audio import guide_voice, mix, music
from audio.music import PlaceholderBed
from audio.presets import PRESETS
from providers.demo_lines import LINES


def script(language: str, count: int, overlap: float) -> dict:
    lines = LINES[language].calm[:count]
    return {
        "voiceTracks": [
            {
                "id": f"track-{n}",
                "voiceId": str(n),
                "voiceName": f"Voice {n}",
                "text": text,
                "playAfter": "start" if n == 0 else f"track-{n - 1}",
                "overlap": overlap,
                "speed": 1.0,
            }
            for n, text in enumerate(lines)
        ]
    }


def onsets(samples: np.ndarray, rate: int, *, quiet_s: float = 0.25) -> list[float]:
    """Where sound starts after at least ``quiet_s`` of silence (or at the very start)."""
    loud = np.abs(samples) > guide_voice.SILENCE
    found, silent_run = [], int(quiet_s * rate)
    for index in np.flatnonzero(loud[1:] & ~loud[:-1]) + 1:
        if not loud[max(0, index - silent_run) : index].any():
            found.append(index / rate)
    if loud[0]:
        found.insert(0, 0.0)
    return found


@pytest.mark.parametrize("language", ["th", "en", "ja"])
def test_each_track_starts_where_the_timeline_says_within_10_ms(language):
    made = mix.render(
        language=language, slot_s=30, voices=script(language, 5, -0.6), music=None, sfx=None
    )

    starts = [s.start_s for s in made.timeline.segments if s.kind == "voice"]
    heard = onsets(made.samples, made.sample_rate)
    assert len(heard) == len(starts), (heard, starts)
    for expected, measured in zip(starts, heard, strict=True):
        assert abs(expected - measured) <= 0.010, (expected, measured)
    # and each track ends where its synthesis does: the next starts 0.6 s after it
    voices = [s for s in made.timeline.segments if s.kind == "voice"]
    assert all(abs(b.start_s - a.end_s - 0.6) < 1e-9 for a, b in itertools.pairwise(voices))


@pytest.fixture(scope="module")
def whole_ad() -> mix.Mix:
    music = {
        "musicPrompt": "Warm instrumental at 96 bpm",
        "musicProvider": "loudly",
        "duration": 30,
    }
    sfx = {
        "soundFxPrompts": [
            {"description": "bright chime", "placement": {"type": "start"}, "duration": 1.5},
            {
                "description": "whoosh",
                "placement": {"type": "afterVoice", "index": 1},
                "duration": 1.0,
            },
            {"description": "cheer", "placement": {"type": "end"}, "duration": 2.0},
        ]
    }
    return mix.render(language="th", slot_s=30, voices=script("th", 6, 0.0), music=music, sfx=sfx)


def test_the_ad_decodes_at_its_length_and_loudness(whole_ad):
    wav, rate = soundfile.read(io.BytesIO(whole_ad.wav()))
    opus, opus_rate = soundfile.read(io.BytesIO(whole_ad.ogg_opus()))

    assert rate == whole_ad.sample_rate == 48_000 and abs(len(wav) / rate - 30.0) < 0.01
    assert opus_rate == 48_000 and abs(len(opus) / opus_rate - 30.0) < 0.05
    measured = pyloudnorm.Meter(rate).integrated_loudness(wav)
    assert abs(measured - (-16.0)) < 0.5 and whole_ad.loudness_lufs == pytest.approx(-16, abs=0.1)
    assert np.max(np.abs(wav)) < 10 ** (-1 / 20) and np.max(np.abs(opus)) < 1.0
    assert whole_ad.warnings == []


def test_another_loudness_target_is_met():
    quiet = mix.render(
        language="en",
        slot_s=15,
        voices=script("en", 3, 0.0),
        music=None,
        sfx=None,
        preset=PRESETS["broadcast"],
    )
    assert quiet.loudness_lufs == pytest.approx(-23, abs=0.1)
    assert quiet.preset.name == "broadcast" and quiet.true_peak_dbtp <= -1.0


def test_the_music_ducks_under_speech():
    rate = 1000
    voice = np.zeros(10 * rate, dtype=np.float32)
    voice[3 * rate : 6 * rate] = 0.5  # speech from 3 s to 6 s
    gain = mix._ducking(voice, rate)

    assert gain[4 * rate] == pytest.approx(mix.DUCKED_LEVEL)
    assert gain[1 * rate] == pytest.approx(mix.MUSIC_LEVEL)
    assert gain[8 * rate] == pytest.approx(mix.MUSIC_LEVEL)


def test_effects_are_told_apart_and_the_bed_follows_the_bpm():
    rate = 22_050
    chime, again, boom = (mix._effect(d, rate, rate) for d in ("chime", "chime", "boom"))
    assert np.array_equal(chime, again) and not np.array_equal(chime, boom)

    bed = PlaceholderBed().bed(prompt="pad at 120 bpm", count=8 * rate, rate=rate)  # 2 a second
    envelope = np.abs(bed).reshape(-1, 441).max(axis=1)  # 20 ms frames
    peaks = [n for n in range(1, len(envelope) - 1) if envelope[n] > envelope[n - 1] * 1.2]
    assert music._bpm("Warm pad at 96 BPM") == 96 and music._bpm("no tempo") == music.DEFAULT_BPM
    assert len(peaks) >= 8  # a pulse on each beat, not a flat drone


def test_a_language_without_a_guide_voice_is_read_in_english_and_said_so():
    made = mix.render(language="xx", slot_s=10, voices=script("en", 1, 0.0), music=None, sfx=None)
    assert made.warnings == ["track-0: no guide voice for 'xx'; read in English"]
    assert made.seconds == 10.0


def test_a_track_that_follows_no_track_is_a_render_error():
    voices = script("en", 2, 0.0)
    voices["voiceTracks"][1]["playAfter"] = "track-7"
    with pytest.raises(mix.RenderError, match="track-1 plays after 'track-7'"):
        mix.render(language="en", slot_s=10, voices=voices, music=None, sfx=None)


CATALOGUE = Path(__file__).resolve().parents[2] / "voices/fixtures/sample_catalogue.json"
CATALOGUE_LANGUAGES = sorted({voice["language"] for voice in json.loads(CATALOGUE.read_text())})


@pytest.mark.parametrize("language", CATALOGUE_LANGUAGES)
def test_an_ad_renders_in_every_catalogue_language(language):
    bank = LINES.get(language, LINES["en"])
    voices = {
        "voiceTracks": [
            {
                "id": "track-0",
                "voiceName": "v",
                "text": bank.calm[0],
                "playAfter": "start",
                "overlap": 0,
            },
            {
                "id": "track-1",
                "voiceName": "v",
                "text": bank.cta[0].format(brand="Spotify"),
                "playAfter": "track-0",
                "overlap": -0.3,
            },
        ]
    }
    music = {"musicPrompt": "pad at 90 bpm", "duration": 10}
    made = mix.render(language=language, slot_s=10, voices=voices, music=music, sfx=None)

    assert made.warnings == [] and made.seconds == 10.0
    assert made.loudness_lufs == pytest.approx(-16, abs=0.2)
    voice = [s for s in made.timeline.segments if s.kind == "voice"]
    assert voice[1].start_s == pytest.approx(voice[0].end_s + 0.3)


def test_a_bed_a_provider_made_is_fitted_to_the_music_and_said_so():
    rate = 44_100
    t = np.arange(12 * rate) / rate  # longer than its place: cut
    made = (0.25 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    music_draft = {"musicPrompt": "pad at 90 bpm", "musicProvider": "mubert", "duration": 10}
    placeholder = mix.render(language="en", slot_s=10, voices=None, music=music_draft, sfx=None)

    composed = mix.render(
        language="en",
        slot_s=10,
        voices=None,
        music=music_draft,
        sfx=None,
        music_maker=music.MadeBed(made, rate, "Mubert"),
        music_made_by="Mubert",
    )

    said = [s.made_by for s in placeholder.timeline.segments if s.kind == "music"]
    assert said == ["placeholder bed: Mubert not connected"]
    assert [s.made_by for s in composed.timeline.segments if s.kind == "music"] == ["Mubert"]
    stem = composed.stems["music"]
    assert len(stem) == 10 * mix.RATE and composed.seconds == 10.0

    # A steady tone stays steady (the placeholder pulses), and fades out at its very end.
    def peaks(stem):
        return np.abs(stem[2 * mix.RATE : 8 * mix.RATE]).reshape(-1, mix.RATE // 4).max(axis=1)

    assert np.ptp(peaks(stem)) < 0.01 * peaks(stem).max()
    assert np.ptp(peaks(placeholder.stems["music"])) > 0.1 * peaks(placeholder.stems["music"]).max()
    assert abs(stem[-1]) < 0.01 * peaks(stem).max()


def test_a_catalogue_voice_reads_alike_whatever_its_row_id_in_this_database():
    """The guide voice is chosen by the catalogue's own name of the voice (its provider and
    that provider's id), not the row's primary key: the same catalogue imported into another
    database reads a script at the same pitch and length. A voice not in the catalogue is
    still told apart by the id the draft gives."""
    line = script("th", 1, 0.0)["voiceTracks"][0]
    traits = {"gender": "female", "age": "young", "provider": "elevenlabs"}

    def read(voice_id: str, cast: dict | None) -> np.ndarray:
        voices = {"voiceTracks": [dict(line, voiceId=voice_id)]}
        made = mix.render(language="th", slot_s=5, voices=voices, music=None, sfx=None, cast=cast)
        return made.stems["voices"]

    here = read("210", {"210": dict(traits, provider_voice_id="ava-th")})
    elsewhere = read("570", {"570": dict(traits, provider_voice_id="ava-th")})
    another = read("210", {"210": dict(traits, provider_voice_id="mali-th")})
    assert np.array_equal(here, elsewhere)
    assert not np.array_equal(here, another)
    assert not np.array_equal(read("210", None), read("570", None))


@pytest.mark.parametrize("extra", [1, 3])
def test_a_track_ending_a_sample_past_the_timelines_rounded_length_is_placed_whole(extra):
    """Each track's start rounds to a sample on its own, and a 0.25 s gap is 5,512.5 of the
    guide voice's 22,050 a second: a script running past its slot could end a sample after
    the timeline's rounded length, and its render failed ("operands could not be
    broadcast together"), the scratch track not made."""
    rate = guide_voice.sample_rate()
    tracks = [
        {"id": f"track-{n}", "voiceId": str(n), "text": "-", "overlap": 0, "speed": 1.0}
        for n in range(2)
    ]
    tracks[0]["playAfter"], tracks[1]["playAfter"] = "start", "track-0"
    read = {
        "track-0": mix.Reading(np.full(3 * rate, 0.1, np.float32), rate),
        "track-1": mix.Reading(np.full(3 * rate + extra, 0.1, np.float32), rate),
    }

    made = mix.render(
        language="en",
        slot_s=5,
        voices={"voiceTracks": tracks},
        music=None,
        sfx=None,
        read=read,
        preroll_s=0.3,
        gap_s=0.25,
    )
    assert made.timeline.speech_end_s > 6.5 and made.seconds == pytest.approx(
        made.timeline.length_s, abs=1 / mix.RATE
    )
    voices = made.stems["voices"]
    assert np.abs(voices[-int(0.01 * mix.RATE) :]).min() > 0.01  # the last track to the end
