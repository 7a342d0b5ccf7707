"""A scratch track mastered like a real ad, measured by ffmpeg's ebur128 (not our meter):
every catalogue language at each preset's loudness and under its true-peak ceiling; the
same ad twice is the same samples, and a change of music leaves the voices where they
were; the pre-roll and the gap between speakers; the broadcast WAV's bext chunk; MP3 and
Opus that decode under full scale; the stems."""

from __future__ import annotations

import io
import json
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile

from audio import bwf, guide_voice, loudness, mix
from audio.presets import PRESETS
from providers.demo_lines import LINES
from tests.support.ebur128 import ffmpeg, measure_each

CATALOGUE = Path(__file__).resolve().parents[2] / "voices/fixtures/sample_catalogue.json"
LANGUAGES = sorted({voice["language"] for voice in json.loads(CATALOGUE.read_text())})
CAST = {"1": {"gender": "female", "age": "young"}, "2": {"gender": "male", "age": "old"}}


def two_voices(language: str, overlap: float = 0.0) -> dict:
    bank = LINES.get(language, LINES["en"])
    lines = [bank.calm[0], bank.cta[0].format(brand="Spotify")]
    return {
        "voiceTracks": [
            {
                "id": f"track-{n}",
                "voiceId": str(n + 1),
                "voiceName": f"Voice {n}",
                "text": text,
                "playAfter": "start" if n == 0 else "track-0",
                "overlap": overlap,
            }
            for n, text in enumerate(lines)
        ]
    }


MUSIC = {"musicPrompt": "pad at 90 bpm", "duration": 10}
SFX = {"soundFxPrompts": [{"description": "chime", "placement": {"type": "end"}, "duration": 1}]}


@pytest.mark.slow  # ffmpeg, one for every language
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_language_is_at_the_presets_loudness_under_its_ceiling(preset):
    """ffmpeg prints true peak to a tenth of a dB: at or under the ceiling as printed."""
    target = PRESETS[preset]
    made = [
        mix.render(
            language=language,
            slot_s=10,
            voices=two_voices(language),
            music=MUSIC,
            sfx=SFX,
            preset=target,
            cast=CAST,
        )
        for language in LANGUAGES
    ]
    misses = []
    for language, render, heard in zip(
        LANGUAGES, made, measure_each([m.wav() for m in made]), strict=True
    ):
        if (
            heard.true_peak_dbtp > target.true_peak_dbtp + 0.0
            or abs(heard.integrated_lufs - target.loudness_lufs) > 0.5
        ):
            misses.append((language, heard))
        # the render's own figures say the same
        assert abs(render.loudness_lufs - heard.integrated_lufs) <= 0.2, (language, heard)
    assert misses == [], misses


@pytest.fixture(scope="module")
def whole_ad() -> mix.Mix:
    return mix.render(
        language="en",
        slot_s=12,
        voices=two_voices("en"),
        music=MUSIC,
        sfx=SFX,
        cast=CAST,
        preroll_s=0.3,
        gap_s=0.25,
    )


def test_the_same_ad_is_the_same_samples_and_new_music_leaves_the_voices_in_place(whole_ad):
    again = mix.render(
        language="en",
        slot_s=12,
        voices=two_voices("en"),
        music=MUSIC,
        sfx=SFX,
        cast=CAST,
        preroll_s=0.3,
        gap_s=0.25,
    )
    other_music = mix.render(
        language="en",
        slot_s=12,
        voices=two_voices("en"),
        music={"musicPrompt": "driving rock at 140 bpm", "duration": 12},
        sfx=SFX,
        cast=CAST,
        preroll_s=0.3,
        gap_s=0.25,
    )

    assert np.array_equal(again.samples, whole_ad.samples)
    assert all(np.array_equal(again.stems[k], whole_ad.stems[k]) for k in whole_ad.stems)
    when = datetime(2026, 11, 29, 12, 0)
    files, files_again = whole_ad.deliverables(originated=when), again.deliverables(originated=when)
    # the same bytes, but for the Ogg stream's serial number (random): the same samples
    assert [f for f in files if files[f] != files_again[f]] == ["ogg"]
    decoded = [soundfile.read(io.BytesIO(f["ogg"]))[0] for f in (files, files_again)]
    assert np.array_equal(*decoded)
    assert not np.array_equal(other_music.stems["music"], whole_ad.stems["music"])
    voices = [s for s in whole_ad.timeline.segments if s.kind == "voice"]
    assert [s for s in other_music.timeline.segments if s.kind == "voice"] == voices
    # the voices' samples where they were: the same up to the mastering's gain
    before, after = whole_ad.stems["voices"], other_music.stems["voices"]
    np.testing.assert_allclose(
        after / np.abs(after).max(), before / np.abs(before).max(), rtol=0, atol=1e-5
    )


def test_the_speech_starts_after_the_pre_roll_and_speakers_leave_a_gap(whole_ad):
    voice = whole_ad.stems["voices"]
    rate = whole_ad.sample_rate
    loud = np.flatnonzero(np.abs(voice) > guide_voice.SILENCE)
    first, second = (s for s in whole_ad.timeline.segments if s.kind == "voice")

    assert abs(loud[0] / rate - 0.3) <= 0.01 and first.start_s == pytest.approx(0.3)
    assert second.start_s == pytest.approx(first.end_s + 0.25)
    between = voice[round((first.end_s + 0.01) * rate) : round((second.start_s - 0.01) * rate)]
    assert between.size > 0.2 * rate and np.abs(between).max() <= guide_voice.SILENCE


