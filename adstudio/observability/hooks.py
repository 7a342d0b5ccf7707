"""The hooks the agent calls where something worth observing happens: a run (its start,
resumes and finish), each model call, each tool call, and a throttled request. Each hook
feeds both sinks, the spans (``tracing``, GenAI semantic conventions) and the Prometheus
metrics (``metrics``), and returns at once, after reading one flag, when both are off.

Prompts, completions and tool arguments and results go into spans only with
``ADSTUDIO_TRACE_CONTENT``; API keys never do.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from adstudio.observability import metrics, switch, tracing

AGENT_NAME = "creative_director"
UNKNOWN_TOOL = "unknown"  # the metrics' label for a tool name the model made up

# Tool names that label metrics: the registry's (an invented name would add a series).
_known_tools: set[str] = set()
# What a model call cost (model, usage) -> dollars: the price table the runs are billed
# with, given by the app that holds it (``use_price_table``), so this package imports
# nothing of the apps.
_price: Callable[..., Any] | None = None


def use_price_table(price: Callable[..., Any]) -> None:
    """Count the cost of model calls with ``price(model=..., usage=...)``."""
    global _price
    _price = price


@dataclass
class _RunScope:
    """The run this thread is executing, for the hooks called while it runs."""

    run_id: str
    span: Span | None = None  # its invoke_agent span, while tracing
    provider: str = ""  # the provider routed to, then the one that answered last


_current_run: ContextVar[_RunScope | None] = ContextVar("adstudio_run", default=None)


# --- Runs -------------------------------------------------------------------------------


def traced_run[F: Callable[..., Any]](execute: F) -> F:
    """Decorates the function that executes a run, ``execute(run_id)``: one
    ``invoke_agent`` span per call, the attempt's, which the hooks below fill in."""

    @functools.wraps(execute)
    def run(run_id: Any) -> Any:
        if not switch.on:
            return execute(run_id)
        scope = _RunScope(run_id=str(run_id))
        token = _current_run.set(scope)
        try:
            if switch.tracer is None:
                return execute(run_id)
            with switch.tracer.start_as_current_span(
                f"invoke_agent {AGENT_NAME}",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT_NAME,
                    "adstudio.run.id": scope.run_id,
                },
            ) as span:
                scope.span = span
                return execute(run_id)
        finally:
            _current_run.reset(token)

    return run  # type: ignore[return-value]


def run_started(run: Any, *, provider: str, resumed: bool) -> None:
    """A worker has claimed ``run`` (a ``conversations.models.Run``) and routed it to
    ``provider``; ``resumed``: it was claimed before, and continues from what is stored.

    A run's first traced attempt stores its span's ``traceparent`` on the run
    (``Run.trace_context``, one UPDATE, only while tracing); a resumed attempt links to
    it, so a trace back end leads from the run that finished to the attempt that died."""
    if not switch.on:
        return
    scope = _current_run.get()
    if scope is not None:
        scope.provider = provider
    if switch.metrics:
        (metrics.RUN_RESUMES if resumed else metrics.RUNS_STARTED).labels(provider=provider).inc()
    if scope is None or scope.span is None:
        return
    span = scope.span
    span.set_attributes(
        {
            "gen_ai.conversation.id": str(run.conversation_id),
            "gen_ai.provider.name": provider,
            "adstudio.run.claims": run.claims,
            "adstudio.run.resumed": resumed,
        }
    )
    if not run.trace_context:
        value = tracing.traceparent(span)
        type(run).objects.filter(pk=run.pk, trace_context="").update(trace_context=value)
        run.trace_context = value
        return
    link = tracing.earlier_attempt_link(span, run.trace_context)
    if link is not None:
        span.add_link(link.context, link.attributes)


