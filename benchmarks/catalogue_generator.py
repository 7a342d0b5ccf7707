"""A deterministic, plausible voice catalogue for the sample fixture, tests and benchmarks.

``python -m benchmarks.catalogue_generator --count 360 --seed 7 --output PATH`` writes our JSON
format (the sample fixture is exactly that); ``--format csv`` and ``--format elevenlabs``
write the other two. It needs no Django: the same arguments always give the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from voices.fields import CATALOGUE_FIELDS

# The columns of our CSV format: the catalogue fields the importer reads.
CSV_COLUMNS = CATALOGUE_FIELDS


@dataclass(frozen=True)
class LocaleData:
    locale: str
    weight: int  # share of a large catalogue
    accents: tuple[str, ...]
    female: tuple[str, ...]
    male: tuple[str, ...]
    surnames: tuple[str, ...]
    surname_first: bool = False  # "Wang Fang", "Sato Yui"

    @property
    def language(self) -> str:
        return self.locale.split("-")[0]


_EN_F = ("Emma", "Olivia", "Ava", "Sophia", "Grace", "Chloe", "Hannah", "Lily", "Zoe", "Ruby")
_EN_M = ("Liam", "Noah", "James", "Oliver", "Ethan", "Lucas", "Henry", "Jack", "Owen", "Leo")
_ES_F = ("Lucía", "Sofía", "Valentina", "Camila", "Isabella", "Elena", "Carmen", "Paula")
_ES_M = ("Mateo", "Santiago", "Diego", "Alejandro", "Javier", "Pablo", "Andrés", "Carlos")
_ES_S = ("García", "Martínez", "López", "Hernández", "Romero", "Torres", "Ruiz", "Navarro")
_PT_F = ("Ana", "Beatriz", "Juliana", "Mariana", "Camila", "Larissa", "Inês", "Leonor")
_PT_M = ("João", "Pedro", "Lucas", "Gabriel", "Rafael", "Thiago", "Tiago", "Duarte")
_PT_S = ("Silva", "Santos", "Oliveira", "Souza", "Costa", "Pereira", "Ferreira", "Almeida")

LOCALES: tuple[LocaleData, ...] = (
    LocaleData(
        "en-US",
        14,
        ("american", "southern american", "new york"),
        (*_EN_F, "Madison", "Harper"),
        (*_EN_M, "Mason", "Logan"),
        ("Johnson", "Miller", "Davis", "Carter", "Brooks", "Hayes", "Parker", "Reed"),
    ),
    LocaleData(
        "en-GB",
        6,
        ("british", "scottish", "northern english"),
        (*_EN_F, "Imogen", "Poppy"),
        (*_EN_M, "Alfie", "Harry"),
        ("Smith", "Taylor", "Wright", "Walker", "Hughes", "Campbell", "Fletcher", "Ashworth"),
    ),
    LocaleData(
        "en-AU",
        3,
        ("australian",),
        (*_EN_F, "Matilda", "Isla"),
        (*_EN_M, "Cooper", "Hamish"),
        ("Kelly", "Murphy", "Ryan", "Nguyen", "Mitchell", "Cooper", "Bennett", "Doyle"),
    ),
    LocaleData("es-ES", 5, ("castilian", "andalusian"), _ES_F, _ES_M, _ES_S),
    LocaleData(
        "es-MX",
        5,
        ("mexican",),
        (*_ES_F, "Guadalupe", "Ximena"),
        (*_ES_M, "Emiliano", "Luis"),
        (*_ES_S, "Ramírez", "Flores"),
    ),
    LocaleData("pt-BR", 6, ("brazilian", "carioca", "paulista"), _PT_F, _PT_M, _PT_S),
    LocaleData(
        "pt-PT",
        2,
        ("european portuguese", "lisbon"),
        ("Inês", "Leonor", "Matilde", "Carolina", "Mafalda", "Rita"),
        ("Duarte", "Tiago", "Afonso", "Rodrigo", "Martim", "Nuno"),
        ("Rodrigues", "Martins", "Sousa", "Gonçalves", "Carvalho", "Ribeiro"),
    ),
    LocaleData(
        "fr-FR",
        5,
        ("parisian", "southern french"),
        ("Camille", "Léa", "Chloé", "Manon", "Inès", "Juliette", "Louise", "Élise"),
        ("Louis", "Gabriel", "Hugo", "Arthur", "Jules", "Théo", "Antoine", "Mathis"),
        ("Martin", "Bernard", "Dubois", "Lefebvre", "Moreau", "Laurent", "Girard", "Roux"),
    ),
    LocaleData(
        "fr-CA",
        1,
        ("quebecois",),
        ("Florence", "Rosalie", "Maélie", "Jeanne"),
        ("William", "Félix", "Samuel", "Olivier"),
        ("Tremblay", "Gagnon", "Roy", "Côté", "Bouchard"),
    ),
    LocaleData(
        "de-DE",
        5,
        ("standard german", "bavarian"),
        ("Anna", "Lena", "Mia", "Hannah", "Lea", "Johanna", "Katharina", "Greta"),
        ("Lukas", "Felix", "Jonas", "Maximilian", "Paul", "Leon", "Tobias", "Moritz"),
        ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Wagner", "Becker", "Hoffmann"),
    ),
    LocaleData(
        "it-IT",
        3,
        ("standard italian", "roman"),
        ("Giulia", "Chiara", "Francesca", "Sara", "Martina", "Alessia"),
        ("Lorenzo", "Matteo", "Alessandro", "Davide", "Marco", "Giovanni"),
        ("Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci"),
    ),
    LocaleData(
        "ja-JP",
        4,
        ("tokyo", "kansai"),
        ("Yui", "Haruka", "Aoi", "Sakura", "Yuna", "Mei", "Rin", "Hina"),
        ("Haruto", "Sota", "Ren", "Yuto", "Hiroshi", "Kenji", "Takumi", "Daiki"),
        ("Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito", "Yamamoto", "Nakamura"),
        surname_first=True,
    ),
    LocaleData(
        "zh-CN",
        4,
        ("mainland", "beijing"),
        ("Fang", "Jing", "Li Na", "Xiu Ying", "Mei", "Yan", "Hui", "Ting"),
        ("Wei", "Jun", "Hao", "Lei", "Qiang", "Ming", "Jie", "Tao"),
        ("Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Zhao", "Huang"),
        surname_first=True,
    ),
    LocaleData(
        "zh-TW",
        1,
        ("taiwanese",),
        ("Shu Fen", "Ya Ting", "Yi Chun", "Mei Ling"),
        ("Chih Ming", "Chun Hung", "Wen Hsiung", "Kuan Yu"),
        ("Chen", "Lin", "Huang", "Chang", "Wu"),
        surname_first=True,
    ),
    LocaleData(
        "ko-KR",
        3,
        ("seoul", "gyeongsang"),
        ("Ji-woo", "Seo-yeon", "Min-ji", "Ha-eun", "Soo-ah", "Yuna"),
        ("Min-jun", "Seo-jun", "Ji-ho", "Do-yun", "Hyun-woo", "Joon"),
        ("Kim", "Lee", "Park", "Choi", "Jung", "Kang"),
        surname_first=True,
    ),
    LocaleData(
        "th-TH",
        3,
        ("central thai", "isan", "northern thai"),
        ("Malee", "Ratana", "Siriporn", "Kanya", "Pimchanok", "Naree", "Ploy", "Araya"),
        ("Somchai", "Niran", "Kittisak", "Anan", "Prasert", "Thanawat", "Chaiwat", "Krit"),
        ("Wongsakul", "Srisuk", "Chaiyaporn", "Boonmee", "Rattanakorn", "Saetang"),
    ),
    LocaleData(
        "id-ID",
        3,
        ("jakarta", "javanese"),
        ("Siti", "Dewi", "Putri", "Ayu", "Indah", "Rina", "Wulan", "Sari"),
        ("Budi", "Agus", "Rizky", "Andi", "Dimas", "Eko", "Fajar", "Hendra"),
        ("Santoso", "Wijaya", "Saputra", "Hidayat", "Kusuma", "Pratama", "Nugroho"),
    ),
    LocaleData(
        "vi-VN",
        3,
        ("northern vietnamese", "southern vietnamese"),
        ("Linh", "Lan", "Mai", "Hoa", "Thao", "Ngoc", "Trang", "Huong"),
        ("Minh", "Tuan", "Hung", "Duc", "Quang", "Long", "Nam", "Khanh"),
        ("Nguyen", "Tran", "Le", "Pham", "Hoang", "Vu", "Dang", "Bui"),
        surname_first=True,
    ),
    LocaleData(
        "pl-PL",
        3,
        ("standard polish", "silesian"),
        ("Zofia", "Maja", "Julia", "Agnieszka", "Katarzyna", "Magdalena", "Ewa", "Alicja"),
        ("Jakub", "Kacper", "Piotr", "Tomasz", "Michał", "Krzysztof", "Marek", "Wojciech"),
        ("Nowak", "Kowalski", "Wiśniewski", "Wójcik", "Kamiński", "Lewandowski", "Zieliński"),
    ),
    LocaleData(
        "cs-CZ",
        2,
        ("bohemian", "moravian"),
        ("Tereza", "Eliška", "Anna", "Karolína", "Lucie", "Petra"),
        ("Jan", "Jakub", "Tomáš", "Lukáš", "Ondřej", "Petr"),
        ("Novák", "Svoboda", "Novotný", "Dvořák", "Černý", "Procházka"),
    ),
    LocaleData(
        "ro-RO",
        2,
        ("standard romanian", "moldavian"),
        ("Ioana", "Maria", "Elena", "Andreea", "Alexandra", "Bianca"),
        ("Andrei", "Alexandru", "Mihai", "Ion", "Stefan", "Gabriel"),
        ("Popescu", "Ionescu", "Popa", "Dumitru", "Stan", "Constantin"),
    ),
    LocaleData(
        "hi-IN",
        3,
        ("north indian", "mumbai"),
        ("Priya", "Ananya", "Kavya", "Isha", "Neha", "Pooja", "Diya", "Meera"),
        ("Aarav", "Rohan", "Arjun", "Vikram", "Rahul", "Karan", "Aditya", "Sanjay"),
        ("Sharma", "Verma", "Gupta", "Patel", "Singh", "Kumar", "Mehta", "Iyer"),
    ),
    LocaleData(
        "nl-NL",
        2,
        ("standard dutch", "flemish"),
        ("Emma", "Sophie", "Julia", "Anouk", "Fleur", "Sanne"),
        ("Daan", "Sem", "Lars", "Bram", "Thijs", "Joris"),
        ("de Jong", "Jansen", "de Vries", "van Dijk", "Bakker", "Visser"),
    ),
    LocaleData(
        "tr-TR",
        2,
        ("istanbul", "anatolian"),
        ("Zeynep", "Elif", "Ayşe", "Defne", "Ebru", "Selin"),
        ("Mehmet", "Mustafa", "Emre", "Burak", "Can", "Kerem"),
        ("Yılmaz", "Kaya", "Demir", "Şahin", "Çelik", "Aydın"),  # noqa: RUF001 (Turkish dotless i)
    ),
    LocaleData(
        "ar-SA",
        2,
        ("gulf", "levantine", "egyptian"),
        ("Fatima", "Layla", "Noor", "Mariam", "Huda", "Salma"),
        ("Omar", "Khalid", "Youssef", "Ahmed", "Faisal", "Karim"),
        ("Al-Harbi", "Al-Qahtani", "Haddad", "Mansour", "Nasser", "Saleh"),
    ),
    LocaleData(
        "sv-SE",
        1,
        ("standard swedish",),
        ("Alice", "Maja", "Ebba", "Astrid", "Freja"),
        ("Erik", "Oskar", "Axel", "Elias", "Nils"),
        ("Andersson", "Johansson", "Karlsson", "Nilsson", "Lindqvist"),
    ),
    LocaleData(
        "tl-PH",
        1,
        ("manila",),
        ("Maria", "Angelica", "Kristine", "Jasmine", "Bea"),
        ("Jose", "Mark", "Paolo", "Miguel", "Rafael"),
        ("Reyes", "Santos", "Cruz", "Bautista", "Garcia", "Mendoza"),
    ),
)

STYLES = (
    "warm",
    "energetic",
    "calm",
    "authoritative",
    "friendly",
    "playful",
    "conversational",
    "deep",
    "bright",
    "soft",
    "confident",
    "upbeat",
    "smooth",
    "raspy",
    "crisp",
    "cheerful",
)
USE_CASES = (
    "advertisement",
    "narration",
    "news",
    "conversational",
    "characters",
    "audiobook",
    "social media",
    "meditation",
    "announcer",
    "e-learning",
    "podcast",
    "trailer",
)
AGES = ("young", "young", "middle aged", "middle aged", "old")
_QUALITIES = (
    "clear",
    "natural",
    "expressive",
    "relaxed",
    "punchy",
    "polished",
    "gentle",
    "rich",
    "lively",
    "trustworthy",
    "husky",
    "velvety",
)
_PURPOSES = {
    "advertisement": "radio and streaming ads",
    "narration": "documentaries and explainers",
    "news": "news reads and bulletins",
    "conversational": "dialogue and assistants",
    "characters": "games and animation",
    "audiobook": "long-form audiobooks",
    "social media": "short social clips",
    "meditation": "meditation and wellness",
    "announcer": "station idents and promos",
    "e-learning": "courses and tutorials",
    "podcast": "podcast intros and reads",
    "trailer": "movie and game trailers",
}


_AGE_WORDS = {"young": "young", "middle aged": "middle-aged", "old": "older"}


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def generate(count: int, seed: int, provider: str = "sample") -> Iterator[dict[str, Any]]:
    """``count`` voices in our JSON format. Every locale gets voices before weighting
    kicks in, so even a small catalogue covers every language."""
    rng = random.Random(seed)
    weights = [loc.weight for loc in LOCALES]
    guaranteed = min(count, len(LOCALES) * 6)
    used: set[tuple[str, str]] = set()
    for index in range(count):
        if index < guaranteed:
            data = LOCALES[index % len(LOCALES)]
        else:
            data = rng.choices(LOCALES, weights)[0]
        yield _voice(rng, data, index, provider, seed, used)


def _voice(
    rng: random.Random,
    data: LocaleData,
    index: int,
    provider: str,
    seed: int,
    used: set[tuple[str, str]],
) -> dict[str, Any]:
    roll = rng.random()
    gender = "female" if roll < 0.48 else "male" if roll < 0.95 else "neutral"
    names = {"female": data.female, "male": data.male}.get(gender, data.female + data.male)
    for _attempt in range(4):  # avoid two voices of one name in a locale while names last
        first, last = rng.choice(names), rng.choice(data.surnames)
        name = f"{last} {first}" if data.surname_first else f"{first} {last}"
        if (data.locale, name) not in used:
            break
    used.add((data.locale, name))
    style = rng.choice(STYLES)
    use_case = rng.choice(USE_CASES)
    age = rng.choice(AGES)
    accent = rng.choice(data.accents)
    qualities = rng.sample(_QUALITIES, 2)
    who = {"female": "female", "male": "male"}.get(gender, "gender-neutral")
    voice_id = f"{data.locale.lower()}-{index + 1:06d}"
    return {
        "provider": provider,
        "provider_voice_id": voice_id,
        "name": name,
        "language": data.language,
        "locale": data.locale,
        "accent": accent,
        "gender": gender,
        "age": age,
        "style": style,
        "use_case": use_case,
        "description": (
            f"{qualities[0].capitalize()}, {qualities[1]} {_AGE_WORDS[age]} {who} voice with "
            f"{_a(accent)} accent; {_a(style)} read for {_PURPOSES[use_case]}."
        ),
        "preview_url": f"https://cdn.example.com/{provider}/previews/{voice_id}.mp3",
        "metadata": {"generator": "benchmarks.catalogue_generator", "seed": seed},
    }


def to_elevenlabs(voice: dict[str, Any]) -> dict[str, Any]:
    """The same voice as ElevenLabs' GET /v1/voices would list it."""
    return {
        "voice_id": voice["provider_voice_id"],
        "name": voice["name"],
        "category": "professional",
        "labels": {
            "accent": voice["accent"],
            "gender": voice["gender"],
            "age": voice["age"].replace(" ", "_"),
            "descriptive": voice["style"],
            "use_case": voice["use_case"].replace(" ", "_"),
        },
        "description": voice["description"],
        "preview_url": voice["preview_url"],
        "verified_languages": [
            {
                "language": voice["language"],
                "model_id": "eleven_multilingual_v2",
                "accent": voice["accent"],
                "locale": voice["locale"],
                "preview_url": voice["preview_url"],
            }
        ],
    }


