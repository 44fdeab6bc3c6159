#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Send a ZooKeeper four-letter word and return the answer."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: zk_four_letter
short_description: Ask a ZooKeeper server a four-letter word
description:
  - Connects to a ZooKeeper server, sends O(command) and returns its answer. For C(srvr) and
    C(stat) it also returns the server's mode (standalone, leader, follower, observer).
  - The command must be in the server's C(4lw.commands.whitelist).
  - Never changes anything; supports check mode.
options:
  host:
    description: Address of the server.
    type: str
    default: 127.0.0.1
  port:
    description: Client port of the server.
    type: int
    default: 2181
  command:
    description: The four-letter word.
    type: str
    default: srvr
  timeout:
    description: Socket timeout in seconds.
    type: float
    default: 5
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Wait until ZooKeeper serves requests
  kafka_bench.cluster.zk_four_letter:
    port: 2181
  register: zk
  until: zk.mode != ""
  retries: 30
  delay: 1
"""

RETURN = r"""
output:
  description: The server's answer.
  returned: always
  type: str
mode:
  description: Server mode from C(srvr)/C(stat), empty when unknown or the server is not serving.
  returned: always
  type: str
"""

import re
import socket

from ansible.module_utils.basic import AnsibleModule


def ask(host, port, command, timeout):
    chunks = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        sock.shutdown(socket.SHUT_WR)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", default=2181),
            command=dict(type="str", default="srvr"),
            timeout=dict(type="float", default=5),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not re.fullmatch(r"[a-z]{4}", params["command"]):
        module.fail_json(msg="zk_four_letter: command must be four lower-case letters, got %r" % params["command"])
    try:
        output = ask(params["host"], params["port"], params["command"], params["timeout"])
    except OSError as exc:
        module.fail_json(msg="zk_four_letter: %s:%s did not answer %s: %s"
                             % (params["host"], params["port"], params["command"], exc), output="", mode="")
    if "is not executed because it is not in the whitelist" in output:
        module.fail_json(msg="zk_four_letter: %s is not in 4lw.commands.whitelist of %s:%s"
                             % (params["command"], params["host"], params["port"]), output=output, mode="")
    match = re.search(r"^Mode: (\S+)", output, re.M)
    module.exit_json(changed=False, output=output, mode=match.group(1) if match else "")


if __name__ == "__main__":
    main()