def run_finished(
    run_id: Any, *, status: str, error_code: str = "", provider: str | None = None
) -> None:
    """The run has ended with ``status`` (its finish is written). ``provider``: the one
    that answered last, when the caller holds the run; else the executing run's."""
    if not switch.on:
        return
    scope = _current_run.get()
    own = scope is not None and scope.run_id == str(run_id)
    if provider is None:
        provider = scope.provider if own and scope is not None else ""
    if switch.metrics:
        metrics.RUNS_FINISHED.labels(provider=provider or "none", status=str(status)).inc()
    if own and scope is not None and scope.span is not None:
        scope.span.set_attribute("adstudio.run.status", str(status))
        if error_code:
            scope.span.set_attribute("error.type", error_code)
        if str(status) == "failed":
            scope.span.set_status(Status(StatusCode.ERROR, error_code or "failed"))


# --- Model calls ------------------------------------------------------------------------


class _Off:
    """What a hook hands back when both sinks are off: it does nothing."""

    __slots__ = ()

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        return None

    def finish(self, result: Any, *more: Any) -> None:
        return None


_OFF = _Off()


def model_call(provider: str, request: Any) -> _ModelCall | _Off:
    """One attempt at a model call, as a context manager around it: ``chat {model}``
    span, latency, tokens, cost and argument repairs. The caller hands the response to
    ``finish()``; an exception leaving the block is the attempt's failure."""
    if not switch.on:
        return _OFF
    return _ModelCall(provider, request)


class _ModelCall:
    __slots__ = ("_span_cm", "provider", "request", "response", "span", "started")

    def __init__(self, provider: str, request: Any) -> None:
        self.provider = provider
        self.request = request
        self.response: Any = None
        self.span: Span | None = None
        self._span_cm: Any = None

    def __enter__(self) -> _ModelCall:
        if switch.tracer is not None:
            request, options = self.request, self.request.options
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": request.model,
                "gen_ai.request.stream": bool(options.stream),
            }
            if options.max_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = options.max_tokens
            if options.temperature is not None:
                attributes["gen_ai.request.temperature"] = options.temperature
            if switch.content:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": request.system}]
                )
                attributes["gen_ai.input.messages"] = _json([_part(m) for m in request.messages])
            self._span_cm = switch.tracer.start_as_current_span(
                f"chat {request.model}",
                kind=SpanKind.CLIENT,
                attributes=attributes,
                record_exception=False,  # our errors' messages are scrubbed; theirs are set below
                set_status_on_exception=False,
            )
            self.span = self._span_cm.__enter__()
        self.started = time.perf_counter()
        return self

    def finish(self, response: Any) -> None:
        self.response = response

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        seconds = time.perf_counter() - self.started
        response = self.response if exc is None else None
        model = self.request.model
        if response is not None:
            scope = _current_run.get()
            if scope is not None:
                scope.provider = self.provider
        if switch.metrics:
            _count_model_call(self.provider, model, seconds, response, exc)
        span = self.span
        if span is not None:
            if response is not None:
                _describe_response(span, response)
            elif exc is not None:
                span.set_attribute("error.type", getattr(exc, "code", type(exc).__name__))
                # ProviderError messages are scrubbed of keys by the adapters.
                span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
            self._span_cm.__exit__(exc_type, exc, tb)


def speech_call(provider: str, request: Any) -> _SpeechCall | _Off:
    """One attempt at reading a line through a speech provider, as a context manager
    around it: ``text_to_speech {model}`` span, latency, characters billed and cost. The
    caller hands ``finish()`` the result and its cost in dollars; an exception leaving the
    block is the attempt's failure. The line's text goes into the span only with
    ``ADSTUDIO_TRACE_CONTENT``."""
    if not switch.on:
        return _OFF
    return _SpeechCall(provider, request)


