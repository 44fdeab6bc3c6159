"""Run the project's playbooks through ansible-runner, with progress and a digest of failures.

`PlaybookRunner` is the seam: the CLI and the library take any object with its `run`
method, so tests can substitute a recording fake and need no Ansible.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from benchmarks.core import paths


@dataclasses.dataclass(frozen=True)
class TaskFailure:
    host: str
    task: str
    message: str
    unreachable: bool = False
    play: str = ""


@dataclasses.dataclass
class PlaybookResult:
    playbook: str
    rc: int
    status: str
    stats: dict[str, dict[str, int]]  # ok/changed/failures/... -> host -> count
    failures: list[TaskFailure]
    elapsed_s: float
    artifact_dir: str = ""
    outputs: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (host, stdout) of tasks that changed something

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "successful"

    def count(self, key: str) -> int:
        """Total of one recap column ("changed", "failures", "ok", ...) over all hosts."""
        return sum(self.stats.get(key, {}).values())


@dataclasses.dataclass(frozen=True)
class ProgressEvent:
    play: str
    task: str
    host: str
    status: str  # started | ok | changed | failed | skipped | unreachable
    play_number: int = 0  # plays begun so far: each batch of a play with `serial` begins it again
    play_id: str = ""  # the play's own id, the same for each of its batches (two plays of one name differ)


ProgressCallback = Callable[[ProgressEvent], None]


class PlaybookRunner(Protocol):
    def run(
        self,
        playbook: str,
        inventory: Path,
        extravars: Mapping[str, Any] | None = None,
        limit: str | None = None,
        check: bool = False,
        progress: ProgressCallback | None = None,
    ) -> PlaybookResult: ...


def _failure_message(result: Mapping[str, Any]) -> str:
    parts = [str(result.get("msg", "")).strip()]
    for key in ("stderr", "stdout"):
        text = str(result.get(key, "") or "").strip()
        if text and text not in parts[0]:
            parts.append(text[-2000:])
    for item in result.get("results", []) or []:
        if isinstance(item, Mapping) and item.get("failed"):
            parts.append(_failure_message(item))
    return "\n".join(p for p in parts if p) or "failed (no message)"


class AnsibleRunner:
    """Runs playbooks of this repository with ansible-runner, artifacts under .runner/.

    Every run gets a private data directory of its own: ansible-runner keeps the command
    line, extra vars and environment of a run in files there and silently reuses them for
    the next run of the same directory (a --check run would turn later runs into dry runs).
    """

    def __init__(self, artifact_root: Path | None = None, verbosity: int = 0, keep: int = 50) -> None:
        self.artifact_root = artifact_root or paths.RUNNER_DIR
        self.verbosity = verbosity
        self.keep = keep

    def _private_data_dir(self, playbook: str) -> Path:
        self.artifact_root.mkdir(parents=True, exist_ok=True)
        old = sorted(p for p in self.artifact_root.iterdir() if p.is_dir())
        for stale in old[: max(0, len(old) - self.keep + 1)]:
            shutil.rmtree(stale, ignore_errors=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        path = self.artifact_root / f"{stamp}-{Path(playbook).stem}-{uuid.uuid4().hex[:6]}"
        path.mkdir()
        return path

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
        import ansible_runner  # imported here: it is slow to import and unit tests need not

        private_data_dir = self._private_data_dir(playbook)
        failures: list[TaskFailure] = []
        outputs: list[tuple[str, str]] = []
        state: dict[str, Any] = {"play": "", "task": "", "plays": 0, "play_id": ""}

        def on_event(event: Mapping[str, Any]) -> bool:
            name = event.get("event", "")
            data = event.get("event_data", {}) or {}
            if name == "playbook_on_play_start":
                state["play"], state["plays"] = data.get("play", ""), state["plays"] + 1
                # Ansible names a serial play's later batches <uuid>_2, <uuid>_3, ...
                state["play_id"] = str(data.get("play_uuid", "")).split("_")[0]
            elif name == "playbook_on_task_start":
                state["task"] = data.get("task", "")
            elif name.startswith("runner_on_") or name.startswith("runner_item_on_"):
                host = data.get("host", "")
                res = data.get("res", {}) or {}
                if name in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
                    failures.append(TaskFailure(host, data.get("task", state["task"]), _failure_message(res),
                                                unreachable=name == "runner_on_unreachable", play=state["play"]))
                if name == "runner_on_ok" and res.get("changed") and res.get("stdout"):
                    outputs.append((host, str(res["stdout"])))
                status = {
                    "runner_on_ok": "changed" if res.get("changed") else "ok",
                    "runner_on_failed": "failed",
                    "runner_on_skipped": "skipped",
                    "runner_on_unreachable": "unreachable",
                    "runner_on_start": "started",
                }.get(name)
                if progress and status:
                    progress(ProgressEvent(state["play"], data.get("task", state["task"]), host, status, state["plays"],
                                           state["play_id"]))
            return True

        cmdline = []
        if check:
            cmdline.append("--check")
        env = dict(os.environ)
        env["ANSIBLE_CONFIG"] = str(paths.ANSIBLE_CFG)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["ANSIBLE_FORCE_COLOR"] = "0"
        started = time.monotonic()
        runner = ansible_runner.run(
            private_data_dir=str(private_data_dir),
            project_dir=str(paths.PROJECT_ROOT),
            playbook=str(paths.playbook(playbook)),
            inventory=str(Path(inventory).resolve()),
            extravars=dict(extravars or {}),
            limit=limit,
            cmdline=" ".join(cmdline) or None,
            envvars=env,
            event_handler=on_event,
            quiet=True,
            verbosity=self.verbosity,
        )
        stats = runner.stats or {}
        return PlaybookResult(
            playbook=playbook,
            rc=runner.rc,
            status=runner.status,
            stats={k: dict(v) for k, v in stats.items() if isinstance(v, dict)},
            failures=failures,
            elapsed_s=time.monotonic() - started,
            artifact_dir=str(runner.config.artifact_dir),
            outputs=outputs,
        )


def summarize_failures(failures: Sequence[TaskFailure]) -> str:
    lines = []
    for failure in failures:
        kind = "unreachable" if failure.unreachable else "failed"
        lines.append(f"{failure.host}: {kind} at '{failure.task}':")
        lines.extend("    " + line for line in failure.message.splitlines())
    return "\n".join(lines)
