"""Builds a real MLflow store with MLflow's own client (run as a script, in a child process, so
MLflow's global state and warnings stay out of the test process).

    python _mlflow_lab.py TRACKING_URI WORKDIR  ->  prints {name: mlflow run id} as JSON
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

T0 = 1_790_000_000_000  # ms: fixed times, so the ledger run ids are known
LOSS = [2.5, 1.25, 0.75, 0.5, 0.375]


def build(uri: str, work: Path) -> dict[str, str]:
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    # Artifacts inside the store's folder (the mlruns folder, or the database's): the only
    # place ``ledger import mlflow`` reads a local store's artifacts from.
    art = Path(uri.removeprefix("file://")) if uri.startswith("file:") else work
    exp_a = client.create_experiment("exp-a", artifact_location=(art / "art-a").as_uri())
    exp_b = client.create_experiment("exp-b", artifact_location=(art / "art-b").as_uri())
    ids: dict[str, str] = {}

    def run(exp: str, name: str, start: int) -> str:
        r = client.create_run(exp, start_time=start, run_name=name)
        ids[name] = r.info.run_id
        return str(r.info.run_id)

    base = run(exp_a, "baseline", T0)
    client.log_batch(
        base,
        metrics=[Metric("loss", v, T0 + 1000 * (i + 1), i * 10) for i, v in enumerate(LOSS)]
        + [Metric("accuracy", 0.5, T0 + 1500, 0), Metric("accuracy", 0.75, T0 + 4500, 40)],
        params=[
            Param("lr", "0.01"),
            Param("model.depth", "3"),
            Param("optimizer", "adam"),
            Param("use_amp", "True"),
            Param("api_token", "hunter2-not-for-sharing"),
        ],
        tags=[
            RunTag("team", "vision"),
            RunTag("mlflow.source.git.commit", "0123456789abcdef0123456789abcdef01234567"),
        ],
    )
    (work / "model").mkdir(parents=True, exist_ok=True)
    (work / "model" / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (work / "notes.txt").write_text("baseline run\n")
    client.log_artifact(base, str(work / "notes.txt"))
    client.log_artifacts(base, str(work / "model"), artifact_path="model")
    client.set_terminated(base, "FINISHED", end_time=T0 + 6000)

    crashed = run(exp_a, "crashed", T0 + 60_000)
    client.log_param(crashed, "lr", "0.1")
    for i, v in enumerate([3.0, float("nan")]):
        client.log_metric(crashed, "loss", v, timestamp=T0 + 61_000 + i, step=i)
    client.set_terminated(crashed, "FAILED", end_time=T0 + 62_000)

    stopped = run(exp_a, "stopped", T0 + 120_000)
    client.log_param(stopped, "lr", "0.001")
    client.log_metric(stopped, "loss", 2.0, timestamp=T0 + 121_000, step=0)
    client.set_terminated(stopped, "KILLED", end_time=T0 + 125_000)

    deleted = run(exp_a, "deleted", T0 + 180_000)
    client.set_terminated(deleted, "FINISHED", end_time=T0 + 181_000)
    client.delete_run(deleted)

    live = run(exp_b, "live", T0 + 240_000)  # never terminated: RUNNING
    client.log_metric(live, "loss", 9.0, timestamp=T0 + 241_000, step=0)

    # a run from a machine whose clock is a day ahead
    exp_c = client.create_experiment("exp-future", artifact_location=(art / "art-c").as_uri())
    ahead = int(time.time() * 1000) + 86_400_000
    future = run(exp_c, "future", ahead)
    client.set_terminated(future, "FINISHED", end_time=ahead + 1000)
    return ids


if __name__ == "__main__":
    print(json.dumps(build(sys.argv[1], Path(sys.argv[2]))))
