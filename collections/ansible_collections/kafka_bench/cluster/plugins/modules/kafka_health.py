#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Wait until a Kafka node is healthy, asking Kafka's protocol (no JVM)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_health
short_description: Wait until a Kafka broker or KRaft controller is healthy
description:
  - Asks the node's own listeners, in Kafka's protocol, without starting a JVM.
  - A controller (KRaft) is healthy when DescribeQuorum on O(controller) has a leader and the node
    is one of its voters or observers.
  - A broker is healthy when the Metadata O(broker) answers lists the node at that address
    (KRaft - registered and unfenced; ZooKeeper mode - registered, and the controller has told
    the broker so) and no partition of the cluster has fewer in-sync replicas than replicas.
  - Asks again each O(interval) seconds until the node is healthy or O(timeout) seconds have
    passed. With O(ctl), the node's control script, it fails at once when the node's process has
    stopped.
  - Speaks plain text, TLS (the broker's certificate checked against O(client.ssl.ca.location))
    and SASL PLAIN or SCRAM over either; not TLS client certificates.
  - With O(restart), restarts the node first through O(ctl); else never changes anything.
    Supports check mode (a restart is then only reported).
options:
  mode:
    description: The cluster's metadata mode.
    type: str
    choices: [zookeeper, kraft]
    required: true
  node_id:
    description: The node's broker id (ZooKeeper mode) or node id (KRaft).
    type: int
    required: true
  broker:
    description: The node's broker listener, C(host:port) as it advertises it; empty when the node is no broker.
    type: str
    default: ""
  controller:
    description: The node's controller listener, C(host:port); empty when the node is no KRaft controller.
    type: str
    default: ""
  quorum:
    description:
      - Every KRaft controller's listener, C(host:port). Only the quorum's leader answers
        DescribeQuorum - when O(controller) is not the leader, the others are asked in turn.
    type: list
    elements: str
    default: []
  client:
    description:
      - Security settings on the broker listener, as librdkafka names them - C(security.protocol),
        C(ssl.ca.location), C(sasl.mechanism), C(sasl.username), C(sasl.password). Empty - plain text.
    type: dict
    default: {}
  controller_client:
    description: The same for the controller listener.
    type: dict
    default: {}
  timeout:
    description: Seconds to wait for the node to be healthy; 0 asks once.
    type: float
    default: 0
  interval:
    description: Seconds between two checks.
    type: float
    default: 1
  request_timeout:
    description: Seconds to wait for one answer.
    type: float
    default: 5
  ctl:
    description: The node's control script; its C(status) exit code 3 means the process stopped.
    type: path
  logs:
    description: Log files of the node whose last O(log_lines) lines a failure shows.
    type: list
    elements: path
    default: []
  log_lines:
    description: How many lines of each of O(logs) a failure shows.
    type: int
    default: 60
  restart:
    description:
      - Restart the node first (O(ctl) C(restart --no-wait)), then wait. One task restarts and waits,
        so a C(throttle) of 1 restarts a group of nodes one at a time, each healthy before the next goes down.
    type: bool
    default: false
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Restart broker 1 and wait until it is registered and nothing is under-replicated
  kafka_bench.cluster.kafka_health:
    mode: zookeeper
    node_id: 1
    broker: 127.0.0.1:9093
    timeout: 300
    ctl: /opt/kafka-bench/broker1/bin/kafka-service
    restart: true
"""

RETURN = r"""
healthy:
  description: Whether the node was found healthy.
  returned: always
  type: bool
problems:
  description: What kept the node from being healthy at the last check; empty when healthy.
  returned: always
  type: list
  elements: str
checks:
  description: How many times the node was checked.
  returned: always
  type: int
waited_s:
  description: Seconds from the first check to the last.
  returned: always
  type: float
restart_s:
  description: Seconds the restart took (stop, then start until the process ran); 0 without O(restart).
  returned: always
  type: float
history:
  description: What kept the node from being healthy, each kind of problem once (C(kind) - unreachable,
    no-leader, not-in-quorum, not-registered, other-address, under-replicated), with what it said
    (C(problem)) and the seconds since the first check (C(at_s)) when it was first seen.
  returned: always
  type: list
  elements: dict
"""

import os
import time
from collections import deque

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafka_bench.cluster.plugins.module_utils.kafka_health import node_problems

STOPPED = 3  # the control script's `status` exit code for a stopped process


def log_tail(paths, lines):
    """The last `lines` lines of each file, under its name, as `tail -n` prints several."""
    out = []
    for path in paths:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                out.append(f"==> {path} <==\n" + "".join(deque(handle, maxlen=lines)).rstrip())
    return "\n".join(out)


def fail(module, message, **result):
    """Fail with `message`, the log tails under it."""
    tail = log_tail(module.params["logs"], module.params["log_lines"])
    module.fail_json(msg=message + (f"\n{tail}" if tail else ""), **result)


def main():
    client_spec = {"type": "dict", "default": {}, "no_log": True}
    module = AnsibleModule(
        argument_spec={
            "mode": {"type": "str", "required": True, "choices": ["zookeeper", "kraft"]},
            "node_id": {"type": "int", "required": True},
            "broker": {"type": "str", "default": ""},
            "controller": {"type": "str", "default": ""},
            "quorum": {"type": "list", "elements": "str", "default": []},
            "client": dict(client_spec),
            "controller_client": dict(client_spec),
            "timeout": {"type": "float", "default": 0},
            "interval": {"type": "float", "default": 1},
            "request_timeout": {"type": "float", "default": 5},
            "ctl": {"type": "path"},
            "logs": {"type": "list", "elements": "path", "default": []},
            "log_lines": {"type": "int", "default": 60},
            "restart": {"type": "bool", "default": False},
        },
        required_if=[("restart", True, ("ctl",))],
        supports_check_mode=True,
    )
    p = module.params
    result = {"changed": False, "healthy": False, "problems": [], "checks": 0, "waited_s": 0.0, "history": [],
              "restart_s": 0.0}
    if p["restart"]:
        if module.check_mode:
            module.exit_json(**dict(result, changed=True))
        begun = time.monotonic()
        rc, out, err = module.run_command([p["ctl"], "restart", "--no-wait"])
        result.update(restart_s=round(time.monotonic() - begun, 3), changed=True)
        if rc != 0:
            fail(module, f"the node did not restart: {(out + err).strip()}", rc=rc, **result)
    started = time.monotonic()
    while True:
        found = node_problems(p["mode"], p["node_id"], p["broker"], p["controller"], p["request_timeout"],
                              {k: str(v) for k, v in p["client"].items()},
                              {k: str(v) for k, v in p["controller_client"].items()}, quorum=p["quorum"])
        waited = round(time.monotonic() - started, 3)
        for problem in found:
            if problem.kind not in (h["kind"] for h in result["history"]):
                result["history"].append({"kind": problem.kind, "problem": problem.text, "at_s": waited})
        problems = [problem.text for problem in found]
        result.update(healthy=not problems, problems=problems, checks=result["checks"] + 1, waited_s=waited)
        if not problems:
            module.exit_json(**result)
        if p["ctl"]:
            rc, out, _err = module.run_command([p["ctl"], "status"])
            if rc == STOPPED:
                fail(module, f"the node's process stopped while it was waited for: {out.strip()}; "
                             f"last check: {'; '.join(problems)}", **result)
        if waited + p["interval"] > p["timeout"]:
            fail(module, f"{'restarted, but ' if result['changed'] else ''}not healthy after {waited:.0f} s: "
                         f"{'; '.join(problems)}", **result)
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
