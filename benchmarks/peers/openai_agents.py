"""The standard session (search_voices, voice, music and sfx drafts, final answer) through
the openai-agents SDK's ``Runner``, with the same scripted director as our loop
(``benchmarks.agent_loop.next_step``) behind the SDK's ``Model`` interface.

What the peer does per session, so that its figures can be read honestly against ours:

- the model: an in-process ``Model`` that reads the run's input items after the last
  user message and answers with ``next_step``'s call or text (no network, no streaming);
  its own time is taken out of the figures, as ours is;
- ``search_voices``: filters the sample catalogue (``voices/fixtures/sample_catalogue.json``,
  held in memory, indexed by language) by language, gender, accent and style, and returns
  the first ``count`` voices as the compact records ours returns;
- the draft functions: validate their arguments (pydantic, through the SDK), check the
  voice ids against the in-memory catalogue, number the version per kind and append the
  draft to a list held by the run's context. Nothing is written anywhere;
- storage ``memory``: no SDK session, the history lives only in the run's result;
  storage ``sqlite``: an ``SQLiteSession`` on a file (WAL, SQLite's default
  ``synchronous``), one ``session_id`` per conversation, all in one file, as an
  application keeps its conversations. The SDK reads the history and appends the
  turn's items there.

Ours, for the same session, writes every step durably to PostgreSQL (the run's claim,
each model reply with its ModelCall and its first tool call's result, the drafts, whose
versions a unique constraint keeps 1..n, the final answer, the run's finish) and counts
tokens for its context budget. Tracing is off on both
sides.
"""

# No ``from __future__ import annotations``: the SDK reads the function tools' signatures
# at run time, and their types are local to ``build_functions`` (the SDK is imported only
# when a peer runs).
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmarks.agent_loop import ROUNDS, next_step

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "voices" / "fixtures" / "sample_catalogue.json"
STORAGES = ("memory", "sqlite")
USER_TEXT = "Make the ad."
INSTRUCTIONS = (
    "You are the creative director of an audio ad. Search the voice catalogue, then write "
    "the voices, music and sound effects drafts, then say what you made."
)


def import_agents():
    """The SDK, imported only when a peer runs: it is an optional extra, never a runtime
    dependency of the product."""
    try:
        import agents
    except ImportError:
        sys.exit(
            "benchmarks.peers needs the openai-agents SDK, an optional extra: "
            "pip install -e '.[bench]'"
        )
    return agents


def load_catalogue() -> dict[str, Any]:
    """The sample catalogue by language and by id (ids are positions, as strings)."""
    by_language: dict[str, list[dict[str, Any]]] = {}
    by_id: dict[str, dict[str, Any]] = {}
    for position, voice in enumerate(json.loads(CATALOGUE.read_text()), start=1):
        record = {"id": str(position), **voice}
        by_language.setdefault(voice["language"], []).append(record)
        by_id[record["id"]] = record
    return {"by_language": by_language, "by_id": by_id}


@dataclass
class AdWork:
    """One conversation's ad: its brief's language and length, and the drafts written."""

    language: str = "th"
    duration_s: int = 30
    drafts: list[dict[str, Any]] = field(default_factory=list)

    def next_version(self, kind: str) -> int:
        return 1 + sum(1 for draft in self.drafts if draft["kind"] == kind)


def build_functions(catalogue: dict[str, Any]) -> list[Any]:
    """The four functions of the standard session as SDK function tools."""
    from pydantic import BaseModel, Field

    agents = import_agents()
    RunContextWrapper = agents.RunContextWrapper

    class VoiceTrackArgs(BaseModel):
        voiceId: str = Field(description="A voice id from search_voices.")
        text: str = Field(min_length=1, max_length=2000, description="The line it reads.")
        playAfter: str | None = Field(default=None, description='"start" or "track-N".')
        overlap: float = Field(default=0, ge=-10, le=10)

    class SfxPromptArgs(BaseModel):
        description: str = Field(min_length=2, max_length=300)
        placement: Literal["start", "end", "afterVoice"] = "end"
        duration: float | None = Field(default=None, gt=0, le=30)

    def written(ctx: RunContextWrapper[AdWork], kind: str, payload: dict[str, Any]) -> str:
        version = ctx.context.next_version(kind)
        ctx.context.drafts.append({"kind": kind, "version": version, "payload": payload})
        return json.dumps({"versionId": f"v{version}", "status": "draft", "kind": kind})

    @agents.function_tool
    def search_voices(
        ctx: RunContextWrapper[AdWork],
        language: str,
        gender: Literal["male", "female"] | None = None,
        accent: str | None = None,
        style: str | None = None,
        count: int = 5,
    ) -> str:
        """Find approved voices for the ad; only ids returned here may be a voiceId.

        Args:
            language: ISO code, e.g. th.
            gender: male or female.
            accent: e.g. british.
            style: tone or use, e.g. warm.
            count: 1-50.
        """
        found = []
        for voice in catalogue["by_language"].get(language.strip().lower(), ()):
            if gender and voice["gender"] != gender:
                continue
            if accent and voice["accent"] != accent:
                continue
            if style and style not in (voice["style"], voice["use_case"]):
                continue
            record = {"id": voice["id"]}
            for name in ("name", "language", "gender", "accent"):
                if voice[name]:
                    record[name] = voice[name]
            record["style"] = voice["style"] or voice["use_case"]
            found.append(record)
            if len(found) >= max(1, min(count, 50)):
                break
        return json.dumps({"voices": found, "count": len(found)})

    @agents.function_tool
    def create_voice_draft(ctx: RunContextWrapper[AdWork], tracks: list[VoiceTrackArgs]) -> str:
        """Write the next voices draft: each track a line read by a catalogue voice.

        Args:
            tracks: the script's lines in order.
        """
        unknown = [t.voiceId for t in tracks if t.voiceId not in catalogue["by_id"]]
        if unknown:
            return json.dumps({"error": f"Unknown voice ids {unknown}: search_voices first."})
        voice_tracks = [
            {
                "id": f"track-{n}",
                "voiceId": track.voiceId,
                "text": track.text,
                "playAfter": track.playAfter or ("start" if n == 0 else f"track-{n - 1}"),
                "overlap": track.overlap,
            }
            for n, track in enumerate(tracks)
        ]
        return written(ctx, "voices", {"voiceTracks": voice_tracks})

    @agents.function_tool
    def create_music_draft(
        ctx: RunContextWrapper[AdWork],
        prompt: str,
        provider: Literal["loudly", "mubert"] = "loudly",
        duration: int | None = None,
    ) -> str:
        """Write the next music draft.

        Args:
            prompt: genre, mood, tempo, instruments.
            provider: the music generator.
            duration: seconds (default: the ad's).
        """
        payload = {
            "prompt": prompt,
            "provider": provider,
            "duration": duration or ctx.context.duration_s,
        }
        return written(ctx, "music", payload)

    @agents.function_tool
    def create_sfx_draft(ctx: RunContextWrapper[AdWork], prompts: list[SfxPromptArgs]) -> str:
        """Write the next sound effects draft.

        Args:
            prompts: each effect, where it plays and how long.
        """
        payload = {
            "soundFxPrompts": [
                {
                    "description": p.description,
                    "placement": {"type": p.placement},
                    "duration": p.duration or 3.0,
                }
                for p in prompts
            ]
        }
        return written(ctx, "sfx", payload)

    return [search_voices, create_voice_draft, create_music_draft, create_sfx_draft]


