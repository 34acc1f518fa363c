"""Render the pages: Jinja2 templates with autoescape on, shared by ``ledger ui`` and
``ledger report``. Every value from the ledger reaches HTML through the template's escaping
(or ``svg.py``'s); nothing is marked safe that came from a record."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import jinja2

from .data import AXES, SAFE_ID

__all__ = ["STATIC_FILES", "render", "static_file"]

STATIC_FILES = ("ui.css", "ui.js")


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, sort_keys=True)


def _duration(seconds: Any) -> str:
    """``35.3799`` seconds as people read them: ``35 s``, ``4 min 05 s``, ``2 h 03 min``."""
    from .._units import human_seconds

    return "" if seconds is None else human_seconds(seconds)


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ledger.ui", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.ChainableUndefined,  # a field an older record lacks shows empty
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["fmt"] = _fmt
    env.globals["duration"] = _duration
    env.tests["safe_id"] = lambda v: isinstance(v, str) and bool(SAFE_ID.match(v))
    return env


def render(template: str, *, root: str, live: bool, curves_href: str, **context: Any) -> str:
    base: dict[str, Any] = {
        "root": root,
        "live": live,
        "curves_href": curves_href,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "warnings": [],
        "axes": AXES,
    }
    return _env().get_template(template).render(**(base | context))


def static_file(name: str) -> bytes:
    from importlib.resources import files

    if name not in STATIC_FILES:
        raise KeyError(name)
    return files("ledger.ui").joinpath("static", name).read_bytes()


Href = Callable[..., str]
