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
AD = r"ad|spot|commercial|advert|advertisement|whole thing|make it|making it"
# The whole spot, voices and music together ("more punch everywhere").
EVERYTHING = (
    r"everything|everywhere|overall|all of it|whole thing|partout|tout|todo|alles|semua|tutto"
)

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
# Complaints that ask for more life: the music (or the spot) bores.
DULL = (
    r"putting me to sleep|puts me to sleep|sends me to sleep|asleep|snooze|snoozefest|boring|"
    r"dull|flat|lifeless|bland|wake (?:it |things )?up|more life|some life|hotel lobby|"
    r"elevator music|lift music|mou|molle|aburrida|aburrido|langweilig|lahm|noioso|saai"
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
    r"shorter|shorten|too long|trim|cut (?:\w+ ){0,2}down|cut back|fewer lines|fewer words|"
    r"less text|tighter|tighten|rushed|too much text|too wordy|wordy|too many words|crammed|"
    r"drags|dragging|rambl\w*|long-winded|breathe|condense"
)
LONGER = (
    r"longer|lengthen|extend|too short|add (?:a|an|one|another|more)?\s*(?:line|sentence)s?|"
    r"add a line or two|more lines|more text|dead air|too empty|thin|sparse|"
    r"say (?:a bit |a little |a lot |something )?more|fill (?:it|the gap)"
)
# A length given against the current one: "another 15 seconds", "twice as long".
_UNIT = r"(?:s|sec|secs|second|seconds)"
_MORE_SECONDS = re.compile(
    rf"(?:another|extra|additional|add(?:ing)?|plus)\s+(\d{{1,3}})\s*-?\s*(?:more\s+)?{_UNIT}\b"
    rf"|(\d{{1,3}})\s*(?:more|extra)\s+{_UNIT}\b"
)
_LESS_SECONDS = re.compile(
    r"(\d{1,3})\s*(?:s|sec|secs|second|seconds)\s+(?:shorter|less)\b"
    r"|(?:take|cut|shave|trim)\s+(?:off\s+)?(\d{1,3})\s*(?:s|sec|secs|second|seconds)\b"
)
_TWICE = re.compile(r"twice as long|double (?:the length|it|the spot|the ad)|2x (?:as )?long")
_HALF = re.compile(r"half as long|halve (?:it|the length|the spot|the ad)|half the length")
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
    r"\b(?:mention|mentions|say|says|said|include|includes|add|state|name|call to action|"
    r"cta|tell them|make sure|remember|don't forget|price|costs?|go to|visit|sign up at)\b",
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
    slot_delta_s: int = 0  # seconds asked more (+) or less (-) than the ad's length
    slot_factor: float = 1.0  # "twice as long": 2.0
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
                self.slot_delta_s,
                self.slot_factor != 1.0,
                self.slot,
                self.sfx,
                self.voice_change,
                self.mentions,
            )
        )


_FILLERS = re.compile(
    r"(?:\s+(?:a bit|a little|a tad|kind of|sort of|rather|quite|very|really|somewhat|"
    r"slightly|way|bit))+$"
)


def mood(text: str) -> int:
    """+1 when ``text`` asks for livelier, -1 for calmer, 0 when it says neither: each
    mood word counts for the way it moves, reversed after "less", "not so", "too"..."""
    text = normalised(text)
    score = 0
    if re.search(CALMER_PHRASES, text):
        score -= 2
    if re.search(LIVELIER_PHRASES, text) or _has(DULL, text):
        score += 2
    for sign, pattern in ((1, LIVELY), (-1, CALM)):
        for match in re.finditer(_words(pattern), text):
            before = " " + text[max(0, match.start() - 40) : match.start()].rstrip()
            before = _FILLERS.sub("", before)
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

    delta, factor = _relative_length(plain)
    seconds = requested_seconds(plain) if not (delta or factor != 1.0) else None
    script = slot = None
    shorter, longer = _has(SHORTER, plain), _has(LONGER, plain)
    if shorter != longer and not delta and factor == 1.0:
        if says_script or not _has(AD, plain) or seconds is not None:
            script = "shorter" if shorter else "longer"
        else:
            slot = "shorter" if shorter else "longer"

    # The music changes when a mood is asked of it, or a change is ("another track"); a
    # mention alone ("keep the music", "just the voices and the music") changes nothing.
    everything = (
        direction != 0
        and (_has(EVERYTHING, plain) or (says_music and says_voice) or not (says_music or says_sfx))
        and not says_sfx
        and not script
    )
    music = None
    if direction and (says_music or everything):
        music = {1: "livelier", -1: "calmer"}[direction]
    elif says_music and _has(CHANGE, plain) and not re.search(KEEP, plain):
        music = "change"

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
        energy=everything and direction > 0,
        calm=everything and direction < 0,
        script=script,
        slot_s=seconds,
        slot_delta_s=delta,
        slot_factor=factor,
        slot=slot,
        sfx=sfx,
        voice_change=voice_change,
        voice_swap=voice_swap,
        gender=gender,
        age=age,
        mentions=mentions(text),
    )


# The music named only to be kept: "keep the music", "just the voices and the music".
KEEP = (
    r"\b(?:keep|leave|just|only)\b[^.!?]{0,30}\b(?:music|musik|musica|musique)\b"
    r"|\b(?:music|musik|musica|musique)\b[^.!?]{0,20}\b(?:alone|as it is|untouched)\b"
)


def _relative_length(text: str) -> tuple[int, float]:
    """Seconds more (+) or less (-) than the ad's length, and a factor ("twice as long")."""
    more = _MORE_SECONDS.search(text)
    if more:
        return int(more.group(1) or more.group(2)), 1.0
    less = _LESS_SECONDS.search(text)
    if less:
        return -int(less.group(1) or less.group(2)), 1.0
    if _TWICE.search(text):
        return 0, 2.0
    if _HALF.search(text):
        return 0, 0.5
    return 0, 1.0


@dataclass(frozen=True)
class Cast:
    """What a brief asks of its cast: a gender and an age ("young", "old") if it names
    them, and whether it asks for one voice ("a young female voice")."""

    gender: str | None = None
    age: str | None = None
    one_voice: bool = False


def cast_asked(text: str) -> Cast:
    plain = normalised(text)
    if not _has(VOICE, plain):
        return Cast()
    gender = "female" if _has(FEMALE, plain) else "male" if _has(MALE, plain) else None
    age = "young" if _has(YOUNG, plain) else "old" if _has(OLD, plain) else None
    one = re.search(r"\b(?:a|an|one|single)\b(?:[\w\s-]{0,30})\bvoice\b", plain) is not None
    return Cast(gender, age, one and not re.search(r"\bvoices\b", plain))
