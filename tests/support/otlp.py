"""A small OTLP/HTTP trace collector on loopback, for the tests whose spans come from
another process (a Celery worker exporting with the real OTLP exporter), and one plain
record of a span, whichever exporter it came from, so a test sees one trace across
processes."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as ProtoStatus


@dataclass(frozen=True)
class SpanRecord:
    name: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_id: str | None
    kind: str  # SERVER, CLIENT, INTERNAL, PRODUCER, CONSUMER
    attributes: dict[str, Any]  # sequences as tuples
    status: str  # UNSET, OK, ERROR
    status_message: str
    links: tuple[tuple[str, str, dict[str, Any]], ...]  # (trace id, span id, attributes)
    events: tuple[tuple[str, dict[str, Any]], ...]
    service: str
    start: int  # nanoseconds since the epoch

    def texts(self) -> Iterable[str]:
        """Every string the span carries: for tests that a value is nowhere in it."""
        yield self.name
        yield self.status_message
        for values in (
            self.attributes,
            *(e[1] for e in self.events),
            *(lk[2] for lk in self.links),
        ):
            for key, value in values.items():
                yield key
                yield from (str(v) for v in value) if isinstance(value, tuple) else (str(value),)


def _hex(raw: bytes | int, digits: int) -> str:
    return raw.hex() if isinstance(raw, bytes) else format(raw, f"0{digits}x")


def _value(value: Any) -> Any:
    """An attribute value as Python: a tuple for a sequence."""
    if isinstance(value, AnyValue):
        kind = value.WhichOneof("value")
        if kind == "array_value":
            return tuple(_value(v) for v in value.array_value.values)
        if kind == "kvlist_value":
            return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
        return getattr(value, kind) if kind else None
    if isinstance(value, list | tuple):
        return tuple(value)
    return value


def _attributes(attributes: Any) -> dict[str, Any]:
    if attributes is None:
        return {}
    if isinstance(attributes, dict) or hasattr(attributes, "items"):
        return {key: _value(value) for key, value in attributes.items()}
    return {kv.key: _value(kv.value) for kv in attributes}


def from_readable(span: Any) -> SpanRecord:
    """A record of an SDK span (an in-memory exporter's)."""
    context = span.get_span_context()
    return SpanRecord(
        name=span.name,
        trace_id=_hex(context.trace_id, 32),
        span_id=_hex(context.span_id, 16),
        parent_id=_hex(span.parent.span_id, 16) if span.parent else None,
        kind=span.kind.name,
        attributes=_attributes(span.attributes),
        status=span.status.status_code.name,
        status_message=span.status.description or "",
        links=tuple(
            (
                _hex(lk.context.trace_id, 32),
                _hex(lk.context.span_id, 16),
                _attributes(lk.attributes),
            )
            for lk in span.links
        ),
        events=tuple((e.name, _attributes(e.attributes)) for e in span.events),
        service=str(span.resource.attributes.get("service.name", "")),
        start=span.start_time or 0,
    )


def _from_proto(span: ProtoSpan, service: str) -> SpanRecord:
    return SpanRecord(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        kind=ProtoSpan.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        attributes=_attributes(span.attributes),
        status=ProtoStatus.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_"),
        status_message=span.status.message,
        links=tuple(
            (lk.trace_id.hex(), lk.span_id.hex(), _attributes(lk.attributes)) for lk in span.links
        ),
        events=tuple((e.name, _attributes(e.attributes)) for e in span.events),
        service=service,
        start=span.start_time_unix_nano,
    )


class OTLPCollector:
    """``start()``, point an exporter at ``endpoint`` (``OTEL_EXPORTER_OTLP_ENDPOINT``),
    read ``spans``. Every export request is also counted with its headers."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []
        self.requests: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.collector = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> OTLPCollector:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def received(self) -> list[SpanRecord]:
        with self.lock:
            return list(self.spans)

    def wait_for(
        self, predicate: Callable[[list[SpanRecord]], bool], timeout: float = 30.0, what: str = ""
    ) -> list[SpanRecord]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.received()
            if predicate(spans):
                return spans
            time.sleep(0.1)
        names = sorted({s.name for s in self.received()})
        raise AssertionError(f"timed out waiting for {what or 'spans'}; received: {names}")

    def _export(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        records = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                records += [
                    _from_proto(s, str(resource.get("service.name", ""))) for s in scope_spans.spans
                ]
        with self.lock:
            self.spans.extend(records)
            self.requests.append(headers)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path.rstrip("/") != "/v1/traces":
            self._reply(404, b"")
            return
        self.server.collector._export(  # type: ignore[attr-defined]
            body, {k.lower(): v for k, v in self.headers.items()}
        )
        self._reply(200, ExportTraceServiceResponse().SerializeToString())

    def _reply(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
