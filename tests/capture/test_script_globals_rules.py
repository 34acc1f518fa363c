"""The rules that decide which module globals are config (``script_hook.module_bindings``) and
how a process's captures fold into one (``script_config.one_per_process``)."""

from __future__ import annotations

import textwrap
from typing import Any

from ledger.capture.script_config import (
    LEFT_OUT_CHANGED,
    describe_sources,
    one_per_process,
    script_overrides,
)
from ledger.capture.script_hook import module_bindings


def test_names_bound_in_loops_or_functions_are_state() -> None:
    source = textwrap.dedent(
        """
        import os
        from math import pi as PI
        lr = 0.1
        steps: int = 3
        with open(__file__) as f:
            text = f.read()
        try:
            size = 1
        except OSError as exc:
            size = 0
        if lr > 0:
            warm = True
            while warm:
                inner = 1
                warm = False
        for epoch in range(steps):
            loss = 1.0
            squares = [i * i for i in range(3)]
        def bump():
            global lr_scale
            lr_scale = 2
        lr_scale = 1
        class Model:
            width = 4
        """
    )
    once, state, star = module_bindings(source)
    assert {"os", "PI", "lr", "steps", "f", "text", "size", "exc", "bump", "Model"} <= once
    assert {"warm", "inner", "epoch", "loss", "squares", "lr_scale"} <= state
    assert not once & state and not star
    assert "i" not in once | state and "width" not in once | state  # other scopes
    assert module_bindings("from config import *\nx = 1\n")[2]


def _cap(when: str, values: dict[str, Any], pid: int = 7, argv: list[str] | None = None) -> Any:
    return {
        "when": when,
        "values": values,
        "typed": {},
        "left_out": {},
        "overrides": {},
        "argv": argv or [],
        "script": "train.py",
        "source": True,
        "rank": None,
        "pid": pid,
        "seq": 1 if when == "checkpoint" else 2,
        "time": 1.0 if when == "checkpoint" else 2.0,
    }


def test_values_changed_after_the_first_checkpoint_are_left_out() -> None:
    (one,) = one_per_process(
        [
            _cap("checkpoint", {"lr": 0.1, "best": 3.0}),
            _cap("exit", {"lr": 0.1, "best": 2.5, "late": 1}, argv=["--lr=0.1"]),
        ]
    )
    assert one["when"] == "exit" and one["values"] == {"lr": 0.1, "late": 1}
    assert one["left_out"] == {"best": LEFT_OUT_CHANGED}
    assert one["overrides"] == {"lr": "0.1"}


def test_overrides_are_the_arguments_the_program_took() -> None:
    values = {"lr": 0.5, "use_amp": True, "name": "run a", "layers": [1, 2], "steps": 10}
    argv = [
        "--lr",
        "0.5",
        "--use-amp=True",
        "--name=run a",
        "--layers=[1, 2]",
        "--steps=3",  # not what the program ended with: not taken
        "--other=1",  # no such global
    ]
    assert script_overrides(argv, values) == {
        "lr": "0.5",
        "use_amp": "True",
        "name": "run a",
        "layers": "[1, 2]",
    }
    assert script_overrides(["--use_amp=1"], {"use_amp": True}) == {}  # 1 is not True


def test_sources_name_each_parser_once_and_rank_zero_for_all_ranks() -> None:
    config = {
        "files": [{"path": "config/small.py", "format": "python"}],
        "script": [
            {**_cap("exit", {"lr": 0.1}, pid=p), "rank": r, "overrides": {"lr": "0.1"}}
            for p, r in ((10, 0), (11, 1), (12, 2))
        ],
        "argparse": [{"prog": "torchrun"}, *[{"prog": "train"}] * 3],
    }
    assert describe_sources(config) == [
        "config file config/small.py (python)",
        "script globals of train.py (at exit, rank 0 of 3 processes); overrides --lr=0.1",
        "argparse torchrun",
        "argparse train",
    ]
