#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Make a directory hold exactly a pinned list of jars from a Maven repository."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: maven_artifacts
short_description: Install a pinned list of jars from a Maven repository
description:
  - Makes O(dest) hold exactly the jars in O(artifacts), each verified by SHA-256, fetched
    from O(repository_url) (Maven Central or a mirror; http, https or file).
  - No Maven is needed on the target. Jars are written atomically; a file lock lets several
    service instances on one host share O(dest) safely.
  - Jars found in O(cache_dir) with the right digest are copied instead of downloaded, and
    downloads are stored there.
  - Idempotent; supports check mode.
options:
  repository_url:
    description: Base URL of the Maven repository layout.
    type: str
    default: https://repo1.maven.org/maven2
  artifacts:
    description: >-
      List of dicts with keys C(group), C(artifact), C(version), C(sha256) and optionally
      C(classifier).
    type: list
    elements: dict
    required: true
  dest:
    description: Directory that receives the jars.
    type: path
    required: true
  cache_dir:
    description: Optional directory of previously downloaded jars; empty for none.
    type: path
    default: ""
  prune:
    description: Remove C(*.jar) files in O(dest) that are not in O(artifacts).
    type: bool
    default: true
  timeout:
    description: Network timeout in seconds for each jar.
    type: int
    default: 60
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Install the Kafka jars
  kafka_bench.cluster.maven_artifacts:
    artifacts:
      - {group: org.apache.kafka, artifact: kafka-clients, version: "3.9.2", sha256: "..."}
    dest: /opt/kafka/kafka_2.13-3.9.2/libs
"""

RETURN = r"""
installed:
  description: File names written (or that would be written in check mode).
  returned: always
  type: list
  elements: str
removed:
  description: File names pruned.
  returned: always
  type: list
  elements: str
"""

import fcntl
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafka_bench.cluster.plugins.module_utils.download import (
    ChecksumError,
    copy_verified,
    fetch_verified,
    file_digest,
)

REQUIRED_KEYS = ("group", "artifact", "version", "sha256")


def jar_name(spec):
    classifier = "-%s" % spec["classifier"] if spec.get("classifier") else ""
    return "%s-%s%s.jar" % (spec["artifact"], spec["version"], classifier)


def jar_url(base, spec):
    return "%s/%s/%s/%s/%s" % (base.rstrip("/"), spec["group"].replace(".", "/"), spec["artifact"],
                               spec["version"], jar_name(spec))


def validate(artifacts):
    problems = []
    for index, spec in enumerate(artifacts):
        missing = [key for key in REQUIRED_KEYS if not spec.get(key)]
        if missing:
            problems.append("artifacts[%d] lacks %s" % (index, ", ".join(missing)))
        elif not re.fullmatch(r"[0-9a-f]{64}", str(spec["sha256"]).lower()):
            problems.append("artifacts[%d] (%s) has a sha256 that is not 64 hex digits" % (index, jar_name(spec)))
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repository_url=dict(type="str", default="https://repo1.maven.org/maven2"),
            artifacts=dict(type="list", elements="dict", required=True),
            dest=dict(type="path", required=True),
            cache_dir=dict(type="path", default=""),
            prune=dict(type="bool", default=True),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    dest, cache_dir, artifacts = params["dest"], params["cache_dir"], params["artifacts"]
    problems = validate(artifacts)
    if problems:
        module.fail_json(msg="maven_artifacts: " + "; ".join(problems))

    wanted = {jar_name(spec): spec for spec in artifacts}
    result = dict(changed=False, installed=[], removed=[], dest=dest)

    def stale():
        todo = []
        for name, spec in sorted(wanted.items()):
            path = os.path.join(dest, name)
            if not (os.path.isfile(path) and file_digest(path, "sha256") == spec["sha256"].lower()):
                todo.append(name)
        extra = []
        if params["prune"] and os.path.isdir(dest):
            extra = sorted(f for f in os.listdir(dest) if f.endswith(".jar") and f not in wanted)
        return todo, extra

    todo, extra = stale()
    if not todo and not extra:
        module.exit_json(**result)
    if module.check_mode:
        module.exit_json(changed=True, installed=todo, removed=extra, dest=dest)

    for directory in filter(None, (dest, cache_dir)):
        os.makedirs(directory, 0o755, exist_ok=True)  # hosts of one machine may install the same home at once
    with open(os.path.join(dest, ".maven_artifacts.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        todo, extra = stale()  # another instance may have done the work while we waited
        for name in todo:
            spec = wanted[name]
            expected = spec["sha256"].lower()
            target = os.path.join(dest, name)
            cached = os.path.join(cache_dir, name) if cache_dir else ""
            if not (cached and copy_verified(cached, target, "sha256", expected)):
                url = jar_url(params["repository_url"], spec)
                try:
                    fetch_verified(url, target, "sha256", expected, params["timeout"])
                except ChecksumError as exc:
                    module.fail_json(msg="maven_artifacts: checksum mismatch, jar discarded: %s" % exc, **result)
                except Exception as exc:
                    module.fail_json(msg="maven_artifacts: cannot fetch %s: %s" % (url, exc), **result)
                if cached:
                    copy_verified(target, cached, "sha256", expected)
            result["installed"].append(name)
        for name in extra:
            os.unlink(os.path.join(dest, name))
            result["removed"].append(name)
    result["changed"] = bool(result["installed"] or result["removed"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
