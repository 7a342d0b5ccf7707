"""The mix's libraries (numpy, scipy, the codecs: about a second) are loaded by the
render, or a worker at its start, not by every process that loads the apps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a fresh interpreter: this one has loaded them already
def test_loading_the_apps_does_not_load_the_mix():
    code = (
        "import os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'adstudio.settings'; "
        "import django; django.setup(); "
        "heavy = ('scipy', 'pyloudnorm', 'soundfile', 'audio.mix'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
