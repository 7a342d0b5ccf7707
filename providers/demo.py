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

from adstudio.speaking_time import spoken_seconds
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
from providers.demo_intents import Cast, Request, cast_asked, mentions, mood, read_request
from providers.demo_lines import brand_of, has_lines, lines_for

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
    # Every voice any search found, by id: its gender, and its age where the catalogue
    # has one.
    voice_genders: dict[str, str] = field(default_factory=dict)
    voice_ages: dict[str, str] = field(default_factory=dict)
    sfx_drafts: int = 0
    # Every user message, in order (facts asked to be said hold for every later script).
    user_texts: list[str] = field(default_factory=list)
    # The ad's length as the latest set_ad_length before this turn left it.
    slot_s: int | None = None


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
        user_texts=[messages[i].text for i in users],  # type: ignore[union-attr]
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
                    history.voice_ages[str(voice.get("id"))] = str(voice.get("age", ""))
                if index > latest:  # this turn's searches, together
                    turn_voices += [v for v in found if v not in turn_voices]
                else:
                    history.voices = found
            if call.name == "create_sfx_draft":
                history.sfx_drafts += 1
            if call.name == "set_ad_length" and index < latest:
                history.slot_s = int(result.get("durationSeconds") or 0) or history.slot_s
    if turn_voices:
        history.voices = turn_voices
    return history


# --- what the user asked for: providers.demo_intents ------------------------------------


def _brief_request(history: _History) -> str:
    """What the person asked with the brief: its context, and what they wrote after it
    (not the client or the audience, whose words are not requests: "women in Seoul")."""
    first = history.user_texts[0] if history.user_texts else ""
    free = [
        line
        for line in first.splitlines()[1:]
        if line.partition(":")[0].strip().lower() not in _BRIEF_FIELDS
    ]
    return " ".join([history.brief.context, *free]).strip()


def _facts(history: _History) -> tuple[str, ...]:
    """Facts asked to be said (a price, a web address), in the brief's context or in any
    message since: every script from then on says them."""
    found: list[str] = []
    for text in (_brief_request(history), *history.user_texts[1:]):
        found += [fact for fact in mentions(text) if fact not in found]
    return tuple(found)


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
    brief: Brief,
    duration: int,
    *,
    energetic: bool = False,
    share: float = SCRIPT_SHARE,
    facts: tuple[str, ...] = (),
) -> list[str]:
    """Lines in the ad's language as its market writes it (``providers.demo_lines``)
    that take about ``share`` of ``duration`` to say, as the voice tool estimates it
    (``adstudio.speaking_time``): the first opens with the brand, the last is the call to action
    naming it and saying the ``facts`` asked for (a price, a web address). Sentences go
    to the line with least so far, while one brings the script closer to its target."""
    bank = lines_for(brief.language, brief.market)
    brand = brand_of(brief.client)

    def say(text: str) -> float:
        return spoken_seconds(text, language=brief.language)

    count = 2 if duration < 20 else 4 if duration < 45 else 6
    opener = bank.opener[energetic].format(brand=brand)
    cta = " ".join([bank.cta[energetic].format(brand=brand), *facts])
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


_AGE_RANK = {"young": 0, "middle aged": 1, "old": 2}


def _pick_voices(
    voices: list[dict[str, Any]],
    *,
    gender: str | None = None,
    age: str | None = None,
    avoid: frozenset[str] = frozenset(),
) -> list[str]:
    """Two voice ids: the requested gender (and age) first, else one female and one male."""
    usable = [v for v in voices if v.get("id") is not None]
    if gender:
        matching = [v for v in usable if v.get("gender") == gender]
        if age:  # of that age first, then the nearest ages
            want = _AGE_RANK.get(age, 1)
            matching.sort(key=lambda v: abs(_AGE_RANK.get(str(v.get("age")), 1) - want))
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


def _swap_voices(
    previous: list[str], found: list[dict[str, Any]], history: _History, asked: Request
) -> list[str]:
    """The script's voices with one voice of the gender asked (the first, or the oldest
    when "too old", the youngest when "too young") replaced by another of that gender from
    the latest search: younger or older when the person said so, the nearest in age
    otherwise; the others kept. With no voice of that gender in the script, voices of that
    gender (``_pick_voices``)."""
    genders, ages = history.voice_genders, history.voice_ages
    meant = [v for v in previous if asked.gender in (None, genders.get(v))]
    if not meant:
        age = {"younger": "young", "older": "old"}.get(asked.age or "")
        return _pick_voices(found, gender=asked.gender, age=age, avoid=frozenset(previous))
    step = {"younger": -1, "older": 1}.get(asked.age or "", 0)
    rank_of = {v: _AGE_RANK.get(ages.get(v, ""), 1) for v in meant}
    replaced = max(meant, key=lambda v: -step * rank_of[v]) if step else meant[0]
    others = [
        v
        for v in found
        if v.get("gender") == genders.get(replaced) and str(v.get("id")) not in previous
    ]
    # The asked way first (the furthest that way), else the nearest in age.
    rank = rank_of[replaced]
    others.sort(
        key=lambda v: (not step * (_age(v) - rank) > 0, -step * _age(v), abs(_age(v) - rank))
    )
    if not others:
        return previous
    return [str(others[0]["id"]) if v == replaced else v for v in previous]


