"""Fold the facet counts of every language into one row per value, on demand.

The triggers of 0003 fold a language the first time a transaction writes it; a catalogue
import writes in batches within one transaction, so it leaves one set of rows per batch
statement (41,000 English rows after a 1,000,000-voice import), which a search with an
empty facet cache sums. ``voices_facet_count_fold()`` folds what it can lock (a try-lock
per language, never a wait), under READ COMMITTED like the triggers' own fold, and returns
how many languages it folded; the import calls it once it commits, and this migration
once, for what earlier imports left.
"""

from django.db import migrations

FOLD = r"""
CREATE FUNCTION voices_facet_count_fold() RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    fold text[];
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RETURN 0;
    END IF;
    SELECT array_agg(language) INTO fold
    FROM (SELECT DISTINCT language FROM voices_facet_count) AS languages
    WHERE pg_try_advisory_xact_lock(hashtext('voices_facet_count'), hashtext(language));
    IF fold IS NULL THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM voices_facet_count WHERE language = ANY (fold)
        RETURNING language, gender, accent, locale, style, use_case, voices
    )
    INSERT INTO voices_facet_count (language, gender, accent, locale, style, use_case, voices)
    SELECT language, gender, accent, locale, style, use_case, sum(voices)
    FROM gone
    GROUP BY language, gender, accent, locale, style, use_case
    HAVING sum(voices) <> 0;
    RETURN cardinality(fold);
END
$fn$;
"""


def create_fold(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":  # the counts are PostgreSQL's only
        schema_editor.execute(FOLD)
        schema_editor.execute("SELECT voices_facet_count_fold()")  # what earlier imports left


def drop_fold(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION voices_facet_count_fold();")


class Migration(migrations.Migration):
    dependencies = [("voices", "0004_approve_permission")]

    operations = [migrations.RunPython(create_fold, drop_fold, elidable=False)]
