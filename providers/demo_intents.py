"""What a person asks of the demo director in a follow-up, read by intent rather than by
keyword: a small phrase table per intent, with negation ("not so intense", "shouldn't
be"), comparatives ("less energetic", "more relaxed") and complaints ("too slow", "the
guy sounds too old") turned into the direction the person wants, in English and in the
commonest words of a few other catalogue languages.

A phrase table is data: a new phrasing is a word in a tuple, never a branch.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# --- the phrase tables ---------------------------------------------------------------------

MUSIC = (
    r"music|musik|muziek|musica|musique|muzyka|muzik|muzica|hudba|song|soundtrack|melody|"
    r"tune|jingle|instrumental|tempo|beat|bed|bpm|lagu|nhac|baile"
)
VOICE = (
    r"voices?|voice actors?|narrators?|speakers?|reader|announcer|guy|man|woman|lady|girl|"
    r"men|women|he|she|him|her|suara|voz|voces|stimme|stimmen|voix|glos|ses"
)
SCRIPT = r"script|copy|lines?|text|voice-?over|wording|words|read|reading|rushed|dead air"
SFX = (
    r"sound ?effects?|effects?|sfx|fx|efectos?|efeitos?|effekte|effets?|efek(?: suara)?|"
    r"whoosh(?:es)?|chimes?|dings?"
)
AD = r"ad|spot|commercial|advert|advertisement|whole thing|it"

# Mood words by the way they move the music: +1 livelier, -1 calmer.
LIVELY = (
    r"upbeat|energetic|energy|lively|livelier|punchy|punch|punchier|fast|faster|quick|"
    r"quicker|hype|hyper|exciting|excited|intense|dynamic|driving|urgent|urgency|happy|"
    r"happier|bright|brighter|fun|alegre|animada|animado|rapida|rapido|frohlich|schneller|"
    r"energique|rapide|vrolijk|sneller|semangat|ceria|cepat|veloce|allegra|vivace"
)
CALM = (
    r"calm|calmer|relaxed|relaxing|mellow|mellower|soft|softer|gentle|gentler|slow|slower|"
    r"chill|chilled|quiet|quieter|sleepy|subtle|soothing|laid-?back|tranquila|tranquilo|"
    r"calma|calme|doux|douce|ruhig|ruhiger|langsamer|rustig|rustiger|tenang|pelan|lembut|"
    r"lenta|lento|suave|suaves"
)
# Before a mood word: the person wants the opposite of it ("less", "not so", "too").
OPPOSITE = (
    r"less|not|not so|not as|no longer|isn't|is not|shouldn't be|should not be|"
    r"shouldn't be so|should not be so|too|way too|so|overly|a bit too|bit too|menos|weniger|"
    r"moins|kurang|feels|feels so|feels too|sounds|sounds so|sounds too|is so|is too|"
    r"a little too|kind of|rather"
)
# Phrases that mean a direction on their own.
CALMER_PHRASES = r"tone (?:it |the \w+ )?down|dial (?:it |the \w+ )?back|take it down|bring it down"
LIVELIER_PHRASES = (
    r"pick (?:it |the \w+ )?up|kick it up|pump (?:it )?up|liven (?:it )?up|spice (?:it )?up"
)

SHORTER = (
    r"shorter|shorten|too long|trim|cut(?: it)? down|cut back|fewer lines|less text|"
    r"tighter|tighten|rushed|too much text|too wordy|condense"
)
LONGER = (
    r"longer|lengthen|extend|too short|add (?:a|an|one|another|more)?\s*(?:line|sentence)s?|"
    r"add a line or two|more lines|more text|dead air|too empty|fill (?:it|the gap)"
)
REMOVE = (
    r"no|without|remove|drop|lose|skip|get rid of|rid of|take (?:\w+ )?(?:all )?out|"
    r"take out|cut|delete|kill|mute|don't want|do not want|none|quitar|quita|sin|ohne|"
    r"entfernen|weg|hapus|tanpa|sans|enlever|supprimer|bez|senza|zonder|utan"
)
CHANGE = (
    r"swap|replace|change|another|different|someone else|somebody else|other|don't like|"
    r"do not like|not a fan|try|new|ganti|cambiar|cambia|wechseln|andere|changer|autre|"
    r"trocar|outra|outro"
)
FEMALE = (
    r"female|woman|woman's|women|girl|lady|she|her|perempuan(?:nya)?|wanita(?:nya)?|mujer|"
    r"femenina|frau|weiblich|femme"
)
MALE = (
    r"male|man|man's|men|guy|dude|he|his|him|laki-laki(?:nya)?|pria(?:nya)?|hombre|"
    r"masculina|mann|mannlich|homme"
)
# What a brief asks of its cast: "a young female voice", "an older male voice".
YOUNG = r"young|younger|youthful|teen|teenage"
OLD = r"old|older|elderly|mature|senior|grandfatherly|grandmotherly"
YOUNGER = r"too old|younger|more youthful|less mature|sounds old|older-sounding"
OLDER = r"too young|older|more mature|less youthful|sounds young|younger-sounding"
SECONDS = r"s|sec|secs|second|seconds|sekunden|segundos|secondes|secondi|seconden|detik|giay|秒"

_NUMBER_FACT = re.compile(
    r"(?<![\w.])(?:[$€£¥₹₩฿]\s?)?\d[\d.,\s]*\d*(?:\s?(?:%|[^\W\d_]{1,6}\.?))?", re.UNICODE
)
_URL = re.compile(r"\b(?:https?://)?(?:[\w-]+\.)+[a-z]{2,}(?:/[\w./-]*)?\b", re.IGNORECASE)
_MENTION_LEAD = re.compile(
    r"\b(?:mention|say|include|add|state|name|call to action|cta|tell them|"
    r"price|go to|visit|sign up at)\b",
    re.IGNORECASE,
)


def _words(pattern: str) -> str:
    return rf"(?<![\w-])(?:{pattern})(?![\w-])"


def normalised(text: str) -> str:
    """Lower case, accents off, curly quotes straight: the tables are written so."""
    text = text.replace("\u2019", "'").lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _has(pattern: str, text: str) -> bool:
    return re.search(_words(pattern), text) is not None


# --- the request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A follow-up, read: each field None (or empty) when the person did not ask it."""

    music: str | None = None  # "livelier", "calmer" or "change"
    energy: bool = False  # the whole spot livelier ("More urgency!")
    calm: bool = False  # the whole spot calmer
    script: str | None = None  # "shorter", "longer" or "change"
    slot_s: int | None = None  # a length in seconds asked for the ad
    slot: str | None = None  # "shorter" or "longer": the ad itself, no figure given
    sfx: str | None = None  # "none" or "change"
    voice_change: bool = False  # a new cast or a voice swapped
    voice_swap: bool = False  # one voice for another ("swap the female voice")
    gender: str | None = None  # "female" or "male": the voice meant
    age: str | None = None  # "younger" or "older" than that voice
    mentions: tuple[str, ...] = ()  # facts to say: a price, a web address

    @property
    def anything(self) -> bool:
        return any(
            (
                self.music,
                self.energy,
                self.calm,
                self.script,
                self.slot_s,
                self.slot,
                self.sfx,
                self.voice_change,
                self.mentions,
            )
        )


