"""The offline ``demo`` provider: a rule-based creative director with no network and no key.
(Over 450 lines: one director's script, read top to bottom.)

It plans like a real model through the same tools (search voices, then voice, music and sfx
drafts in one parallel round, then a summary) and reacts to follow-ups about music, voices,
energy, sound effects and length. It decides from ``request.messages`` alone, so the same
history always gives the same answer. The embedded default runs it when no key is set.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from adstudio.speech import spoken_seconds
from providers.base import (
    AssistantMessage,
    GenerateRequest,
    Message,
    ModelResponse,
    StopReason,
    TextCallback,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from providers.demo_lines import brand_of, lines_for

DEMO_MODEL = "demo-director"
MIN_DURATION, MAX_DURATION = 10, 60
# The share of the ad its script takes to say: room for the music to open and close.
SCRIPT_SHARE = 0.88
# A shorter or longer script stays within the slot (three quarters of it at least).
MIN_SCRIPT_SHARE, MAX_SCRIPT_SHARE = 0.8, 0.97

DEMO_NOTE = (
    "(This is AdStudio's offline demo director, a rule-based stand-in that needs no API key. "
    "Set OPENAI_API_KEY, or DASHSCOPE_API_KEY / MOONSHOT_API_KEY / ANTHROPIC_API_KEY, to "
    "have a real model direct your ads.)"
)

_BRIEF_FIELDS = {"client", "audience", "language", "market", "duration", "context"}


@dataclass(frozen=True)
class Brief:
    client: str = "your brand"
    audience: str = "listeners"
    language: str = "en"
    market: str = ""
    duration: int = 30
    context: str = ""


def parse_brief(text: str) -> Brief | None:
    """The brief in the first user message ("Brief" then "Field: value" lines), if any."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        name = key.strip().lower()
        if sep and name in _BRIEF_FIELDS:
            values[name] = value.strip()
    if "language" not in values or "duration" not in values:
        return None
    match = re.search(r"\d+", values["duration"])
    duration = int(match.group()) if match else 30
    defaults = Brief()
    return Brief(
        client=values.get("client") or defaults.client,
        audience=values.get("audience") or defaults.audience,
        language=values["language"].lower() or "en",
        market=values.get("market", ""),
        duration=min(MAX_DURATION, max(MIN_DURATION, duration)),
        context=values.get("context", ""),
    )


# --- reading the history -----------------------------------------------------------------


@dataclass
class _History:
    """What the demo knows, rebuilt from the messages on every call (it keeps no state)."""

    brief: Brief
    turn: int  # 1-based number of the latest user message
    latest_user: str
    is_first_turn: bool
    # Calls of the current turn (after the latest user message), in order, with results.
    turn_calls: list[tuple[ToolCall, dict[str, Any] | None]] = field(default_factory=list)
    turn_rounds: int = 0
    # The latest successful call of each tool anywhere in the history, and before this turn.
    last_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    prior_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    voices: list[dict[str, Any]] = field(default_factory=list)
    # Every voice any search found, by id: its gender.
    voice_genders: dict[str, str] = field(default_factory=dict)
    sfx_drafts: int = 0


def _result_json(message: ToolResultMessage | None) -> dict[str, Any] | None:
    if message is None:
        return None
    try:
        value = json.loads(message.content)
    except ValueError:
        return {"error": message.content}
    if not isinstance(value, dict):
        return {"result": value}
    if message.is_error and "error" not in value:
        value["error"] = "the tool failed"
    return value


