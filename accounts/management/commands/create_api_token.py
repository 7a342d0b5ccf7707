"""``manage.py create_api_token USERNAME``: make an API token for a user and print it,
once (a thin wrapper around ``accounts.services.token_create``)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import token_create


class Command(BaseCommand):
    help = (
        "Make an API token for USERNAME and print it: the only time it is shown (only its "
        "digest is stored). It expires after ADSTUDIO_TOKEN_TTL unless --days says sooner."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for.")
        parser.add_argument(
            "--days",
            type=int,
            help="Expire after this many days (1 or more), if sooner than ADSTUDIO_TOKEN_TTL.",
        )

    def handle(self, *args, **options) -> None:
        try:
            user = get_user_model().objects.get_by_natural_key(options["username"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user is called {options['username']!r}.") from None
        if not user.is_active:
            raise CommandError(f"{options['username']!r} is inactive: its token would not work.")
        if len(options["name"]) > 100:
            raise CommandError("--name: at most 100 characters.")
        ttl = None
        if options["days"] is not None:
            if options["days"] < 1:
                raise CommandError("--days: 1 or more.")
            ttl = min(
                timedelta(days=options["days"]), timedelta(seconds=settings.ADSTUDIO_TOKEN_TTL)
            )
        token, secret = token_create(user=user, name=options["name"], ttl=ttl)
        self.stderr.write(
            f"Token {token.prefix}… for {user.get_username()}, expires "
            f"{token.expires_at.isoformat(timespec='seconds')}. It is shown once:"
        )
        self.stdout.write(secret)
