"""The scorers' negative controls (``controls.yaml``): each bad ad fails the scorers it
names, each good one passes them, with the reason naming what was wrong; and every
pass/fail score has bad ads it fails and good ones it passes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluations.cases import AdOutcome, Brief, CaseInput
from evaluations.scorers import SCORERS
from tests.evaluations.outcomes import context

CONTROLS = Path(__file__).with_name("controls.yaml")
VERDICTS = {"pass": True, "fail": False, "n/a": None}


def merged(base: Any, changes: Any) -> Any:
    """``changes`` over ``base``: mappings key by key (None removes a key), anything else
    replaced."""
    if not isinstance(base, dict) or not isinstance(changes, dict):
        return copy.deepcopy(changes)
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def load() -> tuple[dict, list[dict]]:
    document = yaml.safe_load(CONTROLS.read_text())
    return document, document["controls"]


DOCUMENT, RAW = load()


def control_case(control: dict) -> tuple[CaseInput, AdOutcome]:
    ad = DOCUMENT["ads"][control["ad"]]
    outcome = AdOutcome.model_validate(merged(ad, control.get("outcome") or {}))
    for payload in [*outcome.first_drafts.values(), *outcome.drafts.values()]:
        # An unquoted comma in a YAML flow mapping makes a key of its own without a value.
        assert None not in payload.values(), f"{control['name']}: a key without a value: {payload}"
    inputs = dict(control.get("inputs") or {})
    inputs.setdefault("brief", DOCUMENT["briefs"]["thai"])
    return CaseInput.model_validate(inputs), outcome


def scores(inputs: CaseInput, outcome: AdOutcome) -> dict[str, tuple[Any, str | None]]:
    """Every scorer's results by name (an absent name: not applicable)."""
    found: dict[str, tuple[Any, str | None]] = {}
    for scorer in SCORERS:
        result = scorer().evaluate(context(outcome, inputs))
        if not isinstance(result, dict):
            result = {scorer.__name__: result}
        for name, r in result.items():
            found[name] = (getattr(r, "value", r), getattr(r, "reason", None))
    return found


@pytest.mark.parametrize("control", RAW, ids=lambda c: c["name"])
def test_each_control_gets_its_verdicts(control):
    inputs, outcome = control_case(control)
    found = scores(inputs, outcome)
    for name, verdict in control["expect"].items():
        value, reason = found.get(name, (None, None))
        assert value is VERDICTS[verdict], f"{name}: {verdict} expected, got {value}: {reason}"
    for name, words in (control.get("says") or {}).items():
        assert words in (found[name][1] or ""), f"{name}: {found[name][1]!r}"
    if control.get("bad"):
        assert any(v == "fail" for v in control["expect"].values()), "a bad ad fails a scorer"


def test_controls_are_named_once_and_bad_ads_are_many():
    names = [c["name"] for c in RAW]
    assert len(names) == len(set(names))
    assert sum(bool(c.get("bad")) for c in RAW) >= 22


def test_every_pass_fail_score_has_bad_and_good_controls():
    failed, passed = set(), set()
    for control in RAW:
        for name, verdict in control["expect"].items():
            (failed if verdict == "fail" else passed if verdict == "pass" else set()).add(name)
    inputs, outcome = control_case(RAW[0])
    everything = {
        c.__name__ for c in SCORERS if c.__name__ not in ("RunCost", "MusicUnderVoice")
    } | {"music_instrumental", "music_length"}
    assert everything <= failed, f"no bad ad for {sorted(everything - failed)}"
    assert everything <= passed, f"no good ad for {sorted(everything - passed)}"
    assert isinstance(inputs.brief, Brief) and outcome.language == "th"
