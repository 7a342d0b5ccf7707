"""The admin as a review desk for drafts: each version read as its kind deserves and
compared with the one before, activation where you look (with a confirmation, its own
permission, recorded), and reviewers who can change nothing else."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from drafts.models import Activation, Draft, DraftStatus
from drafts.payloads import VoiceTrack, VoiceVersion
from drafts.reviewers import REVIEWERS
from drafts.services import draft_activate, draft_create
from tests.support.versions import music, sfx
from workspaces.models import Membership
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(django_user_model, ad):
    """Staff in the Reviewers group, a reviewer of the ad's workspace."""
    user = django_user_model.objects.create_user(
        username="rita", password="pw-rita-123", is_staff=True
    )
    user.groups.add(Group.objects.get(name=REVIEWERS))
    Membership.objects.create(workspace=ad.workspace, user=user, role=MemberRole.REVIEWER)
    return user


@pytest.fixture
def viewer(django_user_model, ad):
    """Staff who may look at drafts and ads, and not activate: a viewer of the ad's
    workspace, whose admin permissions do not include activating either."""
    user = django_user_model.objects.create_user(
        username="vic", password="pw-vic-123", is_staff=True
    )
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_draft", "view_ad", "view_activation"])
    )
    Membership.objects.create(workspace=ad.workspace, user=user, role=MemberRole.VIEWER)
    return user


def script(*lines: tuple[str, str, str, float]) -> VoiceVersion:
    """Voice tracks as (voice id, voice name, text, overlap), each after the one before."""
    return VoiceVersion(
        voiceTracks=[
            VoiceTrack(
                id=f"track-{i}",
                voiceId=voice_id,
                voiceName=name,
                text=text,
                playAfter="start" if i == 0 else f"track-{i - 1}",
                overlap=overlap,
            )
            for i, (voice_id, name, text, overlap) in enumerate(lines)
        ],
        estimatedDurationS=6.5,
    )


def page(client, name: str, *args) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_a_voice_draft_reads_as_a_table_and_shows_what_changed(client, reviewer, ad):
    draft_create(
        ad=ad,
        version=script(("7", "Araya Boonmee", "One plan for the family.", 0)),
    )
    v2, _ = draft_create(
        ad=ad,
        version=script(
            ("7", "Araya Boonmee", "One plan for the whole family.", 0),
            ("9", "Somchai", "Premium, for everyone.", 0.5),
        ),
    )
    client.force_login(reviewer)

    html = page(client, "admin:drafts_draft_change", v2.pk)

    assert "Araya Boonmee" in html and "(9)" in html
    assert "after track 1" in html and "overlaps 0.5 s" in html
    assert "Changes from" in html
    assert (
        '<li class="removed"><span class="sign">&minus;</span>track 1: Araya Boonmee (7) '
        "reads \u201cOne plan for the family.\u201d at the start</li>" in html
    )
    assert (
        '<li class="added"><span class="sign">+</span>track 2: Somchai (9) reads '
        "\u201cPremium, for everyone.\u201d after track 1, overlaps 0.5 s</li>" in html
    )
    assert 'name="_save"' not in html  # a draft is read, never saved
    assert "Activate voices v2" in html


def test_music_and_effects_read_by_their_fields(client, staff_user, ad):
    music_draft, _ = draft_create(ad=ad, version=music("warm ukulele", duration=15))
    effects, _ = draft_create(ad=ad, version=sfx("door chime"))
    client.force_login(staff_user)

    music_html = page(client, "admin:drafts_draft_change", music_draft.pk)
    effects_html = page(client, "admin:drafts_draft_change", effects.pk)

    assert "<dd>15 s</dd>" in music_html and "warm ukulele" in music_html
    assert "The first music version, and none is active: nothing to compare with." in music_html
    assert "door chime" in effects_html and "at the end" in effects_html


def test_activate_from_the_draft_page_after_a_confirmation(client, reviewer, ad):
    v1, v2 = (draft_create(ad=ad, version=music(p))[0] for p in ("calm piano", "upbeat pop"))
    draft_activate(ad=ad, draft_id=v1.pk)
    client.force_login(reviewer)
    url = reverse("admin:drafts_draft_activate", args=[v2.pk])

    confirmation = client.get(url).content.decode()
    assert Draft.objects.get(pk=v2.pk).status == DraftStatus.DRAFT  # asking changes nothing
    assert "Make music v2 the live version" in confirmation
    assert "music v1 (active now): Music (loudly), 30 s: calm piano" in confirmation

    response = client.post(url, {"next": reverse("admin:drafts_ad_change", args=[ad.pk])})
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:drafts_ad_change", args=[ad.pk])
    shown = client.get(response["Location"]).content.decode()
    assert "Activated music v2 (archived v1)." in shown

    activation = Activation.objects.get(draft=v2)
    assert activation.replaced == v1
    assert (activation.user, activation.source) == (reviewer, "admin")