def _read_history(messages: tuple[Message, ...], *, tools_allowed: bool = True) -> _History:
    users = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if not tools_allowed and len(users) > 1 and users[-1] == len(messages) - 1:
        # The loop's last round appends a "give your final answer" note to a turn that
        # has tool calls: the turn still starts at the user message before it.
        users.pop()
    brief = None
    for i in users:
        brief = parse_brief(messages[i].text)  # type: ignore[union-attr]
        if brief:
            break
    latest = users[-1] if users else -1
    latest_text = messages[latest].text if latest >= 0 else ""  # type: ignore[union-attr]
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    history = _History(
        brief=brief or Brief(),
        turn=len(users),
        latest_user=latest_text,
        is_first_turn=parse_brief(latest_text) is not None,
    )
    turn_voices: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, AssistantMessage):
            continue
        if index > latest:
            history.turn_rounds += 1
        for call in message.tool_calls:
            result = _result_json(results.get(call.id))
            if index > latest:
                history.turn_calls.append((call, result))
            if result is None or "error" in result:
                continue
            history.last_args[call.name] = call.arguments
            if index < latest:
                history.prior_args[call.name] = call.arguments
            if call.name == "search_voices" and result.get("voices"):
                found = [v for v in result["voices"] if isinstance(v, dict)]
                for voice in found:
                    history.voice_genders[str(voice.get("id"))] = str(voice.get("gender", ""))
                if index > latest:  # this turn's searches, together
                    turn_voices += [v for v in found if v not in turn_voices]
                else:
                    history.voices = found
            if call.name == "create_sfx_draft":
                history.sfx_drafts += 1
    if turn_voices:
        history.voices = turn_voices
    return history


# --- what the user asked for -------------------------------------------------------------

_INTENT_WORDS = {
    "music": r"music|song|soundtrack|melody|tune|jingle|instrumental|tempo|beat|"
    r"upbeat|calm|chill|mellow|relaxed|dramatic|playful|acoustic|electronic",
    "voice": r"voices?|male|female|man|woman|men|women|narrator|speakers?|accent|actor",
    "energy": r"energy|energetic|exciting|punchy|lively|dynamic|hype",
    "sfx": r"sfx|sound effects?|effects?|whoosh|chime|jingle sound",
    "shorter": r"shorter|shorten|too long|trim|cut it down|cut down",
    "longer": r"longer|lengthen|extend|too short",
    # "the script is too long": the lines change, not the ad's length
    "script": r"script|lines?|copy|text|voice-?over|wording",
    "no_sfx": r"(?:no|without|remove|drop|lose|skip)\s+(?:the\s+|any\s+)?"
    r"(?:sound\s+)?(?:effects?|sfx)",
}
_MOODS = (
    "upbeat",
    "calm",
    "chill",
    "warm",
    "happy",
    "dramatic",
    "playful",
    "epic",
    "relaxed",
    "festive",
    "acoustic",
    "electronic",
)


def _intents(text: str) -> set[str]:
    lowered = text.lower()
    found = {
        intent for intent, words in _INTENT_WORDS.items() if re.search(rf"\b(?:{words})\b", lowered)
    }
    if _requested_duration(text) is not None:
        found.add("duration")
    return found


def _requested_duration(text: str) -> int | None:
    match = re.search(r"\b(\d{1,3})\s*(?:s|sec|secs|seconds?)\b", text.lower())
    return int(match.group(1)) if match else None


def _requested_gender(text: str) -> str | None:
    lowered = text.lower()
    if re.search(r"\b(?:female|woman|women|girl)\b", lowered):
        return "female"
    if re.search(r"\b(?:male|man|men|guy)\b", lowered):
        return "male"
    return None


# --- writing -----------------------------------------------------------------------------

_SFX_SETS = (
    (
        ("bright notification chime to open the spot", {"type": "start"}, 1.5),
        ("soft whoosh leading into the call to action", {"type": "afterVoice"}, 1.0),
    ),
    (
        ("playful pop and sparkle as the first line lands", {"type": "start"}, 1.0),
        ("warm crowd cheer under the closing line", {"type": "end"}, 2.0),
    ),
    (
        ("vinyl scratch into the opening beat", {"type": "start"}, 1.0),
        ("gentle bell ding on the brand name", {"type": "afterVoice"}, 0.8),
    ),
)


