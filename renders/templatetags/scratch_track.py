"""``{% scratch_tracks_of_draft draft %}`` and ``{% scratch_tracks_of_ad ad %}``: the
review desk's players, each with its timeline as bars, or a button that asks for the
render."""

from __future__ import annotations

from django import template
from django.utils.csp import CONTEXT_KEY as CSP_NONCE

from renders.players import players_of_ad, players_of_draft

register = template.Library()


@register.inclusion_tag("renders/players.html", takes_context=True)
def scratch_tracks_of_draft(context, draft):
    request = context["request"]
    return {
        "players": players_of_draft(draft, request.user),
        "next": request.get_full_path(),
        CSP_NONCE: context.get(CSP_NONCE),  # for its <style>: an inclusion tag's context is new
    }


@register.inclusion_tag("renders/players.html", takes_context=True)
def scratch_tracks_of_ad(context, ad):
    request = context["request"]
    return {
        "players": players_of_ad(ad, request.user),
        "next": request.get_full_path(),
        CSP_NONCE: context.get(CSP_NONCE),
    }
