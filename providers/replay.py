"""Recorded provider responses, to run a conversation again without the provider: while
recording, each response of a named session (an evaluation's case) is kept in order; on
replay, the session's calls get those responses back in the same order, so an evaluation
of a real model can be re-scored offline, the same every time.

A recording is a JSON file: ``{"format": "adstudio-replay/1", "sessions": {name:
[response, ...]}}``. Which session a call belongs to is said by ``session(name)`` around
the work (a context variable: the runs of an in-process evaluation execute in the
thread that set it); where the route goes is said by ``router.rerouted``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from providers.base import (
    AssistantMessage,
    BadRequest,
    ChatProvider,
    GenerateRequest,
    ModelResponse,
    StopReason,
    TextCallback,
    ToolCall,
    Usage,
)
from providers.resilience import ProviderBinding

FORMAT = "adstudio-replay/1"
_session: ContextVar[str | None] = ContextVar("replay_session", default=None)


@contextmanager
def session(name: str) -> Iterator[None]:
    token = _session.set(name)
    try:
        yield
    finally:
        _session.reset(token)


def response_to_json(response: ModelResponse) -> dict[str, Any]:
    message = response.message
    return {
        "text": message.text,
        "toolCalls": [dataclasses.asdict(call) for call in message.tool_calls],
        "providerData": message.provider_data,
        "stopReason": response.stop_reason.value,
        "usage": dataclasses.asdict(response.usage),
        "provider": response.provider,
        "model": response.model,
    }


def response_from_json(data: dict[str, Any]) -> ModelResponse:
    message = AssistantMessage(
        text=data.get("text", ""),
        tool_calls=tuple(ToolCall(**call) for call in data.get("toolCalls", [])),
        provider_data=data.get("providerData", {}),
    )
    return ModelResponse(
        message=message,
        stop_reason=StopReason(data["stopReason"]),
        usage=Usage(**data.get("usage", {})),
        provider=data["provider"],
        model=data["model"],
    )


class Recording:
    """The responses of each session, in the order they came."""

    def __init__(self, sessions: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.sessions = sessions or {}
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a recording of provider responses ({FORMAT})")
        return cls(data.get("sessions") or {})

    def save(self, path: str | Path) -> None:
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        text = json.dumps({"format": FORMAT, "sessions": self.sessions}, ensure_ascii=False)
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # a reader never sees half a file

    def add(self, response: ModelResponse) -> None:
        with self._lock:
            self.sessions.setdefault(_current(), []).append(response_to_json(response))

    def next(self) -> ModelResponse:
        name = _current()
        with self._lock:
            index = self._next.get(name, 0)
            recorded = self.sessions.get(name, [])
            if index >= len(recorded):
                raise BadRequest(
                    f"the recording has {len(recorded)} response(s) for {name!r} and this "
                    f"is call {index + 1}: the conversation went another way than when it was "
                    "recorded (another prompt, catalogue or code)",
                    provider="replay",
                )
            self._next[name] = index + 1
        return response_from_json(recorded[index])


def _current() -> str:
    name = _session.get()
    if name is None:
        raise BadRequest("a replayed or recorded call outside a session", provider="replay")
    return name


class RecordingProvider:
    """The provider it wraps, each response kept in the recording."""

    def __init__(self, provider: ChatProvider, recording: Recording) -> None:
        self.provider, self.recording = provider, recording
        self.name = getattr(provider, "name", "recorded")

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        response = self.provider.generate(request, on_text=on_text)
        self.recording.add(response)
        return response


class ReplayProvider:
    """The recorded responses of the current session, in order; no network."""

    name = "replay"

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def generate(
        self, request: GenerateRequest, *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        response = self.recording.next()
        if response.message.text and on_text is not None:
            on_text(response.message.text)
        return response


def recorded_route(recording: Recording):
    """A ``router.rerouted`` wrapper that records what the route's providers answer."""

    def wrap(route: list[ProviderBinding]) -> list[ProviderBinding]:
        return [
            dataclasses.replace(b, provider=RecordingProvider(b.provider, recording)) for b in route
        ]

    return wrap


def replayed_route(recording: Recording):
    """A ``router.rerouted`` wrapper that answers every call from the recording."""
    replay = ProviderBinding(name="replay", model="replay", provider=ReplayProvider(recording))

    def wrap(route: list[ProviderBinding]) -> list[ProviderBinding]:
        return [replay]

    return wrap
