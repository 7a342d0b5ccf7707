"""Writes of the voice catalogue: importing a provider's catalogue file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from voices.importing import (
    FIELDS,
    CatalogueFileError,
    CatalogueFormat,
    CatalogueReader,
    RowError,
    RowValidator,
    VoiceRow,
    open_catalogue,
)
from voices.models import Voice

# Fields an import writes besides the key; ``approved`` only when --approve (an import
# never unapproves).
_KEY_FIELDS = ("provider", "provider_voice_id")
_CONTENT_FIELDS = tuple(name for name in FIELDS if name not in _KEY_FIELDS)
_MAX_REPORTED_ERRORS = 50
_DEACTIVATE_CHUNK = 5000
_FORMAT_PROVIDERS = {CatalogueFormat.ELEVENLABS: "elevenlabs"}

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
    """One import run: validates records, upserts them in batches, counts outcomes."""

    def __init__(
        self,
        *,
        report: ImportReport,
        validator: RowValidator,
        approve: bool,
        dry_run: bool,
        skip_invalid: bool,
        batch_size: int,
    ) -> None:
        self.report = report
        self.validator = validator
        self.approve = approve
        self.dry_run = dry_run
        self.skip_invalid = skip_invalid
        self.batch_size = batch_size
        self.seen: dict[tuple[str, str], Any] = {}
        self.batch: list[VoiceRow] = []
        self.failed = False
        self.analysed = False
        self.update_fields = [*_CONTENT_FIELDS, "active", "updated_at"]
        if approve:
            self.update_fields.append("approved")

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
        by_provider: dict[str, list[str]] = {}
        for row in batch:
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
        for row in batch:
            current = existing.get(row.key)
            if current is None:
                self.report.created += 1
                writes.append(Voice(**row.values, approved=self.approve, active=True))
                continue
            changed = (
                not current["active"]
                or (self.approve and not current["approved"])
                or any(current[name] != row.values[name] for name in _CONTENT_FIELDS)
            )
            if not changed:
                self.report.unchanged += 1
                continue
            self.report.updated += 1
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
            if not self.analysed:
                self._analyse()

    def _analyse(self) -> None:
        """Statistics for the lookups of the next batches, once the first is written.

        On a table never analysed (a first import), the planner takes the table for tiny
        and looks each batch up by provider alone, filtering the ids row by row: every
        batch re-reads all voices written so far, and the import turns quadratic. With
        statistics (the ids are all distinct) it looks them up by the unique index's two
        columns. ANALYZE inside the import's transaction sees the rows it wrote."""
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Voice._meta.db_table)}")
        self.analysed = True

    def deactivate_missing(self, providers: set[str]) -> int:
        """Mark voices of ``providers`` that the file no longer lists as inactive."""
        missing: list[int] = []
        for provider in sorted(providers):
            rows = Voice.objects.filter(provider=provider, active=True).values_list(
                "pk", "provider_voice_id"
            )
            missing.extend(pk for pk, vid in rows.iterator() if (provider, vid) not in self.seen)
        if not self.dry_run:
            for start in range(0, len(missing), _DEACTIVATE_CHUNK):
                chunk = missing[start : start + _DEACTIVATE_CHUNK]
                Voice.objects.filter(pk__in=chunk).update(active=False, updated_at=timezone.now())
        return len(missing)


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
    """
    reader = _open(path, file_format)
    report = ImportReport(path=str(path), format=reader.format.value, dry_run=dry_run)
    validator = RowValidator(
        provider=provider,
        default_provider=_FORMAT_PROVIDERS.get(reader.format, ""),
        default_language=default_language,
    )
    importer = _Importer(
        report=report,
        validator=validator,
        approve=approve,
        dry_run=dry_run,
        skip_invalid=skip_invalid,
        batch_size=max(1, batch_size),
    )
    with transaction.atomic():
        try:
            for number, record in enumerate(reader.records(), start=1):
                importer.add(record)
                if progress is not None and number % 1000 == 0:
                    progress(reader.fraction_done(), number)
        except CatalogueFileError as exc:
            raise ImportFailed(str(exc)) from None  # the file's fault, not its rows
        importer.flush()
        if importer.failed:
            raise ImportFailed(
                f"{report.error_count} problem(s) in {report.skipped} row(s) of {path}; "
                "nothing was imported. Fix them, or pass --skip-invalid to import the "
                "valid rows.",
                report,
            )
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
            report.deactivated = importer.deactivate_missing(providers)
    return report


def _open(path: str | Path, file_format: str | None) -> CatalogueReader:
    try:
        return open_catalogue(path, file_format)
    except CatalogueFileError as exc:
        raise ImportFailed(str(exc)) from None
