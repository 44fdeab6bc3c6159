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
  ca_file:
    description:
      - CA certificate (PEM) of a client port that speaks TLS; the server's certificate must be
        signed by it and valid for O(host). Unset, the word goes in plain text.
    type: path
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
import ssl

from ansible.module_utils.basic import AnsibleModule


def ask(host, port, command, timeout, ca_file=None):
    """The server's answer; it closes the connection once it has answered. Over TLS the write
    side cannot be shut alone (that would end TLS), so the word is sent and the answer read
    until the server closes."""
    chunks = []
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock = ssl.create_default_context(cafile=ca_file).wrap_socket(raw, server_hostname=host) if ca_file else raw
        sock.sendall(command.encode("ascii"))
        if not ca_file:
            sock.shutdown(socket.SHUT_WR)
        while True:
            try:
                data = sock.recv(65536)
            except ssl.SSLEOFError:  # closed without close_notify, after the answer
                break
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
            ca_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not re.fullmatch(r"[a-z]{4}", params["command"]):
        module.fail_json(msg="zk_four_letter: command must be four lower-case letters, got %r" % params["command"])
    try:
        output = ask(params["host"], params["port"], params["command"], params["timeout"], params["ca_file"])
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
