"""Reading the simulator's scenarios: a JSONL, JSON, CSV or Parquet file (or Python objects) of
`Scenario` records, each checked before anything is sent, every problem as `FILE:LINE: field:
what is wrong`, duplicate ids included (a scenario's id names its conversations).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from convoeval.io._convert import kind as json_kind
from convoeval.io.errors import DataError, DataFileError
from convoeval.io.readers import read_objects
from convoeval.io.strict_json import problems_of
from convoeval.schema.errors import describe_errors
from convoeval.schema.scenario import Scenario

#: The problem of a scenario file that holds no record.
NO_SCENARIOS = "no records: the file holds no scenario (nothing to simulate)"


@dataclass(frozen=True)
class PlacedScenario:
    """A scenario, where it was read (`file:line`, or `scenarios[i]` for Python objects) and the
    id its conversations carry (its own, else `scenario-N` by position from 1)."""

    scenario: Scenario
    where: str
    id: str


def read_scenarios(path: str | os.PathLike[str]) -> list[PlacedScenario]:
    """Every scenario of a file; `DataError` listing every bad record (nothing is simulated)."""
    found = list(read_objects(path))
    if not found:
        raise DataFileError(os.fspath(path), NO_SCENARIOS)
    return _checked(found)


def scenarios_from(items: Iterable[Any]) -> list[PlacedScenario]:
    """Scenarios given in Python: `Scenario` objects or dicts of its fields; `DataError` listing
    every bad one by position."""
    found: list[tuple[str, Any, list[str]]] = []
    for index, item in enumerate(items):
        where = f"scenarios[{index}]"
        if isinstance(item, Scenario):
            found.append((where, item, []))
        else:
            found.append((where, item, problems_of(item) if isinstance(item, Mapping) else []))
    if not found:
        raise DataError(["scenarios: the list is empty (nothing to simulate)"])
    return _checked(found)


def _checked(found: list[tuple[str, Any, list[str]]]) -> list[PlacedScenario]:
    """The valid scenarios with their ids, or `DataError` with every problem of every record."""
    problems: list[str] = []
    placed: list[PlacedScenario] = []
    first_at: dict[str, str] = {}
    for position, (where, data, errors) in enumerate(found, start=1):
        scenario, errors = _scenario(data, errors)
        if scenario is None:
            problems.extend(f"{where}: {error}" for error in errors)
            continue
        name = scenario.id if scenario.id is not None else f"scenario-{position}"
        if name in first_at:
            problems.append(
                f"{where}: id: {name!r} is already the id of the scenario at {first_at[name]} "
                "(each scenario needs its own id: it names its conversations)"
            )
            continue
        first_at[name] = where
        placed.append(PlacedScenario(scenario, where, name))
    if problems:
        raise DataError(problems)
    return placed


def _scenario(data: Any, errors: list[str]) -> tuple[Scenario | None, list[str]]:
    if errors:
        return None, errors
    if isinstance(data, Scenario):
        return data, []
    if not isinstance(data, Mapping):
        return None, [f"a scenario must be a JSON object, got {json_kind(data)}"]
    try:
        return Scenario.model_validate(dict(data)), []
    except ValidationError as exc:
        return None, describe_errors(exc)
