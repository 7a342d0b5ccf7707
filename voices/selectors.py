"""Reads of the voice catalogue: searching approved voices (what the model and the API
see), what a language has (facets), and looking voices up by id.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    Count,
    F,
    Func,
    IntegerField,
    Max,
    Q,
    QuerySet,
    Value,
    When,
)

from adstudio.db.connection import planned_per_query
from adstudio.db.sql import column, columns, from_row, quote_name
from adstudio.languages import Language, normalise_language
from voices.models import SEARCHABLE, Gender, Voice

MAX_COUNT = 50
DEFAULT_COUNT = 10
# A safety net only: cache keys carry the catalogue version, so writes invalidate them.
FACETS_CACHE_SECONDS = 300
# The fields of a compact search result, in the order they are sent to the model.
# What the model reads of a voice to choose it (the design's fields); locale only where the
# results mix locales (pt-BR beside pt-PT), since repeating one on every voice tells nothing.
_COMPACT_FIELDS = (
    "id",
    "name",
    "language",
    "gender",
    "age",
    "accent",
    "style",
    "use_case",
    "locale",
)
_WORD = re.compile(r"[^\W_]+")
_MAX_STYLE_WORDS = 6
_MAX_PK = 2**63 - 1


class InvalidSearch(ValueError):
    """A search argument the caller must fix; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class VoiceQuery:
    """A validated search: what ``search_voices`` and the API filter and rank by."""

    language: Language
    gender: str | None = None
    accent: str | None = None
    style_words: tuple[str, ...] = ()
    style_phrase: str = ""  # the style as asked, its case and spacing folded

    @property
    def styles(self) -> tuple[str, ...]:
        """What a style or use case equals to rank first: the phrase as asked and its words
        ("e-learning", and "social media" for "social-media")."""
        spelled = " ".join(self.style_words)
        return (self.style_phrase, spelled) if self.style_phrase != spelled else (spelled,)

    @property
    def accent_values(self) -> tuple[tuple[str, str], ...]:
        """(field, value) of each way a voice matches the accent, case-insensitively: its
        accent equal to the accent asked for, or its locale equal to it ('en-GB', 'en_gb'),
        or to a region code of the language ('BR' with pt means pt-BR)."""
        accent = self.accent or ""
        locales = {accent.replace(" ", "-")}
        if re.fullmatch(r"[a-z]{2}|\d{3}", accent):
            locales.add(f"{self.language.code}-{accent}")
        return (("accent", accent), *(("locale", locale) for locale in sorted(locales)))


def clamp_count(count: Any, default: int = DEFAULT_COUNT) -> int:
    """1..50: an out-of-range count is a model's or client's slip, not worth a refusal."""
    try:
        value = int(count)
    except (TypeError, ValueError):
        return default
    return max(1, min(MAX_COUNT, value))


def voice_query(
    *,
    language: str,
    gender: str | None = None,
    accent: str | None = None,
    style: str | None = None,
) -> VoiceQuery:
    """Validate and normalise search arguments; raises ``UnknownLanguage`` (language) or
    ``InvalidSearch`` naming the field."""
    if language is None or not str(language).strip():
        raise InvalidSearch("language", "language is required, e.g. 'th', 'Thai' or 'pt-BR'.")
    parsed = normalise_language(str(language))
    gender_value = None
    if gender is not None and str(gender).strip():
        gender_value = str(gender).strip().lower()
        if gender_value not in Gender.values:
            raise InvalidSearch(
                "gender",
                f"Unknown gender {gender!r}: use one of {', '.join(Gender.values)}.",
            )
    # NUL never reaches PostgreSQL (it refuses it in text); "_" and spaces fold like labels.
    accent_value = " ".join(str(accent or "").replace("\x00", "").replace("_", " ").lower().split())
    words = tuple(_WORD.findall(str(style).lower()))[:_MAX_STYLE_WORDS] if style else ()
    phrase = " ".join(str(style or "").replace("\x00", "").lower().split()) if words else ""
    return VoiceQuery(parsed, gender_value, accent_value or None, words, phrase)


class _WordsMatch(Func):
    """PostgreSQL: every query word is a word of the voice's style, use case or description.

    The document expression is the one indexed by ``voice_search_words`` (migration 0002);
    keep them identical or the planner falls back to scanning the language's rows.
    """

    output_field = BooleanField()

    def __init__(self, phrase: str) -> None:
        super().__init__(F("style"), F("use_case"), F("description"), Value(phrase))

    def as_sql(self, compiler, connection, **extra_context):
        parts, params = [], []
        for expression in self.get_source_expressions():
            sql, sql_params = compiler.compile(expression)
            parts.append(sql)
            params.extend(sql_params)
        document = " || ' ' || ".join(parts[:3])
        sql = (
            f"to_tsvector('simple'::regconfig, {document}) "
            f"@@ plainto_tsquery('simple'::regconfig, {parts[3]})"
        )
        return sql, params


