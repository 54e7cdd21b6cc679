"""check-model's options for ``--engine simulate``: --seed, --walks, --swarm.

The walk length is ``--max-depth`` (states, the initial one included; 100 when not
given) and ``--time-limit`` bounds the run; without a limit and without ``--walks``
a run takes 200,000 walks on the vector kernel (2,000 on the scalar one). The Hypothesis example database that keeps shrunk
counterexamples for the next run lives in ``--trace-dir``/hypothesis.
"""

from __future__ import annotations

import click

from .common import AsciiInt, refuse_options

NAMES = {"seed": "--seed", "walks": "--walks", "swarm": "--swarm"}
DATABASE = "hypothesis"  # under --trace-dir


def simulate_options(command):
    """The options, applied to a click command (in the order --help lists them)."""
    for option in reversed((
        click.option("--seed", type=AsciiInt(0, 2**63 - 1), default=None,
                     help="--engine simulate: the random seed; the same seed takes the same walks [default: 0]."),
        click.option("--walks", type=AsciiInt(1, 10**12), default=None,
                     help="--engine simulate: walks to take [default: 200,000 on the vector kernel, 2,000 on the "
                          "scalar one, or as many as --time-limit allows]."),
        click.option("--swarm/--no-swarm", default=None,
                     help="--engine simulate: each walk leaves out a random half of the action families "
                          "(swarm verification), to reach rarer interleavings [default: swarm]."),
    )):
        command = option(command)
    return command


def simulate_engine_args(params: dict, explicit: set[str]) -> dict:
    """The simulate engine's arguments; its options are a usage error with any other engine."""
    if params["engine"] != "simulate":
        refuse_options(explicit, NAMES, "simulate")
        return {}
    trace_dir = params.get("trace_dir")
    return {
        "seed": params.get("seed") or 0,
        "walks": params.get("walks"),
        "swarm": params.get("swarm") is not False,
        "database": trace_dir / DATABASE if trace_dir is not None else None,
    }
