"""`convoeval run --config FILE`, or a `[tool.convoeval.run]` table in ./pyproject.toml: the run
options read from TOML as click defaults (the command line wins), and `[[judges]]` tables that
give each panel member its own endpoint, key variable and options. A key that is not an option,
or a value of the wrong type, is a usage error naming the file and the key."""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

#: Where the run options are, in a pyproject.toml (and in any --config file that has the table).
TABLE = ("tool", "convoeval", "run")
_META = "convoeval.config"
_NOT_OPTIONS = ("spec", "_where", "api_key_env")
#: A `[[judges]]` table's keys and the TOML types each takes (aliases: judges/spec.py ALIASES).
MEMBER_KEYS: dict[str, tuple[type, ...]] = {
    "spec": (str,),
    "base_url": (str,),
    "api_key_env": (str,),
    "timeout": (int, float),
    "retry_budget": (int, float),
    "seed": (int,),
    "max_tokens": (int,),
    "reason_first": (bool,),
    "judge_samples": (int,),
    "samples": (int,),
    "concurrency": (int,),
    "max_concurrency": (int,),
    "cache": (bool,),
}
#: Options whose repeated `KEY=VALUE` strings a TOML table may give (`threshold = {m = 0.9}`).
_TABLES = {"thresholds": "METRIC = X", "fail_under": "METRIC = X", "field_paths": "NAME = PATH"}


def config_option(command: Any) -> Any:
    """Add `--config FILE` to `command`: read before the other options, as their defaults."""
    return click.option(
        "--config",
        type=click.Path(dir_okay=False, path_type=Path),
        is_eager=True,
        expose_value=False,
        callback=_load,
        metavar="FILE",
        help="Read the run options from this TOML file (keys: the long option names, e.g. "
        "concurrency = 8; [[judges]] tables for per-member judge settings); the command line "
        "wins. Default: the [tool.convoeval.run] table of ./pyproject.toml, if any.",
    )(command)