def _words_match(words: tuple[str, ...]) -> Q | _WordsMatch:
    if connection.vendor == "postgresql":
        return _WordsMatch(" ".join(words))
    # Elsewhere (SQLite, the embedded default) a whole-word regex per word and column.
    condition = Q()
    for word in words:
        pattern = rf"\b{re.escape(word)}\b"
        condition &= (
            Q(style__iregex=pattern) | Q(use_case__iregex=pattern) | Q(description__iregex=pattern)
        )
    return condition


def _accent_matches(query: VoiceQuery) -> list[Q]:
    """``query.accent_values`` as conditions: any one of these."""
    return [Q(**{f"{field}__iexact": value}) for field, value in query.accent_values]


def _accent_match(query: VoiceQuery) -> Q:
    condition = Q()
    for match in _accent_matches(query):
        condition |= match
    return condition


def _accent_search_sql(query: VoiceQuery, limit: int) -> tuple[str, list[Any]]:
    """The first ``limit`` voices of an accent search (no style) as one query that reads
    few rows: the first ``limit`` of each way to match and each gender in (name, id) order
    (``voice_search_accent``, ``voice_search_locale``), merged. Walking the language in name
    order instead reads every voice before the first match when names go with accents and
    genders, as they do (13,000 French voices before the first Québécois, 6,000 women
    before the tenth man, at a million voices). The conditions are the ORM's own."""
    filtered = _matching(replace(query, accent=None, gender=None)).query
    compiler = filtered.get_compiler(connection=connection)
    where, where_params = compiler.compile(filtered.where)
    quote = connection.ops.quote_name
    table = quote(Voice._meta.db_table)
    columns = ", ".join(f"{table}.{quote(name)}" for name in _COMPACT_FIELDS)
    by_name = f"ORDER BY {quote('name')}, {quote('id')} LIMIT {limit}"
    branches, params = [], []
    for match in _accent_matches(query):
        for gender in [query.gender] if query.gender else Gender.values:
            sql, branch_params = compiler.compile(filtered.build_where(match & Q(gender=gender)))
            branches.append(f"(SELECT {columns} FROM {table} WHERE {where} AND {sql} {by_name})")
            params += [*where_params, *branch_params]
    return f"{' UNION '.join(branches)} {by_name}", params


def _matching(query: VoiceQuery) -> QuerySet[Voice]:
    """Approved, active voices passing every filter of ``query``, unordered."""
    qs = Voice.objects.filter(SEARCHABLE, language=query.language.code)
    if query.language.locale:
        qs = qs.filter(locale__iexact=query.language.locale)
    if query.gender:
        qs = qs.filter(gender=query.gender)
    if query.accent:
        qs = qs.filter(_accent_match(query))
    if query.style_words:
        qs = qs.filter(_words_match(query.style_words))
    return qs


def _style_equal(query: VoiceQuery) -> Q:
    """The voices a style search ranks first: style or use case is the phrase asked for."""
    equal = Q()
    for style in query.styles:
        equal |= Q(style__iexact=style) | Q(use_case__iexact=style)
    return equal


def voice_queryset(query: VoiceQuery) -> QuerySet[Voice]:
    """Approved, active voices matching ``query``, best first, in a stable order.

    With a style: voices whose style or use case equals it come first, then the other
    matches (its words in style, use case or description); ties by name, then id.
    """
    qs = _matching(query)
    if not query.style_words:
        return qs.order_by("name", "id")
    rank = Case(
        When(_style_equal(query), then=Value(0)), default=Value(1), output_field=IntegerField()
    )
    return qs.alias(rank=rank).order_by("rank", "name", "id")


