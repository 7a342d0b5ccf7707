"""First-start set-up for `make run`: the sample voice catalogue and a development admin."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from voices.models import Voice

SAMPLE_CATALOGUE = Path(settings.BASE_DIR) / "voices" / "fixtures" / "sample_catalogue.json"


class Command(BaseCommand):
    help = "Load the sample voice catalogue (once) and create a staff user for development."

    def handle(self, *args, **options) -> None:
        if Voice.objects.exists():
            self.stdout.write("Voice catalogue already loaded.")
        else:
            if not SAMPLE_CATALOGUE.exists():
                raise CommandError(f"Sample catalogue missing: {SAMPLE_CATALOGUE}")
            call_command(
                "import_voices",
                str(SAMPLE_CATALOGUE),
                "--provider",
                "sample",
                "--approve",
                stdout=self.stdout,
            )

        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("A superuser exists; no development admin created.")
            return
        if not settings.DEBUG:
            self.stdout.write("DEBUG is off: create a superuser with `manage.py createsuperuser`.")
            return
        password = os.environ.get("ADSTUDIO_ADMIN_PASSWORD", "admin")
        User.objects.create_superuser(username="admin", email="admin@localhost", password=password)
        self.stdout.write(self.style.SUCCESS("Created development superuser 'admin'."))
