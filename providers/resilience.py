"""One model call with retries and failover: each provider of a route in turn, each with the
retry policy from settings, every attempt reported so the loop can record a ModelCall row.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from providers.base import (
    BadRequest,
    ChatProvider,
    ContentFiltered,
    GenerateRequest,
    Interrupted,
    ModelResponse,
    ProviderError,
    TextCallback,
)
from providers.retry import RetryPolicy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attempt:
    provider: str  # one of router.PROVIDER_NAMES
    model: str
    attempt: int  # 1-based, per provider
    latency_ms: int
    response: ModelResponse | None
    error: ProviderError | None


class CallWatch(Protocol):
    """Watches one attempt (the caller's traces and metrics): a context manager around the
    attempt whose value is handed the response with ``finish()``; an exception leaving the
    block is the attempt's failure."""

    def __call__(self, provider: str, request: GenerateRequest) -> AbstractContextManager[Any]: ...


class _Unwatched:
    def __enter__(self) -> _Unwatched:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finish(self, response: ModelResponse) -> None:
        return None


def unwatched(provider: str, request: GenerateRequest) -> _Unwatched:
    return _Unwatched()


@dataclass(frozen=True)
class ProviderBinding:
    name: str
    model: str
    provider: ChatProvider


def generate(
    request: GenerateRequest,
    *,
    route: list[ProviderBinding],
    on_attempt: Callable[[Attempt], None] | None = None,
    on_text: TextCallback | None = None,
    sleep: Callable[[float], None] = time.sleep,
    policy: RetryPolicy | None = None,
    watch: CallWatch = unwatched,
) -> ModelResponse:
    """The first successful response along ``route``; the last error if every provider fails.

    Rate limits and transient errors are retried (bounded attempts and time per provider);
    authentication and quota errors move on to the next provider at once; a bad request or
    a content-filter refusal is final for the whole call, since another provider would
    refuse the same request. ``on_text`` may have received text of a failed attempt: an
    ``on_attempt`` with an error tells the caller to discard it. ``watch`` wraps each
    attempt (the caller's tracing; the providers know nothing of it).
    """
    if not route:
        raise ValueError("route is empty: call router.route() to get at least one provider")
    policy = policy or RetryPolicy.from_settings()
    last_error: ProviderError | None = None
    for binding in route:
        bound = dataclasses.replace(request, model=binding.model)
        spent = 0.0
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                with watch(binding.name, bound) as call:
                    response = binding.provider.generate(bound, on_text=on_text)
                    call.finish(response)
            except ProviderError as error:
                latency = time.monotonic() - started
                spent += latency
                error.provider = error.provider or binding.name
                _report(on_attempt, binding, attempt, latency, None, error)
                last_error = error
                logger.warning(
                    "%s/%s attempt %d failed (%s): %s",
                    binding.name,
                    binding.model,
                    attempt,
                    error.code,
                    error.message,
                )
                if isinstance(error, BadRequest | ContentFiltered | Interrupted):
                    raise
                delay = policy.next_delay(error, attempt=attempt, spent=spent)
                if delay is None:
                    break  # give this provider up; try the next one
                sleep(delay)
                spent += delay
                continue
            latency = time.monotonic() - started
            _report(on_attempt, binding, attempt, latency, response, None)
            return response
    assert last_error is not None
    raise last_error


def _report(
    on_attempt: Callable[[Attempt], None] | None,
    binding: ProviderBinding,
    attempt: int,
    latency: float,
    response: ModelResponse | None,
    error: ProviderError | None,
) -> None:
    if on_attempt is not None:
        on_attempt(
            Attempt(
                provider=binding.name,
                model=binding.model,
                attempt=attempt,
                latency_ms=int(latency * 1000),
                response=response,
                error=error,
            )
        )
