"""The catalogue generator: deterministic, plausible, and the source of the sample fixture."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

from benchmarks.catalogue_generator import generate, main, to_elevenlabs, write
from voices.catalogue_rows import FIELDS

FIXTURE = Path(__file__).resolve().parents[2] / "voices" / "fixtures" / "sample_catalogue.json"


def render(count: int, seed: int, file_format: str = "json") -> str:
    out = io.StringIO()
    write(generate(count, seed), out, file_format)
    return out.getvalue()


def test_same_seed_same_bytes_other_seed_other_catalogue():
    assert render(50, 3) == render(50, 3)
    assert render(50, 3) != render(50, 4)


def test_fixture_is_the_generator_output(capsys):
    main(["--count", "360", "--seed", "7"])
    assert capsys.readouterr().out == FIXTURE.read_text(encoding="utf-8")


def test_fixture_is_varied_enough_for_a_demo():
    voices = json.loads(FIXTURE.read_text(encoding="utf-8"))
    locales = Counter(v["locale"] for v in voices)

    assert len(voices) >= 300
    assert len({v["language"] for v in voices}) >= 15
    for locale in (
        "en-US", "en-GB", "en-AU", "es-ES", "es-MX", "pt-BR", "pt-PT", "th-TH", "id-ID",
        "vi-VN", "pl-PL", "cs-CZ", "ro-RO", "zh-CN", "ja-JP", "de-DE", "fr-FR",
    ):  # fmt: skip
        assert locales[locale] >= 5, locale
    assert set(Counter(v["gender"] for v in voices)) == {"female", "male", "neutral"}
    assert len({v["age"] for v in voices}) == 3
    assert len({v["style"] for v in voices}) >= 10
    assert len({(v["provider"], v["provider_voice_id"]) for v in voices}) == len(voices)
    assert len({(v["locale"], v["name"]) for v in voices}) == len(voices)  # no twins


def test_names_follow_the_language():
    voices = list(generate(400, 1))
    thai = {v["name"] for v in voices if v["language"] == "th"}
    japanese = {v["name"] for v in voices if v["language"] == "ja"}
    assert any(name.startswith(("Somchai", "Malee", "Niran", "Ratana")) for name in thai)
    assert all(name.split()[0] in {"Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito",
                                   "Yamamoto", "Nakamura"} for name in japanese)  # fmt: skip


def test_the_csv_it_writes_has_the_import_fields_as_its_header():
    assert render(3, 1, "csv").splitlines()[0] == ",".join(FIELDS)


def test_elevenlabs_shape():
    voice = next(generate(1, 1))
    exported = to_elevenlabs(voice)
    assert exported["voice_id"] == voice["provider_voice_id"]
    assert exported["labels"]["gender"] == voice["gender"]
    assert exported["verified_languages"][0]["locale"] == voice["locale"]
    assert json.loads(render(2, 1, "elevenlabs"))["voices"][1]["name"]