def test_the_guide_voices_of_a_woman_and_a_man_differ(whole_ad):
    first, second = (s for s in whole_ad.timeline.segments if s.kind == "voice")
    rate, voice = whole_ad.sample_rate, whole_ad.stems["voices"]

    def pitch(segment) -> float:
        """The median pitch of its voiced 43 ms frames, by autocorrelation (60-400 Hz)."""
        part = voice[round(segment.start_s * rate) : round(segment.end_s * rate)]
        found, size = [], 2048
        for start in range(0, len(part) - size, size // 2):
            frame = part[start : start + size]
            if np.sqrt(np.mean(frame**2)) < 0.05:
                continue
            correlation = np.correlate(frame, frame, "full")[size - 1 :]
            low, high = rate // 400, rate // 60
            found.append(rate / (low + int(np.argmax(correlation[low:high]))))
        return float(np.median(found))

    assert pitch(first) > 1.4 * pitch(second)  # the young woman (1) over the old man (2)


@pytest.mark.slow  # ffprobe
def test_the_broadcast_wav_has_its_bext_chunk(whole_ad):
    when = datetime(2026, 11, 29, 14, 5, 9)
    data = whole_ad.wav(description="Spotify family plan: voices v2, music v1", originated=when)
    bext = bwf.read_bext(data)

    assert bext["Originator"] == "AdStudio" and bext["Version"] == 2
    assert bext["Description"] == "Spotify family plan: voices v2, music v1"
    assert (bext["OriginationDate"], bext["OriginationTime"]) == ("2026-11-29", "14:05:09")
    assert bext["LoudnessValue"] == pytest.approx(whole_ad.loudness_lufs, abs=0.01)
    assert bext["MaxTruePeakLevel"] == pytest.approx(whole_ad.true_peak_dbtp, abs=0.01)
    assert bext["MaxTruePeakLevel"] <= -1.0 and bext["LoudnessRange"] > 0
    assert bext["MaxMomentaryLoudness"] >= bext["MaxShortTermLoudness"] > -16
    assert bext["CodingHistory"].startswith("A=PCM,F=48000,W=24,M=mono")
    # another reader agrees: ffprobe's tags, and 48 kHz 24-bit samples
    ffprobe = str(Path(ffmpeg()).with_name("ffprobe"))
    probe = subprocess.run(
        [ffprobe, "-v", "error", "-show_format", "-show_streams", "-of", "json", "-"],
        input=data,
        capture_output=True,
        check=True,
    )
    shown = json.loads(probe.stdout)
    tags = shown["format"]["tags"]  # ffmpeg's names for the bext fields
    assert (tags["encoded_by"], tags["comment"]) == ("AdStudio", bext["Description"])
    assert (tags["date"], tags["creation_time"]) == ("2026-11-29", "14:05:09")
    stream = shown["streams"][0]
    assert (stream["sample_rate"], stream["bits_per_sample"], stream["codec_name"]) == (
        "48000",
        24,
        "pcm_s24le",
    )
    samples, rate = soundfile.read(io.BytesIO(data), dtype="float32")
    assert rate == 48_000 and np.max(np.abs(samples - whole_ad.samples)) < 2**-22


@pytest.mark.parametrize("preset", ["streaming", "atsc"])
def test_mp3_and_opus_decode_under_full_scale(preset):
    made = mix.render(
        language="th",
        slot_s=10,
        voices=two_voices("th", overlap=0.5),
        music=MUSIC,
        sfx=SFX,
        preset=PRESETS[preset],
        cast=CAST,
    )
    for data in (made.mp3(), made.ogg_opus()):
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32")
        assert rate == 48_000 and abs(len(samples) / rate - made.seconds) < 0.1
        assert np.abs(samples).max() < 1.0
        heard = pyloudnorm.Meter(rate).integrated_loudness(samples.astype(np.float64))
        assert abs(heard - PRESETS[preset].loudness_lufs) < 0.5


def test_a_stem_per_kind_summing_to_the_master_before_its_limiter(whole_ad):
    files = whole_ad.deliverables()
    stems = {k: soundfile.read(io.BytesIO(files[f"{k}.wav"]), dtype="float32") for k in mix.KINDS}

    assert set(files) == {"ogg", "wav", "mp3", "voices.wav", "music.wav", "sfx.wav"}
    assert {len(samples) for samples, _ in stems.values()} == {len(whole_ad.samples)}
    assert {rate for _, rate in stems.values()} == {48_000}
    summed = sum(samples.astype(np.float64) for samples, _ in stems.values())
    # the master is the sum, limited: never louder, and the same where nothing was limited
    sounding = np.abs(summed) > 1e-3
    ratio = whole_ad.samples[sounding] / summed[sounding]
    assert ratio.max() <= 1.0 + 1e-5 and np.median(ratio) == pytest.approx(1.0, abs=1e-5)
    assert loudness.true_peak(summed, 48_000) > whole_ad.true_peak_dbtp  # what was limited


def test_only_the_kinds_rendered_have_stems():
    made = mix.render(
        language="en", slot_s=6, voices=two_voices("en"), music=None, sfx=None, cast=CAST
    )
    assert set(made.stems) == {"voices"}
    assert set(made.deliverables()) == {"ogg", "wav", "mp3", "voices.wav"}


def test_a_silent_mix_stays_silent():
    made = mix.render(language="en", slot_s=5, voices=None, music=None, sfx={"soundFxPrompts": []})
    assert not made.samples.any() and made.measured.integrated_lufs == float("-inf")
    assert bwf.read_bext(made.wav())["LoudnessValue"] is None  # unset, not -inf
