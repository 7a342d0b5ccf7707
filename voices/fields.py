"""The fields of a voice as catalogues carry them, in the order our CSV header is written:
the one list the importer, the catalogue generator and the API read (no Django here, so
the generator runs without it)."""

from __future__ import annotations

CATALOGUE_FIELDS: tuple[str, ...] = (
    "provider",
    "provider_voice_id",
    "name",
    "language",
    "locale",
    "accent",
    "gender",
    "age",
    "style",
    "use_case",
    "description",
    "preview_url",
    "metadata",
)
