"""What a music prompt says it wants, read from its words: the moods it names (livelier or
calmer) and whether it asks for a voice singing, each word with whether the prompt
negates it ("not calm", "no longer relaxed", "anything but upbeat", "no vocals",
"vocal-free"). A word is read in its clause: "no vocals, but a choir sings" asks for a
choir.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UPBEAT = re.compile(
    r"\b(upbeat|energetic|energi[sz]ing|high[- ]energy|lively|punchy|driving|up-?tempo|"
    r"fast|faster|bright|brighter|festive|bouncy|pumping|danceable|dance|party|"
    r"drum (?:and|&|n) bass|dnb|edm|techno|hardstyle|dubstep|euphoric|exciting|"
    r"livelier|peppy|vibrant)\b",
    re.IGNORECASE,
)
CALM = re.compile(
    r"\b(calm|calmer|calming|mellow|mellower|soft|softer|gentle|gentler|relaxed|relaxing|"
    r"chill|chilled|slow|slower|ambient|soothing|peaceful|serene|tranquil|laid[- ]back|"
    r"lo-?fi|lullaby|quiet|quieter|downtempo|unhurried|dreamy)\b",
    re.IGNORECASE,
)
# A voice in the music. "hum" and "chorus" as music words ("a humming synth" is rare in
# prompts; "chorus" here is singers, not the effect pedal).
VOCALS = re.compile(
    r"\b(vocals?|vocalists?|vox|singers?|sing|sings|singing|sung|choirs?|chorus|"
    r"choral|a ?cappella|rap|raps|rapping|rappers?|lyrics?|humming|hum|hums|hummed|"
    r"crooning|croons?|chant|chants|chanting|scat|yodel\w*|beatbox\w*)\b",
    re.IGNORECASE,
)
INSTRUMENTAL = re.compile(r"\binstrumentals?\b", re.IGNORECASE)
BPM = re.compile(r"(\d{2,3})\s*bpm\b", re.IGNORECASE)

# Words that turn the next few words of their clause around.
_NEGATOR = re.compile(
    r"\b(no|not|never|without|zero|non|nor|less|isn't|aren't|don't|doesn't|avoid|"
    r"anything but|rather than|instead of|free of|no more|no longer)\b|n't\b",
    re.IGNORECASE,
)
# After these a clause says something new: "no vocals, but a choir", "without drums,
# with a singer".
_RESET = re.compile(r"\b(but|with|plus|featuring|feat|yet|though|however|and then)\b", re.I)
_CLAUSE_END = re.compile(r"[.;:!?()\[\]\n]|,|\s[-\u2013\u2014]\s")  # and a spaced dash
# A mood word that describes the people, not the music: "for a relaxed audience".
_PEOPLE = re.compile(
    r"\s*(?:[\w-]+\s+){0,1}(audience|listeners?|people|families|family|customers?|crowd|"
    r"viewers?|shoppers?|users?|commuters?|parents|kids|teens?|teenagers|students)\b",
    re.IGNORECASE,
)
_NEGATED_AFTER = re.compile(r"\s*-?\s*free\b", re.IGNORECASE)  # "vocal-free"
_WINDOW_WORDS = 4


@dataclass(frozen=True)
class Mention:
    word: str  # as written, lower-cased
    negated: bool


def mentions(pattern: re.Pattern[str], text: str, *, skip_people: bool = False) -> list[Mention]:
    """Every word of ``pattern`` in ``text``, each with whether its clause negates it.
    ``skip_people`` leaves out a word that describes people ("a relaxed audience")."""
    found = []
    for match in pattern.finditer(text):
        if skip_people and _PEOPLE.match(text, match.end()):
            continue
        found.append(Mention(match.group(0).lower(), _negated(text, match)))
    return found


def _negated(text: str, match: re.Match[str]) -> bool:
    if _NEGATED_AFTER.match(text, match.end()):
        return True
    before = text[: match.start()]
    ends = list(_CLAUSE_END.finditer(before))
    clause = before[ends[-1].end() :] if ends else before
    # "anything but" is a negator, not the "but" that starts something new.
    clause = re.sub(r"\banything but\b", "not", clause, flags=re.IGNORECASE)
    resets = list(_RESET.finditer(clause))
    if resets:
        clause = clause[resets[-1].end() :]
    window = " ".join(clause.split()[-_WINDOW_WORDS:])
    return bool(_NEGATOR.search(window))


def affirmed(pattern: re.Pattern[str], text: str, *, skip_people: bool = False) -> set[str]:
    return {m.word for m in mentions(pattern, text, skip_people=skip_people) if not m.negated}


def negated(pattern: re.Pattern[str], text: str) -> set[str]:
    return {m.word for m in mentions(pattern, text) if m.negated}


def bpm(prompt: str) -> int | None:
    """The prompt's tempo, when it names one (the first "NNN bpm")."""
    match = BPM.search(prompt)
    return int(match.group(1)) if match else None


def vocals_asked(prompt: str) -> list[str]:
    """The words by which a music prompt asks for a voice singing: a vocal word it does not
    negate ("female vocalist", "a choir sings"), or "not instrumental"."""
    asked = [m.word for m in mentions(VOCALS, prompt) if not m.negated]
    asked += [f"not {m.word}" for m in mentions(INSTRUMENTAL, prompt) if m.negated]
    return asked


def says_instrumental(prompt: str) -> bool:
    """The prompt asks for music without a voice: "instrumental" (not negated), or a vocal
    word it negates ("no vocals", "vocal-free")."""
    return any(not m.negated for m in mentions(INSTRUMENTAL, prompt)) or any(
        m.negated for m in mentions(VOCALS, prompt)
    )