def test_the_ad_page_has_a_panel_per_kind_and_the_activations(client, reviewer, ad):
    v1, v2, _v3 = (draft_create(ad=ad, version=music())[0] for _ in range(3))
    draft_activate(ad=ad, draft_id=v1.pk, by=reviewer, source="admin")
    draft_activate(ad=ad, draft_id=v2.pk, by=reviewer, source="admin")
    client.force_login(reviewer)

    html = page(client, "admin:drafts_ad_change", ad.pk)

    assert html.count('class="module draft-panel"') == 3
    assert "Voices" in html and "Sound effects" in html and "No version yet." in html
    activate_links = html.count('class="button activate-link"')
    assert activate_links == 2  # v1 (archived) and v3 (draft); v2 is active
    assert f"{reverse('admin:drafts_draft_activate', args=[v2.pk])}" not in html
    assert "<td>rita</td>" in html  # who activated
    assert html.count("<td>Admin</td>") == 2
    assert 'name="_save"' not in html  # a reviewer changes nothing


def test_without_the_permission_there_is_no_activation(client, viewer, ad):
    draft, _ = draft_create(ad=ad, version=music())
    client.force_login(viewer)
    url = reverse("admin:drafts_draft_activate", args=[draft.pk])

    html = page(client, "admin:drafts_draft_change", draft.pk)
    assert "activate-link" not in html and url not in html

    assert client.get(url).status_code == 403
    assert client.post(url).status_code == 403
    changelist = reverse("admin:drafts_draft_changelist")
    client.post(changelist, {"action": "activate", "_selected_action": [str(draft.pk)]})
    assert Draft.objects.get(pk=draft.pk).status == DraftStatus.DRAFT
    assert not Activation.objects.exists()


def test_a_reviewer_can_change_or_delete_nothing(client, reviewer, ad):
    draft, _ = draft_create(ad=ad, version=music())
    draft_activate(ad=ad, draft_id=draft.pk, by=reviewer, source="admin")
    activation = Activation.objects.get()
    client.force_login(reviewer)

    refused = [
        client.post(reverse("admin:drafts_ad_change", args=[ad.pk]), {"title": "renamed"}),
        client.get(reverse("admin:drafts_ad_delete", args=[ad.pk])),
        client.get(reverse("admin:drafts_ad_add")),
        client.get(reverse("admin:drafts_draft_delete", args=[draft.pk])),
        client.get(reverse("admin:drafts_activation_delete", args=[activation.pk])),
        client.post(reverse("admin:drafts_activation_change", args=[activation.pk]), {}),
        client.get(reverse("admin:voices_voice_add")),
        client.get(reverse("admin:auth_user_changelist")),
    ]

    assert [r.status_code for r in refused] == [403] * len(refused)
    ad.refresh_from_db()
    assert ad.title != "renamed"


def test_an_activation_goes_back_only_to_this_site(client, reviewer, ad):
    draft, _ = draft_create(ad=ad, version=music())
    client.force_login(reviewer)

    response = client.post(
        reverse("admin:drafts_draft_activate", args=[draft.pk]),
        {"next": "https://evil.example/phish"},
    )

    assert response["Location"] == reverse("admin:drafts_draft_change", args=[draft.pk])


@pytest.mark.parametrize("length", [36, 8])
def test_ads_and_drafts_are_found_by_their_id(client, staff_user, ad, make_ad, length):
    other = make_ad(title="Another ad")
    draft, _ = draft_create(ad=ad, version=music())
    client.force_login(staff_user)

    ads = client.get(reverse("admin:drafts_ad_changelist"), {"q": str(ad.pk)[:length]})
    drafts = client.get(reverse("admin:drafts_draft_changelist"), {"q": str(draft.pk)[:length]})
    nothing = client.get(reverse("admin:drafts_ad_changelist"), {"q": "abc"})

    assert list(ads.context["cl"].result_list) == [ad]
    assert other not in ads.context["cl"].result_list
    assert list(drafts.context["cl"].result_list) == [draft]
    assert nothing.status_code == 200 and list(nothing.context["cl"].result_list) == []


def test_the_index_links_the_desk_and_view_site_is_real(client, reviewer):
    client.force_login(reviewer)

    html = page(client, "admin:index")

    assert f'href="{reverse("admin:agent-stats")}"' in html
    assert 'href="/api/docs/"' in html
    assert ">View site</a>" in html
    assert client.get("/api/docs/").status_code == 200
