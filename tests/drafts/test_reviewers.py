"""The Reviewers group: read everything of the product, activate drafts, nothing else."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.core.management import call_command

from drafts.reviewers import PRODUCT_APPS, REVIEWERS


def granted() -> set[str]:
    group = Group.objects.get(name=REVIEWERS)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


@pytest.mark.django_db
def test_reviewers_view_every_product_model_and_activate_drafts_only():
    models = [m for label in PRODUCT_APPS for m in apps.get_app_config(label).get_models()]

    assert granted() == {
        *(f"{m._meta.app_label}.view_{m._meta.model_name}" for m in models),
        "drafts.activate_draft",
    }
    assert {"drafts.view_activation", "conversations.view_runevent"} <= granted()


@pytest.mark.django_db
def test_migrate_restores_a_reviewers_group_that_lost_its_permissions():
    Group.objects.get(name=REVIEWERS).permissions.clear()

    call_command("migrate", verbosity=0)

    assert "drafts.activate_draft" in granted()
    assert not any(p.split(".")[1].startswith(("add_", "change_", "delete_")) for p in granted())
