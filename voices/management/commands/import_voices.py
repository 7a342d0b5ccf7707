"""``manage.py import_voices PATH``: load a provider's voice catalogue (a thin wrapper
around ``voices.services.voice_import``)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from voices.catalogue_readers import CatalogueFormat
from voices.services import ImportFailed, ImportReport, voice_import


class Command(BaseCommand):
    help = (
        "Import voices from our JSON or CSV format, an ElevenLabs GET /v1/voices export or an "
        "Azure AI Speech GET /cognitiveservices/voices/list response. "
        "Upserts on (provider, provider_voice_id); a re-run of the same file changes nothing. "
        "New voices arrive unapproved unless --approve; existing approvals are always kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The catalogue file.")
        parser.add_argument(
            "--format",
            choices=[f.value for f in CatalogueFormat],
            help="The file's format; detected from its first character when omitted "
            "('[' json, or azure when its first voice's keys are Azure's such as ShortName; "
            "'{' elevenlabs; anything else csv).",
        )
        parser.add_argument(
            "--provider",
            help="Provider of rows that don't name one (ElevenLabs exports default to "
            "'elevenlabs', Azure listings to 'azure').",
        )
        parser.add_argument(
            "--default-language",
            help="Language of rows that don't name one (e.g. ElevenLabs premade voices).",
        )
        parser.add_argument(
            "--approve",
            action="store_true",
            help="Approve the imported voices, offering them to the model.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and count, write nothing."
        )
        parser.add_argument(
            "--skip-invalid",
            action="store_true",
            help="Import the valid rows and list the rejected ones, instead of failing.",
        )
        parser.add_argument(
            "--deactivate-missing",
            action="store_true",
            help="Deactivate this provider's voices that the file no longer lists.",
        )
        parser.add_argument(
            "--batch-size", type=int, default=1000, help="Rows per database round trip."
        )

    def handle(self, *args, **options) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        quiet = options["verbosity"] == 0  # Django's convention: only what went wrong
        show_progress = self.stdout.isatty() and not quiet
        started = time.monotonic()
        try:
            report = voice_import(
                path=options["path"],
                file_format=options["format"],
                provider=options["provider"],
                default_language=options["default_language"],
                approve=options["approve"],
                dry_run=options["dry_run"],
                skip_invalid=options["skip_invalid"],
                deactivate_missing=options["deactivate_missing"],
                batch_size=options["batch_size"],
                progress=self._progress if show_progress else None,
            )
        except ImportFailed as exc:
            if show_progress:
                self.stdout.write("")
            lines = [str(exc)]
            if exc.report is not None:
                lines.extend(f"  {line}" for line in exc.report.error_lines())
            raise CommandError("\n".join(lines)) from None
        if show_progress:
            self.stdout.write("")
        self._report(report, time.monotonic() - started, quiet=quiet)

    def _progress(self, fraction: float, rows: int) -> None:
        self.stdout.write(f"\r{fraction:6.1%}  {rows:,} rows", ending="")
        self.stdout.flush()

    def _report(self, report: ImportReport, seconds: float, *, quiet: bool = False) -> None:
        prefix = "Dry run, nothing written: " if report.dry_run else ""
        if not quiet:
            self.stdout.write(
                f"{prefix}{report.path} ({report.format}): {report.summary()} in {seconds:.1f} s."
            )
        if report.errors:
            self.stdout.write(self.style.WARNING(f"Rejected {report.skipped} row(s):"))
            for line in report.error_lines():
                self.stdout.write(f"  {line}")