def script_lines(
    brief: Brief, duration: int, *, energetic: bool = False, share: float = SCRIPT_SHARE
) -> list[str]:
    """Lines in the ad's language (``providers.demo_lines``) that take about ``share`` of
    ``duration`` to say, as the voice tool estimates it (``adstudio.speech``): the first
    opens with the brand, the last is the call to action naming it. Sentences go to the
    line with least so far, while one brings the script closer to its target."""
    bank = lines_for(brief.language)
    brand = brand_of(brief.client)

    def say(text: str) -> float:
        return spoken_seconds(text, language=brief.language)

    count = 2 if duration < 20 else 4 if duration < 45 else 6
    opener = bank.opener[energetic].format(brand=brand)
    cta = bank.cta[energetic].format(brand=brand)
    body: list[list[str]] = [[opener]] + [[] for _ in range(count - 2)]
    seconds = [say(opener)] + [0.0] * (count - 2)
    room = share * duration - sum(seconds) - say(cta)  # to the target
    limit = 0.99 * duration - sum(seconds) - say(cta)  # to the end of the slot
    sentences = bank.energetic if energetic else bank.calm
    turn = 0
    while True:
        # The next sentence (in the bank's order) that brings the script closer to its
        # target without running past the slot.
        ordered = [sentences[(turn + n) % len(sentences)] for n in range(len(sentences))]
        fitting = [x for x in ordered if say(x) < 2 * room and say(x) <= limit]
        if not fitting:
            break
        line = seconds.index(min(seconds))
        body[line].append(fitting[0])
        seconds[line] += say(fitting[0])
        room -= say(fitting[0])
        limit -= say(fitting[0])
        turn = (sentences.index(fitting[0]) + 1) % len(sentences)
    return [bank.join(parts) for parts in body if parts] + [cta]


def _script_share(history: _History, duration: int) -> float:
    """How much of ``duration`` the voice draft before this turn takes to say."""
    tracks = (history.prior_args.get("create_voice_draft") or {}).get("tracks") or []
    text = " ".join(str(t.get("text", "")) for t in tracks if isinstance(t, dict))
    if not text.strip():
        return SCRIPT_SHARE
    return spoken_seconds(text, language=history.brief.language) / duration


def _pick_voices(
    voices: list[dict[str, Any]], *, gender: str | None = None, avoid: frozenset[str] = frozenset()
) -> list[str]:
    """Two voice ids: the requested gender first, else one female and one male."""
    usable = [v for v in voices if v.get("id") is not None]
    if gender:
        matching = [v for v in usable if v.get("gender") == gender]
        fresh = [v for v in matching if str(v["id"]) not in avoid] + [
            v for v in matching if str(v["id"]) in avoid
        ]
        ordered = fresh + [v for v in usable if v not in fresh]
    else:
        female = [v for v in usable if v.get("gender") == "female"]
        male = [v for v in usable if v.get("gender") == "male"]
        firsts = [group[0] for group in (female, male) if group]
        ordered = firsts + [v for v in usable if v not in firsts]
    ids = [str(v["id"]) for v in ordered[:2]]
    return ids * 2 if len(ids) == 1 else ids


def _swap_asked(text: str) -> bool:
    """ "Swap the female voice" (one voice for another), not "use male voices" (a new cast)."""
    lowered = text.lower()
    return bool(re.search(r"\b(?:swap|replace|change)\b", lowered)) and not re.search(
        r"\bvoices\b", lowered
    )


def _swap_voices(
    previous: list[str], found: list[dict[str, Any]], gender: str, genders: dict[str, str]
) -> list[str]:
    """The script's voices with each voice of ``gender`` replaced by another of that
    gender from the latest search ("swap the female voice"); the others kept. With no
    voice of that gender in the script, voices of that gender (``_pick_voices``)."""
    fresh = [
        str(v["id"])
        for v in found
        if v.get("gender") == gender and str(v.get("id")) not in previous
    ]
    swapped = [
        fresh.pop(0) if genders.get(voice_id) == gender and fresh else voice_id
        for voice_id in previous
    ]
    if swapped == previous:
        return _pick_voices(found, gender=gender, avoid=frozenset(previous))
    return swapped