def _load(ctx: click.Context, param: click.Parameter, path: Path | None) -> None:
    """The eager `--config` callback: the file's options become the command's defaults."""
    table: dict[str, Any]
    if path is None:
        path = Path("pyproject.toml")
        if not path.is_file():
            return
        try:
            found_data = _read(path)
        except click.UsageError as exc:  # another tool's file: say so, and run without it
            click.echo(f"note: {exc.message}; its [tool.convoeval.run] table is not read", err=True)
            return
        table = _table(found_data, TABLE) or {}
        if not table:
            return
    else:
        data = _read(path)
        found = _table(data, TABLE)
        table = data if found is None else found
    defaults, members = _defaults(ctx, path, table)
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[_META] = (path, members)


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise click.UsageError(f"cannot read the config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise click.UsageError(f"{path} is not valid TOML: {exc}") from None


def _table(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any] | None:
    for key in keys:
        data = data.get(key)  # type: ignore[assignment]
        if not isinstance(data, dict):
            return None
    return data


def _defaults(
    ctx: click.Context, path: Path, table: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The click defaults of `table`'s keys, and its `[[judges]]` tables checked."""
    params = {
        opt.removeprefix("--").replace("-", "_"): p
        for p in ctx.command.params
        if isinstance(p, click.Option) and p.name != "config"
        for opt in p.opts
        if opt.startswith("--")
    }
    defaults: dict[str, Any] = {}
    members: list[dict[str, Any]] = []
    for raw, value in table.items():
        key = raw.replace("-", "_")
        if key == "judges":
            members = _members(path, value)
            continue
        if key == "api_key":
            raise click.UsageError(
                f"{path}: key {raw!r}: keep API keys out of files; name the environment "
                "variable that holds it (OPENAI_API_KEY, or api_key_env in a [[judges]] table)"
            )
        if key not in params:
            raise click.UsageError(f"{path}: unknown key {raw!r}{_near(key, [*params, 'judges'])}")
        option = params[key]
        assert option.name is not None
        defaults[option.name] = _value(ctx, path, raw, option, value)
    if members and "judge" in defaults:
        raise click.UsageError(
            f"{path}: give the judges as 'judge' or as [[judges]] tables, not both"
        )
    if members:
        defaults["judge"] = [member["spec"] for member in members]
    return defaults, members


def _value(ctx: click.Context, path: Path, raw: str, option: click.Option, value: Any) -> Any:
    """`value` as click takes it for `option`, checked by the option's own type."""
    where = f"{path}: key {raw!r}"
    if isinstance(value, dict) and option.multiple:
        value = _pairs(where, option, value)
    if option.multiple:
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise click.UsageError(f"{where} must be a list of strings{_table_hint(option)}")
    elif option.is_flag:
        if not isinstance(value, bool):
            raise click.UsageError(f"{where} must be true or false, not {value!r}")
    elif isinstance(value, bool) or not isinstance(value, _toml_types(option.type)):
        raise click.UsageError(f"{where} must be {_kind(option.type)}, not {value!r}")
    try:
        option.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise click.UsageError(f"{where}: {exc.message}") from None
    return value


def _pairs(where: str, option: click.Option, value: dict[str, Any]) -> list[str]:
    """A TOML table of a repeated `KEY=VALUE` option as its strings."""
    out = []
    for name, item in value.items():
        if option.name == "prices":
            ok = isinstance(item, list) and len(item) == 2
            ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in item)
            if not ok:
                raise click.UsageError(
                    f"{where}: {name!r} must be [INPUT, OUTPUT], two numbers (USD per million "
                    f"tokens), not {item!r}"
                )
            out.append(f"{name}={item[0]},{item[1]}")
        elif option.name in _TABLES and isinstance(item, str | int | float):
            if option.name != "field_paths" and not _number(item):
                raise click.UsageError(f"{where}: {name!r} must be a number, not {item!r}")
            out.append(f"{name}={item}")
        else:
            raise click.UsageError(f"{where} must be a list of strings, not a table")
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _table_hint(option: click.Option) -> str:
    if option.name == "prices":
        return ' or a table {"MODEL" = [INPUT, OUTPUT]}'
    return f" or a table {{{_TABLES[option.name]}}}" if option.name in _TABLES else ""


def _toml_types(kind: click.ParamType[Any]) -> tuple[type, ...]:
    if isinstance(kind, click.types.IntParamType):
        return (int,)
    if isinstance(kind, click.types.FloatParamType):
        return (int, float)
    return (str,)


def _kind(kind: click.ParamType[Any]) -> str:
    return {int: "a whole number", float: "a number"}.get(_toml_types(kind)[-1], "a string")


def _members(path: Path, value: Any) -> list[dict[str, Any]]:
    """The `[[judges]]` tables, each with a `spec` and only the keys of `MEMBER_KEYS`."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise click.UsageError(f"{path}: key 'judges' must be [[judges]] tables, each with a spec")
    for number, member in enumerate(value, 1):
        where = f"{path}: [[judges]] table {number}"
        for key, item in member.items():
            if key not in MEMBER_KEYS:
                hint = " (keep API keys out of files: api_key_env names the variable)"
                near = hint if key == "api_key" else _near(key, list(MEMBER_KEYS))
                raise click.UsageError(f"{where}: unknown key {key!r}{near}")
            kinds = MEMBER_KEYS[key]
            if (isinstance(item, bool) and bool not in kinds) or not isinstance(item, kinds):
                want = " or ".join(k.__name__ for k in kinds)
                raise click.UsageError(f"{where}: key {key!r} must be {want}, not {item!r}")
        if "spec" not in member:
            raise click.UsageError(f'{where} has no spec (e.g. spec = "openai/gpt-4o-mini")')
    return [dict(m, _where=f"{path}: [[judges]] table {n}") for n, m in enumerate(value, 1)]


def _near(key: str, known: list[str]) -> str:
    near = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def judge_specs(judge: tuple[str, ...], shared: dict[str, Any]) -> list[Any]:
    """The judges of `run`: the `--judge` specs, or (when the command line names none) the
    config's `[[judges]]` members built with their own options on top of `shared` (the run-wide
    ones); a member option that differs from its run-wide twin is a `UsageError` naming both."""
    from convoeval.errors import UsageError
    from convoeval.judges import resolve_judge
    from convoeval.judges.spec import documented

    ctx = click.get_current_context()
    _, members = ctx.meta.get(_META, (None, []))
    if not members or ctx.get_parameter_source("judge") is ParameterSource.COMMANDLINE:
        return list(judge)
    built = []
    for member in members:
        own = documented({k: v for k, v in member.items() if k not in _NOT_OPTIONS})
        where = f"{member['_where']} ({member['spec']})"
        _, at, url = member["spec"].partition("#")[0].partition("@http")
        if at and own.get("base_url") not in (None, "http" + url):
            raise UsageError(
                f"{where} names its endpoint in its spec, and its base_url {own['base_url']!r} "
                "names another: give one"
            )
        if "api_key_env" in member:
            key = os.environ.get(member["api_key_env"])
            if not key:
                raise UsageError(
                    f"{where} takes its key from the environment variable "
                    f"{member['api_key_env']!r}, which is not set"
                )
            own["api_key"] = key
        options = {k: v for k, v in shared.items() if v is not None}
        for name, value in own.items():
            twin = "api_key_env" if name == "api_key" else name
            if options.get(name) not in (None, value):
                said = "" if name == "api_key" else f" {options[name]!r}"
                raise UsageError(
                    f"{where} sets {twin}, and the run-wide --{name.replace('_', '-')}{said} "
                    "says otherwise: give one"
                )
            options[name] = value
        built.append(resolve_judge(member["spec"], **options))
    return built
