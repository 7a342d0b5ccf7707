"""Golden sets: pydantic-evals datasets of ``CaseInput`` read from YAML, with every scorer
attached, and the hash that says which version of a set a run was scored against."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml
from pydantic import ValidationError
from pydantic_evals import Dataset

from evaluations.cases import AdOutcome, CaseInput, CaseMetadata
from evaluations.scorers import SCORERS

GoldenSet = Dataset[CaseInput, AdOutcome, CaseMetadata]


class InvalidGoldenSet(ValueError):
    """The file is missing, not YAML, or a case in it is not a valid case."""


def golden_set(path: str | Path) -> GoldenSet:
    """The set at ``path``, every case validated (``InvalidGoldenSet`` names the case and
    the field that is wrong), with the scorers of ``evaluations.scorers`` on every case."""
    path = Path(path)
    try:
        dataset = GoldenSet.from_file(path)
    except FileNotFoundError:
        raise InvalidGoldenSet(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise InvalidGoldenSet(f"{path}: not YAML: {exc}") from None
    except ValueError as exc:
        if isinstance(exc.__cause__, ValidationError):
            raise InvalidGoldenSet(_problems(path, exc.__cause__)) from None
        raise InvalidGoldenSet(f"{path}: {exc}") from None
    for scorer in SCORERS:
        dataset.add_evaluator(scorer())
    return dataset


def golden_set_hash(path: str | Path) -> str:
    """SHA-256 of the set's file as stored: two runs compare case by case only when equal."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _problems(path: Path, error: ValidationError) -> str:
    """Each error as ``case 'name': inputs.brief.field: message``."""
    cases = (yaml.safe_load(path.read_text()) or {}).get("cases") or []
    lines = []
    for problem in error.errors():
        where = list(problem["loc"])
        if len(where) >= 2 and where[0] == "cases" and isinstance(where[1], int):
            index = where[1]
            name = cases[index].get("name") if index < len(cases) else None
            case = f"case {name!r}" if name else f"case {index + 1}"
            where = [case + ":", ".".join(str(part) for part in where[2:])]
        else:
            where = [".".join(str(part) for part in where)]
        lines.append(f"{' '.join(where)}: {problem['msg']}")
    return f"{path}:\n  " + "\n  ".join(lines)
