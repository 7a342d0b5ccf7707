"""The guide voice: eSpeak NG from the pip-installed library reads every language the
sample catalogue has, Thai as Thai speech of about the planned length, faster at a higher
speed, the same from threads at once; a language it has no voice for is an error."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from adstudio.speech import spoken_seconds
from audio import speech
from providers.demo_lines import LINES

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE_LANGUAGES = sorted(
    {
        v["language"]
        for v in json.loads((ROOT / "voices/fixtures/sample_catalogue.json").read_text())
    }
)


def seconds(samples: np.ndarray) -> float:
    return len(samples) / speech.sample_rate()


@pytest.mark.parametrize("language", CATALOGUE_LANGUAGES)
def test_every_catalogue_language_is_read_aloud(language):
    text = LINES.get(language, LINES["en"]).join(list(LINES.get(language, LINES["en"]).calm[:2]))
    samples = speech.synthesize(text, language=language)

    assert samples.dtype == np.float32 and seconds(samples) > 0.5
    assert float(np.sqrt(np.mean(samples**2))) > 0.02  # speech, not silence
    assert abs(samples[0]) > speech.SILENCE and abs(samples[-1]) > speech.SILENCE  # trimmed


def test_a_thai_script_is_thai_speech_of_about_its_planned_length():
    script = " ".join(LINES["th"].calm)
    samples = speech.synthesize(script, language="th")
    planned = spoken_seconds(script, language="th")

    assert 0.7 * planned <= seconds(samples) <= 1.3 * planned, (seconds(samples), planned)
    # Thai has its own voice: reading it as English gives other speech altogether
    english = speech.synthesize(script, language="en")
    assert abs(seconds(english) - seconds(samples)) > 0.2 * seconds(samples)


def test_a_faster_track_is_shorter():
    text = " ".join(LINES["en"].calm)
    normal = seconds(speech.synthesize(text, language="en"))
    fast = seconds(speech.synthesize(text, language="en", speed=1.5))

    assert 0.55 <= fast / normal <= 0.8


def test_threads_at_once_get_what_each_would_alone():
    """One synthesis at a time (the library is not thread-safe): each thread's speech is
    its own text's. eSpeak varies a few samples from one reading to the next, so the
    readings are compared by length and loudness, not sample by sample."""
    texts = [(" ".join(LINES[code].calm[:3]), code) for code in ("en", "th", "de", "ja")]
    alone = [speech.synthesize(text, language=code) for text, code in texts]
    with ThreadPoolExecutor(4) as pool:
        together = list(
            pool.map(lambda args: speech.synthesize(args[0], language=args[1]), texts * 3)
        )

    def rms(samples: np.ndarray) -> float:
        return float(np.sqrt(np.mean(samples**2)))

    for n, samples in enumerate(together):
        reference = alone[n % 4]
        assert abs(len(samples) - len(reference)) <= 0.01 * len(reference)
        assert abs(rms(samples) - rms(reference)) <= 0.1 * rms(reference)


def test_a_language_without_a_voice_is_named():
    with pytest.raises(speech.SpeechUnavailable, match="no voice for 'xx'"):
        speech.synthesize("hello", language="xx")