def mood(text: str) -> int:
    """+1 when ``text`` asks for livelier, -1 for calmer, 0 when it says neither: each
    mood word counts for the way it moves, reversed after "less", "not so", "too"..."""
    text = normalised(text)
    score = 0
    if re.search(CALMER_PHRASES, text):
        score -= 2
    if re.search(LIVELIER_PHRASES, text):
        score += 2
    for sign, pattern in ((1, LIVELY), (-1, CALM)):
        for match in re.finditer(_words(pattern), text):
            before = text[max(0, match.start() - 24) : match.start()].rstrip()
            reversed_ = re.search(rf"(?:^|\W)(?:{OPPOSITE})$", before) is not None
            score += -sign if reversed_ else sign
    return (score > 0) - (score < 0)


def requested_seconds(text: str) -> int | None:
    """A length in seconds: "20 seconds", "a 45-second spot", "15s", "30 秒"."""
    match = re.search(rf"(?<![\d.])(\d{{1,3}})\s*-?\s*(?:{SECONDS})(?![\w])", normalised(text))
    return int(match.group(1)) if match else None


def mentions(text: str) -> tuple[str, ...]:
    """Facts ``text`` asks to be said: each web address, and each amount (a number with
    its currency or unit) in a sentence that asks for it (mention, say, price...)."""
    found: list[str] = []
    for url in _URL.findall(text):
        if not re.fullmatch(r"[\d.]+", url) and url not in found:
            found.append(url.rstrip("./"))
    for sentence in re.split(r"(?<=[.!?;])\s+|\n", text):
        if not _MENTION_LEAD.search(sentence):
            continue
        for match in _NUMBER_FACT.finditer(_URL.sub(" ", sentence)):
            fact = re.sub(r"[\s.,]+$", "", match.group().strip())
            fact = re.sub(r"\s+(?:a|per|an|and|or|for|to|the)$", "", fact, flags=re.IGNORECASE)
            if re.search(r"\d", fact) and requested_seconds(fact) is None and fact not in found:
                found.append(fact)
    return tuple(found)


