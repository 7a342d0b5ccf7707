"""Reads of evaluation runs for a person: a run is theirs to read only when every one of
its cases' ads is in a workspace where they may view."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from evaluations.models import EvaluationResult, EvaluationRun
from workspaces.access import unscoped


def evaluation_runs_for(
    user, runs: QuerySet[EvaluationRun] | None = None
) -> QuerySet[EvaluationRun]:
    """``runs`` (every run by default) narrowed to those whose results ``user`` may all
    read: each result's ad in a workspace where they may view (``workspaces.access``).

    All or nothing, not the visible results of a run: a run's summary, thresholds, cost and
    comparisons are figures over all its cases, and would tell of the cases left out; and
    a run shown in part would compare wrongly with another. A result without an ad (a case
    refused before its ad was made) is in no workspace: its run is a superuser's only."""
    runs = EvaluationRun.objects.all() if runs is None else runs
    hidden = unscoped(
        EvaluationResult.objects.filter(run=OuterRef("pk")), user, workspace="ad__workspace"
    )
    return runs.filter(~Exists(hidden))