class _SpeechCall:
    __slots__ = ("_span_cm", "cost", "provider", "request", "result", "span", "started")

    def __init__(self, provider: str, request: Any) -> None:
        self.provider = provider
        self.request = request
        self.result: Any = None
        self.cost = 0.0
        self.span: Span | None = None
        self._span_cm: Any = None

    def __enter__(self) -> _SpeechCall:
        if switch.tracer is not None:
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "text_to_speech",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": self.request.model,
                "adstudio.speech.voice_id": self.request.voice_id,
                "adstudio.speech.language": self.request.language,
            }
            if switch.content:
                attributes["adstudio.speech.text"] = self.request.text
            self._span_cm = switch.tracer.start_as_current_span(
                f"text_to_speech {self.request.model}",
                kind=SpanKind.CLIENT,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            )
            self.span = self._span_cm.__enter__()
        self.started = time.perf_counter()
        return self

    def finish(self, result: Any, cost_usd: float = 0.0) -> None:
        self.result, self.cost = result, cost_usd

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        seconds = time.perf_counter() - self.started
        result = self.result if exc is None else None
        model = self.request.model
        if switch.metrics:
            outcome = "ok" if exc is None else str(getattr(exc, "code", "exception"))
            metrics.SPEECH_CALL_SECONDS.labels(
                provider=self.provider, model=model, outcome=outcome
            ).observe(seconds)
            if result is not None:
                labels = {"provider": self.provider, "model": model}
                metrics.SPEECH_CHARACTERS.labels(**labels).inc(result.characters)
                metrics.SPEECH_COST.labels(**labels).inc(self.cost)
        span = self.span
        if span is not None:
            if result is not None:
                span.set_attribute("adstudio.speech.characters", result.characters)
                span.set_attribute("adstudio.speech.duration_s", round(result.duration_s, 3))
                if result.request_id:
                    span.set_attribute("gen_ai.response.id", result.request_id)
            elif exc is not None:
                span.set_attribute("error.type", getattr(exc, "code", type(exc).__name__))
                span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
            self._span_cm.__exit__(exc_type, exc, tb)


def _count_model_call(
    provider: str, model: str, seconds: float, response: Any, exc: BaseException | None
) -> None:
    outcome = "ok" if exc is None else str(getattr(exc, "code", "exception"))
    metrics.MODEL_CALL_SECONDS.labels(provider=provider, model=model, outcome=outcome).observe(
        seconds
    )
    if response is None:
        return
    usage = response.usage
    tokens = metrics.MODEL_TOKENS
    tokens.labels(provider=provider, model=model, type="prompt").inc(usage.prompt_tokens)
    tokens.labels(provider=provider, model=model, type="cached").inc(usage.cached_prompt_tokens)
    tokens.labels(provider=provider, model=model, type="completion").inc(usage.completion_tokens)
    if _price is not None:
        cost = _price(model=model, usage=usage)
        metrics.MODEL_COST.labels(provider=provider, model=model).inc(float(cost))
    for call in response.message.tool_calls:
        if call.repaired or call.parse_error:
            metrics.ARGUMENT_REPAIRS.labels(
                provider=provider,
                tool=_tool_label(call.name),
                result="unparseable" if call.parse_error else "repaired",
            ).inc()


def _describe_response(span: Span, response: Any) -> None:
    usage = response.usage
    attributes: dict[str, Any] = {
        "gen_ai.response.model": response.model,
        "gen_ai.response.finish_reasons": (str(response.stop_reason),),
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_prompt_tokens,
    }
    if usage.cache_creation_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_creation_tokens
    if not usage.exact:
        attributes["adstudio.usage.estimated"] = True
    response_id = getattr(response, "response_id", "") or response.request_id
    if response_id:
        attributes["gen_ai.response.id"] = response_id
    if response.request_id and response.request_id != response_id:
        attributes["adstudio.provider.request_id"] = response.request_id
    if switch.content:
        message = _part(response.message)
        message["finish_reason"] = str(response.stop_reason)
        attributes["gen_ai.output.messages"] = _json([message])
    span.set_attributes(attributes)


# --- Tool calls -------------------------------------------------------------------------


