"""Writes of the voice catalogue: importing a provider's catalogue file."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from voices.catalogue_readers import (
    CatalogueFileError,
    CatalogueFormat,
    CatalogueReader,
    open_catalogue,
)
from voices.catalogue_rows import FIELDS, RowError, RowValidator, VoiceRow
from voices.models import Voice

# Fields an import writes besides the key; ``approved`` only when --approve (an import
# never unapproves).
_KEY_FIELDS = ("provider", "provider_voice_id")
_CONTENT_FIELDS = tuple(name for name in FIELDS if name not in _KEY_FIELDS)
_MAX_REPORTED_ERRORS = 50
_DEACTIVATE_CHUNK = 5000
_FORMAT_PROVIDERS = {CatalogueFormat.ELEVENLABS: "elevenlabs", CatalogueFormat.AZURE: "azure"}

ProgressCallback = Callable[[float, int], None]


class ImportFailed(Exception):
    """Nothing was written; ``report.errors`` (or the message) say what to fix."""

    def __init__(self, message: str, report: ImportReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class ImportReport:
    path: str
    format: str
    dry_run: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    deactivated: int | None = None  # None unless --deactivate-missing
    errors: list[RowError] = field(default_factory=list)  # the first few rejected rows
    error_count: int = 0

    @property
    def rows(self) -> int:
        return self.created + self.updated + self.unchanged + self.skipped

    def summary(self) -> str:
        parts = [
            f"{self.created} created",
            f"{self.updated} updated",
            f"{self.unchanged} unchanged",
            f"{self.skipped} skipped (invalid)",
        ]
        if self.deactivated is not None:
            parts.append(f"{self.deactivated} deactivated")
        return ", ".join(parts)

    def error_lines(self) -> list[str]:
        lines = [str(error) for error in self.errors]
        if self.error_count > len(self.errors):
            lines.append(f"... and {self.error_count - len(self.errors)} more")
        return lines


class _Importer:
    """One import run: validates records, hands valid rows to a writer in batches, counts
    outcomes."""

    def __init__(
        self,
        *,
        report: ImportReport,
        validator: RowValidator,
        writer: _BatchWriter,
        skip_invalid: bool,
        batch_size: int,
    ) -> None:
        self.report = report
        self.validator = validator
        self.writer = writer
        self.skip_invalid = skip_invalid
        self.batch_size = batch_size
        self.seen: dict[tuple[str, str], Any] = {}
        self.batch: list[VoiceRow] = []
        self.valid = 0
        self.failed = False

    def reject(self, errors: list[RowError]) -> None:
        self.report.skipped += 1
        self.report.error_count += len(errors)
        room = _MAX_REPORTED_ERRORS - len(self.report.errors)
        self.report.errors.extend(errors[: max(room, 0)])
        if not self.skip_invalid:
            self.failed = True  # keep validating to report every bad row; write nothing more

    def add(self, record) -> None:
        result = self.validator.validate(record)
        errors = list(result.errors)
        if result.key is not None:
            first = self.seen.get(result.key)
            if first is not None:
                errors.append(
                    RowError(
                        record.position,
                        record.source_names.get("provider_voice_id", "provider_voice_id"),
                        f"duplicate of {first}: {result.key[1]!r} appears twice in the file",
                    )
                )
            else:
                # Invalid rows count as present: --deactivate-missing leaves them alone.
                self.seen[result.key] = record.position
        if errors:
            self.reject(errors)
            return
        assert result.row is not None
        if self.failed:
            return
        self.batch.append(result.row)
        if len(self.batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        batch, self.batch = self.batch, []
        if not batch or self.failed:
            return
        self.valid += len(batch)
        self.writer.add(batch)

    def finish(self) -> None:
        """Write what is left and count created, updated and unchanged voices."""
        self.flush()
        created, updated = self.writer.finish()
        self.report.created = created
        self.report.updated = updated
        self.report.unchanged = self.valid - created - updated

    def deactivate_missing(self, providers: set[str], *, dry_run: bool) -> int:
        """Mark voices of ``providers`` that the file no longer lists as inactive."""
        missing: list[int] = []
        for provider in sorted(providers):
            rows = Voice.objects.filter(provider=provider, active=True).values_list(
                "pk", "provider_voice_id"
            )
            missing.extend(pk for pk, vid in rows.iterator() if (provider, vid) not in self.seen)
        if not dry_run:
            for start in range(0, len(missing), _DEACTIVATE_CHUNK):
                chunk = missing[start : start + _DEACTIVATE_CHUNK]
                Voice.objects.filter(pk__in=chunk).update(active=False, updated_at=timezone.now())
        return len(missing)


class _BatchWriter(Protocol):
    """Upserts batches of valid rows (or, in a dry run, only classifies them).

    ``finish`` returns (created, updated); every other valid row was unchanged. A voice
    is unchanged when its content fields equal the row's, it is active, and it is
    approved or the import does not approve: such a voice is not written at all, so its
    ``updated_at`` keeps saying when the catalogue last changed.
    """

    def add(self, rows: list[VoiceRow]) -> None: ...

    def finish(self) -> tuple[int, int]: ...


def _staging_values(values: dict[str, Any]) -> list[Any]:
    """One row for COPY, in ``FIELDS`` order; metadata as JSON text for the jsonb column."""
    return [
        json.dumps(values[name], ensure_ascii=False) if name == "metadata" else values[name]
        for name in FIELDS
    ]


def _changed(incoming: str, approve: str) -> str:
    """SQL true when the stored ``voice`` differs from the ``incoming`` row: a content
    field, an inactive voice (a file lists only active voices), or an approval to give."""
    stored = ", ".join(f"voice.{name}" for name in _CONTENT_FIELDS)
    given = ", ".join(f"{incoming}.{name}" for name in _CONTENT_FIELDS)
    return (
        f"({stored}, voice.active, voice.approved) IS DISTINCT FROM "
        f"({given}, true, voice.approved OR {approve})"
    )


_STAGING = "voice_import_staging"
_VOICE_TABLE = Voice._meta.db_table
_CREATE_STAGING = (
    f"CREATE TEMPORARY TABLE {_STAGING} ("
    + ", ".join(f"{name} {'jsonb' if name == 'metadata' else 'text'} NOT NULL" for name in FIELDS)
    + ") ON COMMIT DROP"
)
_COPY_STAGING = f"COPY {_STAGING} ({', '.join(FIELDS)}) FROM STDIN"
_UPSERT_STAGED = f"""
WITH written AS (
    INSERT INTO {_VOICE_TABLE} AS voice
        ({", ".join(FIELDS)}, approved, active, created_at, updated_at)
    SELECT {", ".join(FIELDS)}, %(approve)s, true, %(now)s, %(now)s FROM {_STAGING}
    ON CONFLICT (provider, provider_voice_id) DO UPDATE SET
        {", ".join(f"{name} = excluded.{name}" for name in _CONTENT_FIELDS)},
        active = true,
        approved = voice.approved OR excluded.approved,
        updated_at = excluded.updated_at
    WHERE {_changed("excluded", "excluded.approved")}
    RETURNING xmax = 0 AS inserted
)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM written
"""
_CLASSIFY_STAGED = f"""
SELECT count(*) FILTER (WHERE voice.id IS NULL),
       count(*) FILTER (WHERE voice.id IS NOT NULL AND {_changed("staged", "%(approve)s")})