def _style_search_sql(query: VoiceQuery, limit: int) -> tuple[str, list[Any]]:
    """The first ``limit`` rows of ``voice_queryset(query)`` (a style search) as one query
    that reads few rows.

    Ordering every match by rank reads all of them (3,500 of the 24,520 English voices for
    "conversational") to sort them. Here the voices of equal style and of equal use case
    (to the phrase asked and to its words) are each the first ``limit`` entries of an index
    in name order (``voice_search_style``, ``voice_search_use_case``), and the other word
    matches are read only when those are fewer than ``limit`` (a one-time filter:
    PostgreSQL never starts that branch). The conditions are the ORM's own, compiled once;
    only the query's shape is written here.
    """
    filtered = _matching(replace(query, style_words=())).query
    compiler = filtered.get_compiler(connection=connection)

    def condition(where: Q | Func) -> tuple[str, list[Any]]:
        sql, params = compiler.compile(filtered.build_where(where))
        return sql, list(params)

    where, where_params = compiler.compile(filtered.where)
    equal = [
        condition(Q(**{f"{field}__iexact": style}))
        for style in query.styles
        for field in ("style", "use_case")
    ]
    either_equal, either_params = condition(_style_equal(query))
    # A style or use case equal to the phrase has all its words: checking them there would
    # only cost a to_tsvector() of the description per row read.
    words, words_params = condition(_words_match(query.style_words))
    quote = connection.ops.quote_name
    table = quote(Voice._meta.db_table)
    columns = ", ".join(f"{table}.{quote(name)}" for name in _COMPACT_FIELDS)
    first = f"ORDER BY {table}.{quote('name')}, {table}.{quote('id')} LIMIT {limit}"
    by_name = f"ORDER BY {quote('name')}, {quote('id')} LIMIT {limit}"
    sql = (
        "WITH exact AS ("
        + " UNION ".join(
            f"(SELECT {columns} FROM {table} WHERE {where} AND {equal_sql} {first})"
            for equal_sql, _ in equal
        )
        + "), "
        # The other word matches all found through the words' index, then sorted: walking
        # the language's voices in name order until ten match reads every one of them when
        # none does (a word no voice has: 117,000 rows, 2-3 s, at a million voices).
        f"others AS MATERIALIZED ("
        f"SELECT {columns} FROM {table} WHERE {where} AND {words} AND NOT {either_equal}) "
        f"SELECT {', '.join(map(quote, _COMPACT_FIELDS))} FROM ("
        f"SELECT *, 0 AS rank FROM exact UNION ALL SELECT *, 1 FROM ("
        f"SELECT * FROM others {by_name}"
        f") AS first_others WHERE (SELECT count(*) FROM exact) < {limit}"
        f") AS found ORDER BY rank, {quote('name')}, {quote('id')} LIMIT {limit}"
    )
    params = [
        *(param for _, equal_params in equal for param in (*where_params, *equal_params)),
        *where_params,
        *words_params,
        *either_params,
    ]
    return sql, params


def compact_voice(values: dict[str, Any], *, locale: bool = False) -> dict[str, str]:
    """The few tokens the model needs per voice, empty fields left out: id, name,
    language, gender, age (a cast is asked for "a younger voice"), accent, style (the use
    case when it has none) and, if asked, locale."""
    record = {"id": str(values["id"])}
    for name in ("name", "language", "gender", "age", "accent"):
        if values[name]:
            record[name] = values[name]
    style = values["style"] or values["use_case"]
    if style:
        record["style"] = style
    if locale and values["locale"]:
        record["locale"] = values["locale"]
    return record


