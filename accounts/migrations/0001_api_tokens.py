"""API tokens: a digest and a prefix, never the token; each expires."""

import django.db.models.deletion
import django.db.models.functions.datetime
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, help_text='What the token is for.', max_length=100)),
                ('prefix', models.CharField(help_text="The token's first characters: not secret.", max_length=12)),
                ('digest', models.CharField(help_text='SHA-256 of the token, in hex.', max_length=64)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('expires_at', models.DateTimeField()),
                ('last_used_at', models.DateTimeField(blank=True, help_text='To the minute: written at most once a minute.', null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API token',
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['user', '-created_at'], name='api_token_by_user')],
                'constraints': [models.UniqueConstraint(fields=('digest',), name='api_token_unique_digest'), models.CheckConstraint(condition=models.Q(('digest__regex', '^[0-9a-f]{64}$')), name='api_token_digest_is_sha256'), models.CheckConstraint(condition=models.Q(('expires_at__gt', models.F('created_at'))), name='api_token_expires_after_creation'), models.CheckConstraint(condition=models.Q(('revoked_at__isnull', True), ('revoked_at__gte', models.F('created_at')), _connector='OR'), name='api_token_revoked_after_creation')],
            },
        ),
    ]