_CALM_MOODS = {"calm", "chill", "relaxed"}


def _music_args(
    brief: Brief, duration: int, text: str, *, energetic: bool, previous: str = ""
) -> dict[str, Any]:
    """A music prompt with a tempo: livelier or calmer than ``previous`` (the last music
    prompt) when the person asked for it, so "more upbeat" is heard, not only read."""
    moods = [m for m in _MOODS if re.search(rf"\b{m}(?:er)?\b", text.lower())]
    if energetic and "upbeat" not in moods:
        moods = ["high-energy", "upbeat", *moods]
    calm = bool(_CALM_MOODS & set(moods))
    lively = energetic or "upbeat" in moods
    old_bpm = re.search(r"(\d{2,3}) bpm", previous)
    if old_bpm:
        bpm = int(old_bpm.group(1)) + (16 if lively else -16 if calm else 0)
    else:
        bpm = 124 if lively else 80 if calm else 100
    bpm = max(60, min(170, bpm))
    mood = ", ".join(moods) if moods else "warm, modern"
    prompt = (
        f"{mood.capitalize()} instrumental background music at {bpm} bpm for a "
        f"{duration}-second radio ad for {brief.client}, aimed at {brief.audience}; "
        "no vocals, leaves room for the voice-over"
    )
    return {"prompt": prompt, "duration": duration}


def _sfx_args(variant: int) -> dict[str, Any]:
    prompts = []
    for description, placement, seconds in _SFX_SETS[variant % len(_SFX_SETS)]:
        place = dict(placement)
        if place["type"] == "afterVoice":
            place["index"] = 0
        prompts.append({"description": description, "placement": place, "duration": seconds})
    return {"prompts": prompts}


# --- the director ------------------------------------------------------------------------


class DemoProvider:
    """A ``ChatProvider`` that answers from rules; same messages in, same response out."""

    name = "demo"

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        tools_allowed = bool(request.tools) and request.options.tool_choice != "none"
        history = _read_history(request.messages, tools_allowed=tools_allowed)
        offered = {tool.name for tool in request.tools} if tools_allowed else set()
        calls, text = _decide(history, offered)
        tool_calls = tuple(
            ToolCall(
                id=f"demo_t{history.turn}_r{history.turn_rounds + 1}_{n}",
                name=name,
                arguments=args,
                raw_arguments=json.dumps(args, ensure_ascii=False, sort_keys=True),
            )
            for n, (name, args) in enumerate(calls, start=1)
        )
        if text and on_text is not None:
            on_text(text)
        message = AssistantMessage(text=text, tool_calls=tool_calls)
        return ModelResponse(
            message=message,
            stop_reason=StopReason.TOOL_CALLS if tool_calls else StopReason.END_TURN,
            usage=_usage(request, message),
            provider=self.name,
            model=request.model or DEMO_MODEL,
        )