def search_voices(
    language: str,
    gender: str | None = None,
    accent: str | None = None,
    style: str | None = None,
    count: int = DEFAULT_COUNT,
) -> list[dict[str, str]]:
    """Up to ``count`` (clamped to 1..50) approved, active voices as compact records.

    One query. Raises ``UnknownLanguage`` or ``InvalidSearch``; an empty list means no
    voice matched (``voice_facets`` says what the language does have).
    """
    query = voice_query(language=language, gender=gender, accent=accent, style=style)
    limit = clamp_count(count)
    if connection.vendor == "postgresql":
        sql, params = _search_sql(query, limit)
        # By language (and gender) alone, the first rows of one index in its own order
        # whatever the values: the connection may prepare it, and plan it once. The other
        # searches are skewed (a rare accent or locale is best found through its own
        # index), so planned each time.
        skewed = query.language.locale or query.accent or query.style_words
        with planned_per_query() if skewed else nullcontext(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = [dict(zip(_COMPACT_FIELDS, row, strict=True)) for row in cursor.fetchall()]
    else:
        with planned_per_query():
            rows = list(voice_queryset(query).values(*_COMPACT_FIELDS)[:limit])
    mixed_locales = len({row["locale"] for row in rows}) > 1
    return [compact_voice(row, locale=mixed_locales) for row in rows]


# Stand-ins for a search's values in its statement compiled once per shape: NUL never
# reaches PostgreSQL in text (``voice_query`` removes it), so no real value is one.
_LANGUAGE, _LOCALE, _GENDER, _ACCENT = "\x00language", "\x00locale", "\x00gender", "\x00accent"
_WORDS, _PHRASE = "\x00words", "\x00phrase"
_MATCHES = ("\x00match0", "\x00match1", "\x00match2")


@dataclass(frozen=True)
class _Shape(VoiceQuery):
    """A search with stand-ins for its values: what its statement is compiled from."""

    accent_fields: tuple[str, ...] = ()  # the fields of ``accent_values``, in order
    style_count: int = 0  # how many ``styles``

    @property
    def accent_values(self) -> tuple[tuple[str, str], ...]:
        return tuple(zip(self.accent_fields, _MATCHES, strict=False))

    @property
    def styles(self) -> tuple[str, ...]:
        return (_PHRASE, _WORDS)[2 - self.style_count :]


def _search_sql(query: VoiceQuery, limit: int) -> tuple[str, list[Any]]:
    """``search_voices``' statement for ``query`` on PostgreSQL: compiled once per shape of
    search (building and compiling it through the ORM cost several times running it), with
    the query's values for the stand-ins."""
    accent_values = query.accent_values if query.accent else ()
    styles = query.styles if query.style_words else ()
    shape = _Shape(
        Language(_LANGUAGE, _LOCALE if query.language.locale else ""),
        _GENDER if query.gender else None,
        _ACCENT if query.accent else None,
        (_WORDS,) if query.style_words else (),
        _PHRASE if len(styles) > 1 else _WORDS if styles else "",
        accent_fields=tuple(field for field, _ in accent_values),
        style_count=len(styles),
    )
    sql, template = _compiled_search(shape, limit)
    values = {
        _LANGUAGE: query.language.code,
        _LOCALE: query.language.locale,
        _GENDER: query.gender,
        _ACCENT: query.accent,
        _WORDS: " ".join(query.style_words),
        _PHRASE: query.style_phrase,
        **{stand_in: value for stand_in, (_, value) in zip(_MATCHES, accent_values, strict=False)},
    }
    return sql, [values.get(p, p) if isinstance(p, str) else p for p in template]


@functools.cache
def _compiled_search(shape: _Shape, limit: int) -> tuple[str, tuple[Any, ...]]:
    if shape.style_words:
        sql, params = _style_search_sql(shape, limit)
    elif shape.accent:
        sql, params = _accent_search_sql(shape, limit)
    else:
        sql, params = voice_queryset(shape).values_list(*_COMPACT_FIELDS).query.sql_with_params()
        sql = f"{sql} LIMIT {int(limit)}"
    return sql, tuple(params)


def _top(counter: Counter[str], limit: int) -> dict[str, int]:
    ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    return dict(ranked[:limit])


def catalogue_version() -> str:
    """Changes whenever a voice is written (every write path sets ``updated_at``).

    One index-only lookup; it keys the facet caches so they never outlive a change.
    """
    stamp = Voice.objects.aggregate(stamp=Max("updated_at"))["stamp"]
    return stamp.isoformat() if stamp else "empty"


def _cached(key: str, compute: Callable[[], Any]) -> Any:
    key = f"voices:{key}:{catalogue_version()}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, FACETS_CACHE_SECONDS)
    return value


# PostgreSQL: per language, a row per facet value and write, kept by triggers (migration
# 0003; folded into one per value by the language's next writer); one column of five is set.
_FACET_COUNTS_SQL = """
    SELECT gender, accent, locale, style, use_case, sum(voices)
    FROM voices_facet_count
    WHERE language = %s
    GROUP BY gender, accent, locale, style, use_case
    HAVING sum(voices) > 0
"""


def voice_facets(language: str | Language, *, limit: int = 15) -> dict[str, dict[str, int]]:
    """What approved, active voices of ``language`` exist: counts of genders, accents,
    locales and styles (style and use-case values, which the ``style`` filter matches).

    Cached per catalogue version: one cheap query when cached, two otherwise. On
    PostgreSQL the second sums the language's rows of ``voices_facet_count``, which
    triggers keep current on every write (~45 rows, up to ~4,000 for English right after
    a 100,000-voice import), instead of counting the language's voices (~14 ms for the
    24,520 English ones). All counts are empty when the catalogue has no voice in that
    language.
    """
    code = language.code if isinstance(language, Language) else normalise_language(language).code
    return _cached(f"facets:{code}:{limit}", lambda: _compute_facets(code, limit))


def _compute_facets(code: str, limit: int) -> dict[str, dict[str, int]]:
    facets: dict[str, Counter[str]] = {
        "genders": Counter(),
        "accents": Counter(),
        "locales": Counter(),
        "styles": Counter(),
    }
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_FACET_COUNTS_SQL, [code])
            for gender, accent, locale, style, use_case, n in cursor.fetchall():
                if gender:
                    facets["genders"][gender] += n
                elif accent:
                    facets["accents"][accent.lower()] += n
                elif locale:
                    facets["locales"][locale] += n
                else:  # style, or a use case other than the voice's style
                    facets["styles"][(style or use_case).lower()] += n
    else:  # SQLite, the embedded default: a few hundred voices, counted
        rows = (
            Voice.objects.filter(SEARCHABLE, language=code)
            .values_list("gender", "accent", "locale", "style", "use_case")
            .annotate(n=Count("*"))
            .order_by()
        )
        for gender, accent, locale, style, use_case, n in rows:
            facets["genders"][gender] += n
            if accent:
                facets["accents"][accent.lower()] += n
            if locale:
                facets["locales"][locale] += n
            for label in {style.lower(), use_case.lower()} - {""}:
                facets["styles"][label] += n
    return {key: _top(counter, limit) for key, counter in facets.items()}