def _age(voice: dict[str, Any]) -> int:
    return _AGE_RANK.get(str(voice.get("age")), 1)


_MOOD_WORDS = {1: "upbeat, high-energy", -1: "calm, relaxed", 0: "warm, modern"}
# Styles a person may name besides the pace ("more upbeat and playful"), kept in the prompt.
_STYLES = (
    "playful",
    "warm",
    "happy",
    "dramatic",
    "epic",
    "festive",
    "acoustic",
    "electronic",
    "jazzy",
    "cinematic",
    "retro",
    "tropical",
    "orchestral",
    "funky",
    "romantic",
    "inspiring",
)


def _styles(text: str) -> list[str]:
    """The styles ``text`` names, not negated ("no jazzy sax")."""
    lowered = text.lower()
    return [
        style
        for style in _STYLES
        if re.search(rf"\b{style}\b", lowered)
        and not re.search(rf"\b(?:no|not|less|without|too)\s+(?:so\s+)?{style}\b", lowered)
    ]


_BPM_STEP = 16


_OTHER_STYLES = ("bright, acoustic", "modern, electronic", "warm, cinematic", "light, jazzy")


def _music_args(
    brief: Brief,
    duration: int,
    *,
    direction: int,
    previous: str = "",
    text: str = "",
    other: int = 0,
) -> dict:
    """A music prompt with a tempo: livelier (+1) or calmer (-1) than ``previous`` (the
    last music prompt) when the person asked for it, in its mood words and its bpm, so the
    change is heard, not only read; 0 keeps the previous mood and tempo (a new length).
    Styles named in ``text`` lead ("more upbeat and playful"); ``other`` (a turn number)
    picks another style at the same pace ("a different track")."""
    old_bpm = re.search(r"(\d{2,3}) bpm", previous)
    old_mood = re.match(r"(.+?) instrumental background music", previous)
    if old_bpm:
        bpm = int(old_bpm.group(1)) + direction * _BPM_STEP
    else:
        bpm = {1: 124, -1: 80, 0: 100}[direction]
    bpm = max(60, min(170, bpm))
    words = _MOOD_WORDS[direction] if direction or not old_mood else old_mood.group(1).lower()
    if other and not direction:
        words = next(w for n in range(4) if (w := _OTHER_STYLES[(other + n) % 4]) != words)
    named = [style for style in _styles(text) if style not in words]
    words = ", ".join([*named, words])
    prompt = (
        f"{words.capitalize()} instrumental background music at {bpm} bpm for a "
        f"{duration}-second radio ad for {brief.client}; "
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
    first = history.is_first_turn
    asked = Request() if first else read_request(history.latest_user)
    duration = _current_duration(history)
    slot = _asked_slot(asked, duration)
    share = SCRIPT_SHARE
    if asked.script in ("shorter", "longer"):
        # The lines are resized within the ad; past the slot's bounds the ad itself is.
        current = _script_share(history, duration)
        resized = (
            max(MIN_SCRIPT_SHARE, current * 0.88)
            if asked.script == "shorter"
            else min(MAX_SCRIPT_SHARE, current * 1.1)
        )
        if abs(resized - current) >= 0.025:  # room within the slot: the ad keeps its length
            share = resized
        elif asked.slot_s is None:  # no room, and no length was named: the ad's changes
            slot = _asked_slot(Request(slot=asked.script), duration)
    if slot is not None:
        duration = slot
    direction = 1 if asked.energy or asked.music == "livelier" else 0
    direction = -1 if asked.calm or asked.music == "calmer" else direction
    if first:  # the brief's tone sets the first music's pace
        direction = mood(brief.context)
    energetic = asked.energy

    wanted: list[str] = []
    if slot is not None:
        wanted.append("set_ad_length")
    if (
        first
        or asked.voice_change
        or asked.script
        or slot is not None
        or asked.energy
        or asked.calm
        or asked.mentions
    ):
        wanted.append("create_voice_draft")
    if first or asked.music or slot is not None or asked.energy or asked.calm:
        wanted.append("create_music_draft")
    if first or asked.sfx:
        wanted.append("create_sfx_draft")
    if not offered:  # no tool may be called: say what this turn made, or sum up the text
        return [], _summary(history, duration) if history.turn_calls else _notes(history)
    wanted = [name for name in wanted if name in offered]
    if not wanted:
        return [], _clarify(history)

    done = [call.name for call, _ in history.turn_calls]
    cast = cast_asked(_brief_request(history)) if first else Cast(gender=asked.gender)
    cast_gender, cast_age = cast.gender, cast.age
    previous_ids = _previous_voice_ids(history)
    needs_search = "create_voice_draft" in wanted and (
        first or asked.voice_change or not previous_ids
    )
    searches = [(c, r) for c, r in history.turn_calls if c.name == "search_voices"]
    if needs_search and "search_voices" in offered:
        if not searches:
            base: dict[str, Any] = {"language": brief.language, "count": 6}
            if cast_age or asked.age:
                base["count"] = 12  # the search has no age filter: more to choose from
            if re.fullmatch(r"[A-Za-z]{2}", brief.market):  # the market's own voices
                base["accent"] = f"{brief.language}-{brief.market.upper()}"
            # A cast of both genders, unless the person named one.
            genders = [cast_gender] if cast_gender else ["female", "male"]
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
        calls: list[tuple[str, dict]] = []
        for name in pending:
            if name == "set_ad_length":
                calls.append((name, {"durationSeconds": duration}))
            elif name == "create_voice_draft":
                ids = _voice_ids(history, asked, previous_ids, cast_gender, cast_age)
                if first and cast.one_voice:
                    ids = ids[:1]
                if not ids:
                    continue
                lines = script_lines(
                    brief, duration, energetic=energetic, share=share, facts=_facts(history)
                )
                tracks = [
                    {"voiceId": ids[i % len(ids)], "text": line} for i, line in enumerate(lines)
                ]
                calls.append((name, {"tracks": tracks}))
            elif name == "create_music_draft":
                previous = str(
                    (history.last_args.get("create_music_draft") or {}).get("prompt", "")
                )
                music = _music_args(
                    brief,
                    duration,
                    direction=direction,
                    previous=previous,
                    text=_brief_request(history) if first else history.latest_user,
                    other=asked.music == "change" and history.turn,
                )
                calls.append((name, music))
            elif name == "create_sfx_draft":
                none = asked.sfx == "none"
                calls.append((name, {"prompts": []} if none else _sfx_args(history.sfx_drafts)))
        if calls:
            return calls, ""
    return [], _summary(history, duration)


def _asked_slot(asked: Request, duration: int) -> int | None:
    """The ad's new length when the person asked for one ("make it 20 seconds", "make the
    ad shorter"), None when it stays."""
    if asked.slot_s is not None:
        slot = min(MAX_DURATION, max(MIN_DURATION, asked.slot_s))
    elif asked.slot_delta_s or asked.slot_factor != 1.0:
        wanted = round(duration * asked.slot_factor) + asked.slot_delta_s
        slot = min(MAX_DURATION, max(MIN_DURATION, wanted))
    elif asked.slot == "shorter":
        slot = max(MIN_DURATION, round(duration * 2 / 3 / 5) * 5)
    elif asked.slot == "longer":
        slot = min(MAX_DURATION, round(duration * 1.5 / 5) * 5)
    else:
        return None
    return slot if slot != duration else None


def _voice_ids(
    history: _History,
    asked: Request,
    previous_ids: list[str],
    gender: str | None,
    age: str | None,
) -> list[str]:
    """Who reads the new script: the same voices unless the person asked for others."""
    voices = history.voices
    if history.is_first_turn or not previous_ids:
        return _pick_voices(voices, gender=gender, age=age)
    if asked.voice_swap:
        return _swap_voices(previous_ids, voices, history, asked)
    if asked.voice_change:
        return _pick_voices(voices, gender=asked.gender, avoid=frozenset(previous_ids))
    return previous_ids


def _current_duration(history: _History) -> int:
    """The ad's length before this turn: as set_ad_length left it, or the brief's."""
    return history.slot_s or history.brief.duration


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
        if call.name == "set_ad_length" and result and "error" not in result:
            lines.append(
                f"- Length: now {result.get('durationSeconds')} s "
                f"(was {result.get('previousSeconds')} s)."
            )
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
    if not has_lines(brief.language):
        lines.append(
            f"- Note: I have no lines in {brief.language} yet, so the script is an English "
            "placeholder: rewrite it in the ad's language before it airs."
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