def read_request(text: str) -> Request:
    """What a follow-up asks for."""
    plain = normalised(text)
    says_music, says_voice = _has(MUSIC, plain), _has(VOICE, plain)
    says_script, says_sfx = _has(SCRIPT, plain), _has(SFX, plain)
    direction = mood(plain)

    sfx = None
    if says_sfx:
        sfx = "none" if _has(REMOVE, plain) else "change"

    seconds = requested_seconds(plain)
    script = slot = None
    shorter, longer = _has(SHORTER, plain), _has(LONGER, plain)
    if shorter != longer and seconds is None:
        if says_script or not _has(AD, plain):
            script = "shorter" if shorter else "longer"
        else:
            slot = "shorter" if shorter else "longer"

    music = None
    if says_music:
        music = {1: "livelier", -1: "calmer"}.get(direction, "change")
    elif direction and not says_voice and not says_sfx and not script:
        # "More urgency!", "calm it all down": the whole spot, voices and music.
        music = {1: "livelier", -1: "calmer"}[direction]

    gender = "female" if _has(FEMALE, plain) else "male" if _has(MALE, plain) else None
    age = "younger" if _has(YOUNGER, plain) else "older" if _has(OLDER, plain) else None
    voice_change = says_voice and (gender is not None or age is not None or _has(CHANGE, plain))
    # One voice for another: a voice named by its gender or age, not "male voices" (a cast).
    voice_swap = (
        voice_change
        and not re.search(r"\bvoices\b", plain)
        and (gender is not None or age is not None)
    )
    return Request(
        music=music,
        energy=direction > 0 and not says_music and not says_sfx and not says_voice,
        calm=direction < 0 and not says_music and not says_sfx and not says_voice,
        script=script,
        slot_s=seconds,
        slot=slot,
        sfx=sfx,
        voice_change=voice_change,
        voice_swap=voice_swap,
        gender=gender,
        age=age,
        mentions=mentions(text),
    )


def cast_asked(text: str) -> tuple[str | None, str | None]:
    """The gender and age ("young", "old") a brief asks of its voice, if it names them."""
    plain = normalised(text)
    if not _has(VOICE, plain):
        return None, None
    gender = "female" if _has(FEMALE, plain) else "male" if _has(MALE, plain) else None
    age = "young" if _has(YOUNG, plain) else "old" if _has(OLD, plain) else None
    return gender, age