FROM {_STAGING} AS staged
LEFT JOIN {_VOICE_TABLE} AS voice
    ON voice.provider = staged.provider AND voice.provider_voice_id = staged.provider_voice_id
"""


class _CopyUpsertWriter:
    """PostgreSQL: each batch is COPYed into a temporary table, then written by one
    ``INSERT ... SELECT ... ON CONFLICT DO UPDATE ... WHERE changed``.

    Nothing here is left to the planner: the conflict check probes the unique index on
    (provider, provider_voice_id) row by row, whatever the statistics say. A lookup of
    each batch's ids was planned from statistics, and on a table never analysed (a first
    import on a new database) it read every voice written so far for every batch. The
    upsert's RETURNING tells inserted rows (``xmax = 0``) from updated ones; rows its
    WHERE clause skipped are the unchanged ones.

    A dry run only COPYs, and classifies every row at the end with one join against the
    catalogue: the table does not change during a dry run, so any plan of a single join
    reads it at most once.
    """

    def __init__(self, *, approve: bool, dry_run: bool) -> None:
        self.approve = approve
        self.dry_run = dry_run
        self.created = 0
        self.updated = 0
        self.table_ready = False

    def add(self, rows: list[VoiceRow]) -> None:
        with connection.cursor() as cursor:
            if not self.table_ready:
                cursor.execute(_CREATE_STAGING)
                self.table_ready = True
            elif not self.dry_run:
                cursor.execute(f"TRUNCATE {_STAGING}")
            with cursor.cursor.copy(_COPY_STAGING) as copy:
                for row in rows:
                    copy.write_row(_staging_values(row.values))
            if self.dry_run:
                return
            cursor.execute(_UPSERT_STAGED, {"approve": self.approve, "now": timezone.now()})
            created, updated = cursor.fetchone()
        self.created += created
        self.updated += updated

    def finish(self) -> tuple[int, int]:
        if not self.table_ready:
            return 0, 0
        with connection.cursor() as cursor:
            if self.dry_run:
                cursor.execute(_CLASSIFY_STAGED, {"approve": self.approve})
                self.created, self.updated = cursor.fetchone()
            cursor.execute(f"DROP TABLE {_STAGING}")
        self.table_ready = False
        return self.created, self.updated


class _OrmWriter:
    """Other databases (SQLite, the embedded default): one SELECT of the batch's keys to
    tell created, updated and unchanged apart, then ``bulk_create(update_conflicts=True)``
    of the rows that differ."""

    def __init__(self, *, approve: bool, dry_run: bool) -> None:
        self.approve = approve
        self.dry_run = dry_run
        self.created = 0
        self.updated = 0
        self.update_fields = [*_CONTENT_FIELDS, "active", "updated_at"]
        if approve:
            self.update_fields.append("approved")

    def add(self, rows: list[VoiceRow]) -> None:
        by_provider: dict[str, list[str]] = {}
        for row in rows:
            by_provider.setdefault(row.values["provider"], []).append(
                row.values["provider_voice_id"]
            )
        condition = Q()
        for provider, ids in by_provider.items():
            condition |= Q(provider=provider, provider_voice_id__in=ids)
        existing = {
            (v["provider"], v["provider_voice_id"]): v
            for v in Voice.objects.filter(condition).values(
                *_KEY_FIELDS, "approved", "active", *_CONTENT_FIELDS
            )
        }
        writes: list[Voice] = []
        for row in rows:
            current = existing.get(row.key)
            if current is None:
                self.created += 1
                writes.append(Voice(**row.values, approved=self.approve, active=True))
                continue
            changed = (
                not current["active"]
                or (self.approve and not current["approved"])
                or any(current[name] != row.values[name] for name in _CONTENT_FIELDS)
            )
            if not changed:
                continue
            self.updated += 1
            writes.append(
                Voice(**row.values, approved=current["approved"] or self.approve, active=True)
            )
        if writes and not self.dry_run:
            Voice.objects.bulk_create(
                writes,
                update_conflicts=True,
                unique_fields=["provider", "provider_voice_id"],
                update_fields=self.update_fields,
            )

    def finish(self) -> tuple[int, int]:
        return self.created, self.updated


def _after_import() -> None:
    """Once an import's rows are committed: its facet counts folded and fresh planner
    statistics.

    The import's batches left one set of facet count rows per statement (migration 0005),
    which a search with an empty facet cache would sum. Search (voices.selectors) is planned
    from the statistics, the extended ones on (language, accent) and (language, locale)
    included, which only ANALYZE computes: a table just filled by its first import has
    none, and autovacuum may be off or late."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT voices_facet_count_fold()")
        cursor.execute(f"ANALYZE {connection.ops.quote_name(_VOICE_TABLE)}")