def scripted_model():
    """The scripted director behind the SDK's ``Model`` interface; ``seconds`` is its own
    time, taken out of the figures."""
    agents = import_agents()
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class ScriptedDirector(agents.Model):
        seconds = 0.0
        calls = 0

        async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any):
            started = time.perf_counter()
            items = [{"role": "user", "content": input}] if isinstance(input, str) else input
            last_user = max(i for i, item in enumerate(items) if item.get("role") == "user")
            after = []
            for item in items[last_user + 1 :]:
                kind = item.get("type")
                if kind == "function_call":
                    after.append(("assistant", item["arguments"]))
                elif kind == "function_call_output":
                    after.append(("tool", item["output"]))
                elif item.get("role") == "assistant":
                    after.append(("assistant", ""))
            step, value = next_step(after, language="th")
            if step == "call":
                name, arguments = value
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc_{len(items)}",
                        call_id=f"call_{len(items)}",
                        name=name,
                        arguments=json.dumps(arguments),
                        status="completed",
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text=value, annotations=[])
                output = [
                    ResponseOutputMessage(
                        type="message",
                        id=f"msg_{len(items)}",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            response = agents.ModelResponse(
                output=output,
                usage=agents.Usage(
                    requests=1, input_tokens=1000, output_tokens=50, total_tokens=1050
                ),
                response_id=None,
            )
            ScriptedDirector.calls += 1
            ScriptedDirector.seconds += time.perf_counter() - started
            return response

        async def stream_response(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("the benchmark's runs do not stream")
            yield  # an async generator, as the interface declares

    return ScriptedDirector()


class OpenAIAgentsPeer:
    """Runs the standard session through ``agents.Runner``; ``storage`` is ``memory`` (no
    SDK session) or ``sqlite`` (an ``SQLiteSession`` per conversation in ``directory``)."""

    name = "openai-agents"

    def __init__(self, *, storage: str, directory: Path | None = None) -> None:
        if storage not in STORAGES:
            raise ValueError(f"storage {storage!r}: choose one of {', '.join(STORAGES)}")
        if storage == "sqlite" and directory is None:
            raise ValueError("storage 'sqlite' needs a directory for its database file")
        agents = import_agents()
        self.agents = agents
        self.storage = storage
        self.database = directory / "openai_agents_sessions.sqlite3" if directory else None
        self.model = scripted_model()
        self.agent = agents.Agent(
            name="creative director",
            instructions=INSTRUCTIONS,
            tools=build_functions(load_catalogue()),
            model=self.model,
        )
        self.config = agents.RunConfig(tracing_disabled=True)
        self.conversations = 0

    async def session_ms(self) -> float:
        """Milliseconds of one standard session, the model's own time taken out.

        A new conversation's storage is opened before the clock starts and closed after
        it stops, as ours creates its conversation and run outside the timed part."""
        self.conversations += 1
        storage = None
        if self.storage == "sqlite":
            storage = self.agents.SQLiteSession(f"conversation-{self.conversations}", self.database)
        work = AdWork()
        calls_before, model_before = self.model.calls, self.model.seconds
        started = time.perf_counter()
        result = await self.agents.Runner.run(
            self.agent,
            USER_TEXT,
            context=work,
            session=storage,
            run_config=self.config,
            max_turns=ROUNDS + 2,
        )
        elapsed = time.perf_counter() - started
        if storage is not None:
            storage.close()
        rounds = self.model.calls - calls_before
        if rounds != ROUNDS or len(work.drafts) != 3 or not result.final_output:
            sys.exit(
                f"openai-agents ({self.storage}) ended after {rounds} rounds with "
                f"{len(work.drafts)} drafts: {result.final_output!r}"
            )
        return (elapsed - (self.model.seconds - model_before)) * 1000

    async def block_ms(self, sessions: int) -> list[float]:
        return [await self.session_ms() for _ in range(sessions)]