def _decide(history: _History, offered: set[str]) -> tuple[list[tuple[str, dict]], str]:
    """The next step: tool calls to make, or the final text of the turn."""
    brief = history.brief
    text = history.latest_user
    intents = {"voices", "music", "sfx"} if history.is_first_turn else _intents(text)
    duration = _current_duration(history)
    share = SCRIPT_SHARE
    if intents & {"shorter", "longer"} and "script" in intents:
        # The lines are resized within the ad; past the slot's bounds the ad itself is.
        current = _script_share(history, duration)
        resized = (
            max(MIN_SCRIPT_SHARE, current * 0.88)
            if "shorter" in intents
            else min(MAX_SCRIPT_SHARE, current * 1.1)
        )
        if abs(resized - current) >= 0.025:  # room within the slot: the ad keeps its length
            intents = (intents - {"shorter", "longer"}) | {"voice_length"}
            share = resized
    if "shorter" in intents:
        duration = max(MIN_DURATION, round(duration * 2 / 3 / 5) * 5)
    if "longer" in intents:
        duration = min(MAX_DURATION, round(duration * 1.5 / 5) * 5)
    if "duration" in intents and not history.is_first_turn:
        duration = min(MAX_DURATION, max(MIN_DURATION, _requested_duration(text) or duration))
    energetic = "energy" in intents

    # "music with more energy" is about the music; "more energy" alone is about the whole spot.
    script_energy = energetic and ("music" not in intents or "voice" in intents)
    wanted: list[str] = []
    if (
        intents & {"voices", "voice", "voice_length", "shorter", "longer", "duration"}
        or script_energy
    ):
        wanted.append("create_voice_draft")
    if intents & {"music", "energy", "shorter", "longer", "duration"}:
        wanted.append("create_music_draft")
    if intents & {"sfx", "no_sfx"}:
        wanted.append("create_sfx_draft")
    if not offered:  # no tool may be called: say what this turn made, or sum up the text
        return [], _summary(history, duration) if history.turn_calls else _notes(history)
    wanted = [name for name in wanted if name in offered]
    if not wanted:
        return [], _clarify(history)

    done = [call.name for call, _ in history.turn_calls]
    gender = _requested_gender(text) if not history.is_first_turn else None
    previous_ids = _previous_voice_ids(history)
    needs_search = "create_voice_draft" in wanted and (
        history.is_first_turn or "voice" in intents or not previous_ids
    )
    searches = [(c, r) for c, r in history.turn_calls if c.name == "search_voices"]
    if needs_search and "search_voices" in offered:
        if not searches:
            base: dict[str, Any] = {"language": brief.language, "count": 6}
            if re.fullmatch(r"[A-Za-z]{2}", brief.market):  # the market's own voices
                base["accent"] = f"{brief.language}-{brief.market.upper()}"
            # A cast of both genders, unless the person named one.
            genders = [gender] if gender else ["female", "male"]
            return [("search_voices", {**base, "gender": g}) for g in genders], ""
        if not any(
            result and "error" not in result and result.get("voices") for _, result in searches
        ):
            last_result = searches[-1][1]
            unfiltered = any(set(call.arguments) <= {"language", "count"} for call, _ in searches)
            if not unfiltered:
                return [("search_voices", {"language": brief.language, "count": 6})], ""
            return [], _no_voices(history, last_result)

    pending = [name for name in wanted if name not in done]
    if pending:
        voices = history.voices
        calls: list[tuple[str, dict]] = []
        for name in pending:
            if name == "create_voice_draft":
                ids = previous_ids
                if gender and previous_ids and _swap_asked(text):
                    ids = _swap_voices(previous_ids, voices, gender, history.voice_genders)
                elif "voice" in intents or history.is_first_turn or not previous_ids:
                    ids = _pick_voices(voices, gender=gender, avoid=frozenset(previous_ids))
                if not ids:
                    continue
                lines = script_lines(brief, duration, energetic=energetic, share=share)
                tracks = [
                    {"voiceId": ids[i % len(ids)], "text": line} for i, line in enumerate(lines)
                ]
                calls.append((name, {"tracks": tracks}))
            elif name == "create_music_draft":
                previous = str(
                    (history.last_args.get("create_music_draft") or {}).get("prompt", "")
                )
                music = _music_args(brief, duration, text, energetic=energetic, previous=previous)
                calls.append((name, music))
            elif name == "create_sfx_draft":
                none = "no_sfx" in intents
                calls.append((name, {"prompts": []} if none else _sfx_args(history.sfx_drafts)))
        if calls:
            return calls, ""
    return [], _summary(history, duration)


