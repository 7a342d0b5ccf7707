"""The review desk's scratch-track players: a draft's page offers its version with the
latest others, and the version before it to compare; the button asks for the render; the
page then plays it and draws its timeline; the ad's page has the latest and the active
mix. Only someone who may see the ad can ask."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group

from drafts.reviewers import REVIEWERS
from drafts.services import draft_activate, draft_create
from providers.demo_lines import LINES
from renders.models import Render
from tests.support.versions import music, sfx, voices
from workspaces.models import Membership
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reviewer(django_user_model):
    rita = django_user_model.objects.create_user("rita", password="pw", is_staff=True)
    rita.groups.add(Group.objects.get(name=REVIEWERS))
    return rita


@pytest.fixture
def ad(make_ad, reviewer):
    ad = make_ad(language="th", duration_s=10)
    Membership.objects.create(workspace=ad.workspace, user=reviewer, role=MemberRole.REVIEWER)
    draft_create(ad=ad, version=voices(LINES["th"].calm[0]))
    draft_create(ad=ad, version=voices(LINES["th"].calm[1], LINES["th"].calm[2]))
    draft_create(ad=ad, version=music("calm pad at 80 bpm", duration=10))
    draft_create(ad=ad, version=sfx("chime"))
    return ad


def render_button(page: str) -> list[str]:
    return re.findall(r'name="render" value="([^"]+)"', page)


def test_a_draft_page_renders_and_plays_its_version_and_the_one_before(client, reviewer, ad):
    v2 = ad.drafts.get(kind="voices", version=2)
    client.force_login(reviewer)
    url = f"/admin/drafts/draft/{v2.pk}/change/"

    page = client.get(url).content.decode()
    this, before = render_button(page)
    assert this.split(":")[1] == str(v2.pk)
    assert before.split(":")[1] == str(ad.drafts.get(kind="voices", version=1).pk)
    assert "<audio" not in page

    asked = client.post(
        f"/admin/renders/render/request/?next={url}", {"render": this, "_save": "ignored"}
    )
    assert asked.status_code == 302 and asked.url == url
    page = client.get(url).content.decode()

    render = Render.objects.get()
    assert render.status == "done" and render.voices == v2
    assert re.search(
        rf'<audio controls preload="metadata" src="/api/renders/{render.pk}/audio\?token=', page
    )
    bars = re.findall(r'<span class="bar" style="left: ([\d.]+)%; width: ([\d.]+)%"', page)
    assert len(bars) == 4  # two voice tracks, the music, the chime
    assert "by a synthetic guide voice where it is not" in page
    # No speech provider is configured: each line says the guide voice read it, and why;
    # the version before, not rendered yet, is priced before anyone asks for it.
    readers = re.findall(r"<li>(track-\d+): (guide voice: [^<]+)</li>", page)
    assert [track for track, _ in readers] == ["track-0", "track-1"], readers
    assert "<li>music: placeholder bed: Loudly not connected</li>" in page
    assert re.search(r"Speech: 0 characters to read, \$0\.", page)
    assert len(render_button(page)) == 1  # the version before is still to be rendered
    src = re.search(r'<audio[^>]+src="([^"]+)"', page).group(1).replace("&amp;", "&")
    played = client.get(src)
    assert played.status_code == 200 and played["Content-Type"] == "audio/ogg"


def test_the_ad_page_has_the_latest_and_the_active_mix(client, reviewer, ad):
    draft_activate(ad=ad, draft_id=ad.drafts.get(kind="voices", version=1).pk, by=reviewer)
    client.force_login(reviewer)

    page = client.get(f"/admin/drafts/ad/{ad.pk}/change/").content.decode()

    assert "Active versions" in page and "Latest versions" in page
    assert len(render_button(page)) == 2


def test_only_someone_who_may_see_the_ad_can_ask(client, django_user_model, ad):
    stranger = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client.force_login(stranger)
    value = f"{ad.pk}:::"

    assert client.post("/admin/renders/render/request/", {"render": value}).status_code == 403
    assert not Render.objects.exists()


def test_a_render_being_made_is_followed_by_the_page(client, reviewer, ad):
    """Queued or rendering: the player waits, polling its render's API resource with the
    reviewer's session, which answers it (the script shows the player when it is done)."""
    from renders.services import versions_of

    render = Render.objects.create(ad=ad, **versions_of(ad))
    client.force_login(reviewer)

    page = client.get(f"/admin/drafts/ad/{ad.pk}/change/").content.decode()

    assert f'data-state="queued" data-poll="/api/renders/{render.pk}"' in page
    assert 'role="status">Rendering' in page
    assert re.search(r'<script src="/static/renders/scratch_player\.js" defer>', page)
    followed = client.get(f"/api/renders/{render.pk}", HTTP_ACCEPT="application/json")
    assert followed.status_code == 200 and followed.json()["status"] == "queued"
    assert client.get("/static/renders/scratch_player.js").status_code == 200
