"""Evaluation runs in the admin: the list, one run's cases by score (failures first, each
linking to its transcript), two runs side by side with regressions marked, and CSV/JSON
exports. Runs are made by ``manage.py evaluate``; here they are only read, and a staff
member reads a run only when every case's ad is in a workspace they may view
(``evaluations.selectors.evaluation_runs_for``): lists, pages, comparisons and exports."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from adstudio.admin.columns import when
from adstudio.admin.readonly import ReadOnlyAdminMixin
from conversations.models import Conversation
from evaluations import reports
from evaluations.golden_cases import case_from_conversation, cases_yaml
from evaluations.models import EvaluationRun
from evaluations.selectors import evaluation_runs_for
from workspaces.access import may
from workspaces.roles import Action


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "started",
        "dataset_name",
        "provider_and_model",
        "prompt_version",
        "commit",
        "status",
        "cases_passed",
        "thresholds_met",
        "cost_usd",
    )
    list_filter = ("status", "provider", "dataset_name")
    actions = ["compare_two"]

    @admin.display(description="started", ordering="started_at")
    def started(self, run: EvaluationRun) -> str:
        return when(run.started_at)

    @admin.display(description="provider / model")
    def provider_and_model(self, run: EvaluationRun) -> str:
        return f"{run.provider} / {run.model or '-'}"

    @admin.display(description="commit")
    def commit(self, run: EvaluationRun) -> str:
        return run.git_commit[:10] or "-"

    @admin.display(description="cases passed")
    def cases_passed(self, run: EvaluationRun) -> str:
        figures = run.summary.get("cases passed")
        return f"{figures['passRate']:.0%} of {figures['cases']}" if figures else "-"

    @admin.action(description="Compare the two selected runs")
    def compare_two(self, request, queryset):
        runs = list(queryset.order_by("started_at")[:3])
        if len(runs) != 2:
            self.message_user(request, "Select exactly two runs to compare.", messages.WARNING)
            return None
        url = reverse("admin:evaluations_evaluationrun_compare", args=[runs[1].pk, runs[0].pk])
        return HttpResponseRedirect(url)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<uuid:pk>/compare/<uuid:baseline>/",
                view(self.compare_view),
                name="evaluations_evaluationrun_compare",
            ),
            path(
                "golden-case/",
                view(self.golden_case_view),
                name="evaluations_evaluationrun_golden_case",
            ),
            path(
                "<uuid:pk>/export.<str:fmt>",
                view(self.export_view),
                name="evaluations_evaluationrun_export",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request):
        return evaluation_runs_for(request.user, super().get_queryset(request))

    def _run(self, request, pk) -> EvaluationRun:
        """The run, if the user may read it all; 404 otherwise, as for a run that is not."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        runs = self.get_queryset(request)
        run = get_object_or_404(runs, pk=pk)
        if run.compared_with_id and not runs.filter(pk=run.compared_with_id).exists():
            run.compared_with_id = None  # a run they may not read: not even its id
        return run

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = self._run(request, object_id)
        names, rows = reports.run_table(run)
        context = {
            **self.admin_site.each_context(request),
            "title": str(run),
            "run": run,
            "names": names,
            "rows": rows,
            "opts": self.model._meta,
            "earlier": self.get_queryset(request).filter(
                dataset_name=run.dataset_name, started_at__lt=run.started_at
            )[:10],
        }
        return TemplateResponse(request, "admin/evaluations/evaluationrun/run.html", context)

    def compare_view(self, request, pk, baseline):
        run, before = self._run(request, pk), self._run(request, baseline)
        names, scores, cases = reports.comparison(run, before)
        context = {
            **self.admin_site.each_context(request),
            "title": f"{run} against {before}",
            "run": run,
            "baseline": before,
            "names": names,
            "scores": scores,
            "cases": cases,
            "same_set": run.dataset_hash == before.dataset_hash,
            "regressions": sum(case.regressed for case in cases),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/evaluations/evaluationrun/compare.html", context)

    def export_view(self, request, pk, fmt):
        run = self._run(request, pk)
        name = f"evaluation-{run.pk}"
        if fmt == "csv":
            response = HttpResponse(reports.as_csv(run), content_type="text/csv; charset=utf-8")
        elif fmt == "json":
            response = JsonResponse(reports.as_json(run), json_dumps_params={"indent": 2})
        else:
            raise Http404("Export as csv or json.")
        response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
        return response

    def golden_case_view(self, request):
        """A conversation the user may read, as a golden case to review and add to a set."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        wanted = request.GET.get("conversation", "").strip()
        case_yaml, error = "", ""
        if wanted:
            try:
                conversation = Conversation.objects.select_related("ad").get(pk=wanted)
            except (Conversation.DoesNotExist, ValueError, ValidationError):
                conversation = None
            if conversation is None or not may(
                request.user, conversation.ad.workspace_id, Action.VIEW
            ):
                error = f"No conversation {wanted} that you may read."
            else:
                case_yaml = cases_yaml([case_from_conversation(conversation)])
        context = {
            **self.admin_site.each_context(request),
            "title": "A golden case from a conversation",
            "wanted": wanted,
            "case_yaml": case_yaml,
            "error": error,
            "opts": self.model._meta,
        }
        return TemplateResponse(
            request, "admin/evaluations/evaluationrun/golden_case.html", context
        )