def _current_duration(history: _History) -> int:
    """The ad's length before this turn (its music's), or the brief's."""
    music = history.prior_args.get("create_music_draft") or {}
    duration = music.get("duration")
    return int(duration) if isinstance(duration, int | float) else history.brief.duration


def _previous_voice_ids(history: _History) -> list[str]:
    tracks = (history.last_args.get("create_voice_draft") or {}).get("tracks") or []
    ids: list[str] = []
    for track in tracks:
        voice_id = str(track.get("voiceId", "")) if isinstance(track, dict) else ""
        if voice_id and voice_id not in ids:
            ids.append(voice_id)
    return ids[:2]


_KIND_NAMES = {
    "create_voice_draft": "Voices",
    "create_music_draft": "Music",
    "create_sfx_draft": "Sound effects",
}


def _summary(history: _History, duration: int) -> str:
    brief = history.brief
    lines = []
    for call, result in history.turn_calls:
        if call.name not in _KIND_NAMES:
            continue
        label = _KIND_NAMES[call.name]
        if result is None or "error" in result:
            error = (result or {}).get("error", "no result")
            lines.append(f"- {label}: not saved ({error}).")
            continue
        version = result.get("versionId", "new version")
        detail = _describe(call, result)
        lines.append(f"- {label} {version}: {detail}")
    if not lines:
        return _clarify(history)
    opening = (
        f"Here is a first cut of your {duration}-second ad for {brief.client}"
        if history.is_first_turn
        else f"Done: new drafts for your {duration}-second ad for {brief.client}"
    )
    return (
        f"{opening} ({brief.language}{', ' + brief.market if brief.market else ''}):\n"
        + "\n".join(lines)
        + "\nActivate the versions you like, or ask me to change the music, the voices, "
        "the energy, the sound effects, or to make it shorter or longer.\n\n" + DEMO_NOTE
    )


def _describe(call: ToolCall, result: dict[str, Any]) -> str:
    """What a create call made, from its arguments (its result says only the version)."""
    args = call.arguments
    if call.name == "create_voice_draft":
        tracks = args.get("tracks") or []
        voices = len({t.get("voiceId") for t in tracks if isinstance(t, dict)})
        seconds = result.get("estimatedDurationS")
        length = f", about {seconds:g} s" if isinstance(seconds, int | float) else ""
        return f"{len(tracks)} script lines read by {voices} voices{length}."
    if call.name == "create_music_draft":
        return str(args.get("prompt", ""))
    prompts = args.get("prompts") or []
    return ", ".join(str(p.get("description", "")) for p in prompts if isinstance(p, dict))


def _clarify(history: _History) -> str:
    return (
        f"I can change the music, the voices (male or female), the energy, the sound effects, "
        f"or make the {history.brief.client} spot shorter or longer. Which would you like?\n\n"
        + DEMO_NOTE
    )


def _notes(history: _History) -> str:
    """A plain-text answer when no tools are offered (e.g. a summary request)."""
    text = " ".join(history.latest_user.split())
    clipped = text if len(text) <= 600 else text[:600] + "..."
    return f"Notes (offline demo director): {clipped}"


def _no_voices(history: _History, result: dict[str, Any] | None) -> str:
    result = result or {}
    detail = result.get("error") or "no voices matched"
    suggestion = result.get("suggestion") or ""
    return (
        f"I could not find voices for language '{history.brief.language}' in the catalogue "
        f"({detail}). {suggestion} Import voices for this language or change the brief's "
        f"language, then ask me again.\n\n{DEMO_NOTE}"
    ).replace("  ", " ")


def _usage(request: GenerateRequest, message: AssistantMessage) -> Usage:
    prompt_chars = len(request.system) + sum(
        len(getattr(m, "text", "") or getattr(m, "content", "")) for m in request.messages
    )
    completion_chars = len(message.text) + sum(len(c.raw_arguments) for c in message.tool_calls)
    return Usage(
        prompt_tokens=prompt_chars // 4,
        completion_tokens=completion_chars // 4,
        exact=False,
    )
