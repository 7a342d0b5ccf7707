"""The plain DRF tokens (``rest_framework.authtoken``) hashed into API tokens, so that
clients holding one keep working until it expires: ``ADSTUDIO_TOKEN_TTL`` after this
migration. The plain keys are then deleted; the empty ``authtoken_token`` table stays for
the old processes of a rolling deploy (they answer 401 rather than 500) and is dropped
by a later release (docs/DEPLOYMENT.md, "Migrations without downtime")."""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.db.models.functions import Now

LEGACY_TABLE = "authtoken_token"
LEGACY_PREFIX_LENGTH = 8  # of a 40-hex key: 128 random bits stay unknown


def hash_drf_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return  # a database that never had DRF's tokens
    ApiToken = apps.get_model("accounts", "ApiToken")
    ttl = timedelta(seconds=settings.ADSTUDIO_TOKEN_TTL)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {quote(LEGACY_TABLE)}")
        legacy = cursor.fetchall()
    for key, user_id, created in legacy:
        ApiToken.objects.create(
            user_id=user_id,
            name="DRF token (migrated)",
            prefix=key[:LEGACY_PREFIX_LENGTH],
            digest=hashlib.sha256(key.encode()).hexdigest(),
            created_at=created,
            expires_at=Now() + ttl,
        )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {quote(LEGACY_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_api_tokens")]

    # The plain keys are gone once hashed: there is nothing to go back to.
    operations = [migrations.RunPython(hash_drf_tokens, migrations.RunPython.noop)]