def write(voices: Iterator[dict[str, Any]], out: TextIO, file_format: str = "json") -> None:
    """One voice per line, so a file's line numbers point at voices."""
    if file_format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for voice in voices:
            row = dict(voice, metadata=json.dumps(voice["metadata"], sort_keys=True))
            writer.writerow([row[name] for name in CSV_COLUMNS])
        return
    if file_format == "elevenlabs":
        voices = (to_elevenlabs(voice) for voice in voices)
        out.write('{"voices": [\n')
    else:
        out.write("[\n")
    for number, voice in enumerate(voices):
        if number:
            out.write(",\n")
        out.write(json.dumps(voice, ensure_ascii=False, sort_keys=True))
    out.write("\n]}\n" if file_format == "elevenlabs" else "\n]\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=360)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--provider", default="sample")
    parser.add_argument("--format", choices=["json", "csv", "elevenlabs"], default="json")
    parser.add_argument("--output", help="File to write (default: standard output).")
    args = parser.parse_args(argv)
    if args.count < 0:
        parser.error("--count must not be negative")
    voices = generate(args.count, args.seed, args.provider)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as out:
            write(voices, out, args.format)
    else:
        sys.stdout.reconfigure(encoding="utf-8")
        write(voices, sys.stdout, args.format)


if __name__ == "__main__":
    main()
