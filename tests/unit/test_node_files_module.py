"""The kafka_bench.cluster.node_files module, run as Ansible runs it (a Python process given its
arguments): it writes what differs and only that, reports the checksums a template task reports,
and keeps check mode and diff mode. On real nodes it writes every deploy's configuration."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

MODULE = ROOT / "collections" / "ansible_collections" / "kafka_bench" / "cluster" / "plugins" / "modules" / "node_files.py"


def run(tmp_path: Path, files: list[dict[str, Any]], check: bool = False, diff: bool = False,
        directories: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"files": files, "directories": directories or [],
                                                        "_ansible_check_mode": check, "_ansible_diff": diff}}))
    done = subprocess.run([sys.executable, str(MODULE), str(args)], capture_output=True, text=True, timeout=60)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def test_it_writes_new_files_with_their_mode_and_reports_template_checksums(tmp_path):
    props, script = tmp_path / "server.properties", tmp_path / "kafka-tool"
    result = run(tmp_path, [{"path": str(props), "content": "broker.id=0\n", "mode": "0640"},
                            {"path": str(script), "content": "#!/bin/sh\n", "mode": "0755"}])
    assert result["changed"] is True
    assert props.read_text() == "broker.id=0\n" and script.read_text() == "#!/bin/sh\n"
    assert oct(props.stat().st_mode & 0o777) == "0o640" and oct(script.stat().st_mode & 0o777) == "0o755"
    assert result["checksums"] == [sha1("broker.id=0\n"), sha1("#!/bin/sh\n")]
    assert [f["changed"] for f in result["files"]] == [True, True]


def test_a_second_run_changes_nothing_and_touches_no_file(tmp_path):
    path = tmp_path / "applied-config"
    files = [{"path": str(path), "content": "a b c\n", "mode": "0644"}]
    run(tmp_path, files)
    inode = path.stat().st_ino
    result = run(tmp_path, files)
    assert result["changed"] is False and path.stat().st_ino == inode
    assert result["checksums"] == [sha1("a b c\n")]


def test_only_the_file_that_differs_changes(tmp_path):
    same, other = tmp_path / "kafka-release", tmp_path / "migration-phase"
    run(tmp_path, [{"path": str(same), "content": "3.9.2\n"}, {"path": str(other), "content": "controllers\n"}])
    result = run(tmp_path, [{"path": str(same), "content": "3.9.2\n"}, {"path": str(other), "content": "migrated\n"}])
    assert [f["changed"] for f in result["files"]] == [False, True]
    assert other.read_text() == "migrated\n"


def test_a_mode_alone_that_differs_is_a_change(tmp_path):
    path = tmp_path / "server.properties"
    run(tmp_path, [{"path": str(path), "content": "x=1\n", "mode": "0644"}])
    result = run(tmp_path, [{"path": str(path), "content": "x=1\n", "mode": "0640"}])
    assert result["changed"] is True and oct(path.stat().st_mode & 0o777) == "0o640"


def test_check_mode_writes_nothing_and_diff_mode_shows_before_and_after(tmp_path):
    path, new = tmp_path / "server.properties", tmp_path / "log4j.properties"
    path.write_text("num.io.threads=8\n")
    os.chmod(path, 0o644)
    result = run(tmp_path, [{"path": str(path), "content": "num.io.threads=9\n", "mode": "0644"},
                            {"path": str(new), "content": "log4j.rootLogger=INFO\n", "mode": "0644"}],
                 check=True, diff=True)
    assert result["changed"] is True
    assert path.read_text() == "num.io.threads=8\n" and not new.exists()
    assert result["diff"] == [
        {"before_header": str(path), "after_header": str(path), "before": "num.io.threads=8\n",
         "after": "num.io.threads=9\n"},
        {"before_header": str(new), "after_header": str(new), "before": "", "after": "log4j.rootLogger=INFO\n"}]


def test_a_missing_directory_fails_naming_the_file(tmp_path):
    path = tmp_path / "absent" / "server.properties"
    result = run(tmp_path, [{"path": str(path), "content": "x=1\n"}])
    assert result["failed"] is True and str(path) in result["msg"]


def test_directories_are_created_with_their_parents_before_the_files_and_then_left_alone(tmp_path):
    run_dir, script = tmp_path / "state" / "broker0" / "run", tmp_path / "state" / "broker0" / "ctl"
    # The same directory twice (a pid file and a console log in one directory): created once.
    directories = [{"path": str(run_dir), "mode": "0750"}, {"path": str(run_dir), "mode": "0750"}]
    files = [{"path": str(script), "content": "#!/bin/sh\n", "mode": "0755"}]
    assert run(tmp_path, files, directories=directories)["changed"] is True
    assert run(tmp_path, files, directories=directories)["changed"] is False
    assert run_dir.is_dir() and oct(run_dir.stat().st_mode & 0o777) == "0o750"
    assert oct(run_dir.parent.stat().st_mode & 0o777) == "0o750" and script.read_text() == "#!/bin/sh\n"


def test_an_existing_directory_gets_the_mode_asked_for_and_check_mode_creates_nothing(tmp_path):
    data, missing = tmp_path / "data", tmp_path / "new" / "data"
    data.mkdir(mode=0o755)
    result = run(tmp_path, [], directories=[{"path": str(data), "mode": "0750"}, {"path": str(missing)}], check=True)
    assert result["changed"] is True and not missing.parent.exists()
    assert oct(data.stat().st_mode & 0o777) == "0o755"
    assert run(tmp_path, [], directories=[{"path": str(data), "mode": "0750"}])["changed"] is True
    assert oct(data.stat().st_mode & 0o777) == "0o750"


def test_an_empty_path_is_refused_before_anything_is_written(tmp_path):
    written = tmp_path / "kafka-release"
    result = run(tmp_path, [{"path": str(written), "content": "3.9.2\n"}], directories=[{"path": ""}])
    assert result["failed"] is True and "a directory's path is empty" in result["msg"]
    assert not written.exists()