def voice_import(
    *,
    path: str | Path,
    file_format: str | None = None,
    provider: str | None = None,
    default_language: str | None = None,
    approve: bool = False,
    dry_run: bool = False,
    skip_invalid: bool = False,
    deactivate_missing: bool = False,
    batch_size: int = 1000,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Upsert a catalogue file's voices on (provider, provider_voice_id), in one transaction.

    Idempotent: a second run of the same file changes nothing and counts every row
    unchanged. New voices arrive unapproved unless ``approve``; an existing approval is
    never removed. Any invalid row fails the whole import (``ImportFailed``, nothing
    written) unless ``skip_invalid``. ``dry_run`` validates and counts without writing.
    On PostgreSQL, an import that wrote anything folds its facet counts and analyses the
    table once it commits.
    """
    reader = _open(path, file_format)
    report = ImportReport(path=str(path), format=reader.format.value, dry_run=dry_run)
    validator = RowValidator(
        provider=provider,
        default_provider=_FORMAT_PROVIDERS.get(reader.format, ""),
        default_language=default_language,
    )
    with transaction.atomic():
        writer_class = _CopyUpsertWriter if connection.vendor == "postgresql" else _OrmWriter
        importer = _Importer(
            report=report,
            validator=validator,
            writer=writer_class(approve=approve, dry_run=dry_run),
            skip_invalid=skip_invalid,
            batch_size=max(1, batch_size),
        )
        try:
            for number, record in enumerate(reader.records(), start=1):
                importer.add(record)
                if progress is not None and number % 1000 == 0:
                    progress(reader.fraction_done(), number)
        except CatalogueFileError as exc:
            raise ImportFailed(str(exc)) from None  # the file's fault, not its rows
        if importer.failed:
            raise ImportFailed(
                f"{report.error_count} problem(s) in {report.skipped} row(s) of {path}; "
                "nothing was imported. Fix them, or pass --skip-invalid to import the "
                "valid rows.",
                report,
            )
        importer.finish()
        if progress is not None:
            progress(1.0, report.rows)
        if deactivate_missing:
            providers = {key[0] for key in importer.seen}
            if validator.provider:
                providers.add(validator.provider)
            if not importer.seen:
                raise ImportFailed(
                    f"{path} lists no voices: refusing --deactivate-missing, which would "
                    f"deactivate every voice of {', '.join(sorted(providers)) or 'the provider'}."
                )
            report.deactivated = importer.deactivate_missing(providers, dry_run=dry_run)
        wrote = report.created or report.updated or report.deactivated
        if wrote and not dry_run and connection.vendor == "postgresql":
            transaction.on_commit(_after_import, robust=True)
    return report


def _open(path: str | Path, file_format: str | None) -> CatalogueReader:
    try:
        return open_catalogue(path, file_format)
    except CatalogueFileError as exc:
        raise ImportFailed(str(exc)) from None