def catalogue_languages() -> dict[str, int]:
    """Languages with approved, active voices, and how many each (most first); cached
    like the facets."""

    def compute() -> dict[str, int]:
        rows = (
            Voice.objects.filter(SEARCHABLE)
            .values("language")
            .annotate(n=Count("id"))
            .order_by("-n", "language")
        )
        return {row["language"]: row["n"] for row in rows}

    return _cached("languages", compute)


@functools.cache
def _searchable_sql() -> tuple[str, tuple[Any, ...]]:
    """``SEARCHABLE`` as the ORM compiles it, on the voices table's own name."""
    query = Voice.objects.filter(SEARCHABLE).query
    sql, params = query.get_compiler(connection=connection).compile(query.where)
    return sql, tuple(params)


def approved_voices_by_id(ids: Iterable[str]) -> dict[str, Voice]:
    """The approved, active voices among ``ids``, keyed by the id as given.

    Ids that are not integers (or out of range) are ignored rather than raising, so a
    model's made-up id is reported as unknown by the caller, never as a crash.
    """
    wanted: dict[int, list[str]] = {}
    for raw in ids:
        text = str(raw).strip()
        if text.isascii() and text.isdigit() and 0 < int(text) <= _MAX_PK:
            wanted.setdefault(int(text), []).append(str(raw))
    if not wanted:
        return {}
    found: dict[str, Voice] = {}
    # Plain SQL around the ORM's SEARCHABLE, compiled once: it runs in every voice draft,
    # and compiling the whole queryset each time cost more than the query.
    table = quote_name(Voice._meta.db_table)
    searchable, searchable_params = _searchable_sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns(Voice, table)} FROM {table} "
            f"WHERE {table}.{column(Voice, 'id')} IN ({', '.join(['%s'] * len(wanted))}) "
            f"AND {searchable}",
            [*wanted, *searchable_params],
        )
        for row in cursor.fetchall():
            voice, _ = from_row(Voice, row)
            for given in wanted[voice.pk]:
                found[given] = voice
    return found


def voice_traits_by_id(ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each catalogue voice's ``gender`` and ``age`` among ``ids`` (what a scratch track's
    guide voice is chosen by), and its ``provider``, ``provider_voice_id``, ``locale`` and
    the provider's voice ``settings`` from its record (what its provider reads it with),
    keyed by the id as given. Unapproved or retired voices too (a draft keeps the voice it
    was made with); ids that are not voices are left out."""
    wanted: dict[int, list[str]] = {}
    for raw in ids:
        text = str(raw).strip()
        if text.isascii() and text.isdigit() and 0 < int(text) <= _MAX_PK:
            wanted.setdefault(int(text), []).append(str(raw))
    found: dict[str, dict[str, Any]] = {}
    rows = Voice.objects.filter(pk__in=wanted).values(
        "pk", "gender", "age", "provider", "provider_voice_id", "locale", "metadata__settings"
    )
    for row in rows:
        settings = row.pop("metadata__settings")
        traits = {key: value for key, value in row.items() if key != "pk"}
        traits["settings"] = settings if isinstance(settings, dict) else {}
        for given in wanted[row["pk"]]:
            found[given] = traits
    return found