def traced_tool_call[F: Callable[..., Any]](tools: Iterable[str]) -> Callable[[F], F]:
    """Decorates the tool executor, ``execute(call, ctx) -> outcome``:
    an ``execute_tool {name}`` span (an error status when the result is an error) and the
    calls counted by tool and outcome. ``tools``: the registry's names, the only ones
    that name a metric's series."""
    _known_tools.update(tools)

    def decorate(execute: F) -> F:
        @functools.wraps(execute)
        def execute_tool_call(call: Any, ctx: Any) -> Any:
            if not switch.on:
                return execute(call, ctx)
            return _execute_observed(execute, call, ctx)

        return execute_tool_call  # type: ignore[return-value]

    return decorate


def _execute_observed(execute: Callable[..., Any], call: Any, ctx: Any) -> Any:
    tool = _tool_label(call.name)
    span_cm: Any = None
    span: Span | None = None
    if switch.tracer is not None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if switch.content:
            attributes["gen_ai.tool.call.arguments"] = call.raw_arguments
        span_cm = switch.tracer.start_as_current_span(
            f"execute_tool {tool}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        span = span_cm.__enter__()
    try:
        outcome = execute(call, ctx)
    except BaseException as exc:
        if switch.metrics:
            metrics.TOOL_CALLS.labels(tool=tool, outcome="raised").inc()
        if span_cm is not None:
            span_cm.__exit__(type(exc), exc, exc.__traceback__)
        raise
    if switch.metrics:
        metrics.TOOL_CALLS.labels(tool=tool, outcome="error" if outcome.is_error else "ok").inc()
    if span is not None:
        if switch.content:
            span.set_attribute("gen_ai.tool.call.result", outcome.text)
        if outcome.is_error:
            # The model reads the error from the result; its text is content.
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
        span_cm.__exit__(None, None, None)
    return outcome


def _tool_label(name: str) -> str:
    return name if name in _known_tools else UNKNOWN_TOOL


# --- Requests ---------------------------------------------------------------------------


def request_throttled(scope: str) -> None:
    """An API request was refused by the throttle of ``scope`` (429)."""
    if switch.metrics:
        metrics.THROTTLED.labels(scope=scope or "default").inc()


# --- Readiness ----------------------------------------------------------------------


def readiness_checked(reached: dict[str, bool]) -> None:
    """A readiness check found each dependency reached, or not."""
    if switch.metrics:
        for dependency, up in reached.items():
            metrics.READINESS.labels(dependency=dependency).set(1 if up else 0)


# --- Scratch tracks ---------------------------------------------------------------------


def render_finished(status: str) -> None:
    """A render's task ended it ``done`` or ``failed``."""
    if switch.metrics:
        metrics.RENDERS_FINISHED.labels(status=status).inc()


def renders_resent(count: int, why: str) -> None:
    """The recovery sweep sent ``count`` renders again (or gave them up), for ``why``."""
    if switch.metrics and count:
        metrics.RENDERS_RESENT.labels(why=why).inc(count)


def render_files_removed(count: int, why: str) -> None:
    """``count`` files no render names were removed from storage, for ``why``."""
    if switch.metrics and count:
        metrics.RENDER_FILES_REMOVED.labels(why=why).inc(count)


# --- Content, when recorded -----------------------------------------------------------


def _part(message: Any) -> dict[str, Any]:
    """A neutral message in the GenAI conventions' message shape (role and parts)."""
    role = str(message.role)
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "result": message.content}
        )
    else:
        if message.text:
            parts.append({"type": "text", "content": message.text})
        for call in getattr(message, "tool_calls", ()):
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
    return {"role": role, "parts": parts}


def _json(value: Any) -> str:
    return json.dumps(
        value,
        ensure_ascii=False,
        separators=(",", ":"),
        default=lambda v: asdict(v) if is_dataclass(v) and not isinstance(v, type) else str(v),
    )
