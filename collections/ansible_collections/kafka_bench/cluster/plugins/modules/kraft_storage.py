#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Read a Kafka node's storage identity (meta.properties), the ZooKeeper-to-KRaft migration phase,
the Kafka release and the configuration recorded on it, and propose fresh ids."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kraft_storage
short_description: Read the identity of a Kafka node's storage
description:
  - Reads O(path) (a C(meta.properties) written by C(kafka-storage format), or by a ZooKeeper-mode
    broker at its first start) and returns the cluster id, node id and directory id it holds, or
    empty strings when the storage is not formatted yet. A ZooKeeper-mode broker's file (version 0)
    names its C(broker.id), returned as the node id (the id it keeps in KRaft).
  - Reads O(migration_phase_path) when given and present, the ZooKeeper-to-KRaft migration phase
    C(playbooks/migrate-to-kraft.yml) recorded on the node.
  - Reads O(release_path) when given and present, the Kafka release the node was last started on
    (written by the kafka role when it starts or restarts the node; C(playbooks/upgrade.yml) reads it).
  - Reads O(applied_path) when given and present, the checksums of the configuration the node was
    last started with (written by the kafka role beside the release).
  - Also returns a fresh cluster id and directory id, generated the way Kafka's
    C(Uuid.randomUuid()) does (16 random bytes, URL-safe base64 without padding, never starting
    with C(-)), for a cluster or a controller formatted for the first time.
  - Never changes anything; supports check mode.
options:
  path:
    description: The meta.properties file of the node's metadata log directory.
    type: path
    required: true
  migration_phase_path:
    description: The file holding the node's migration phase (one word); none when absent.
    type: path
    required: false
  release_path:
    description: The file holding the Kafka release the node was last started on (one word); none when absent.
    type: path
    required: false
  applied_path:
    description: The file holding the checksums of the configuration the node was last started with; none when absent.
    type: path
    required: false
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Read the node's storage identity
  kafka_bench.cluster.kraft_storage:
    path: /var/lib/kafka/data/meta.properties
  register: storage
"""

RETURN = r"""
formatted:
  description: Whether the file exists.
  returned: always
  type: bool
cluster_id:
  description: The cluster id of the formatted storage, empty when not formatted.
  returned: always
  type: str
node_id:
  description: The node id of the formatted storage, empty when not formatted.
  returned: always
  type: str
directory_id:
  description: The directory id of the formatted storage, empty when not formatted.
  returned: always
  type: str
version:
  description: The meta.properties version (0 for a ZooKeeper-mode broker, 1 for KRaft), empty when not formatted.
  returned: always
  type: str
migration_phase:
  description: The migration phase recorded on the node, C(none) when nothing is recorded.
  returned: always
  type: str
release:
  description: The Kafka release recorded on the node (for example C(3.9.2)), empty when nothing is recorded.
  returned: always
  type: str
applied:
  description: The checksums of the configuration the node was last started with, empty when nothing is recorded.
  returned: always
  type: str
new_cluster_id:
  description: A fresh cluster id, for a cluster none of whose nodes is formatted.
  returned: always
  type: str
new_directory_id:
  description: A fresh directory id, for a controller formatted for the first time.
  returned: always
  type: str
"""

import base64
import os
import uuid

from ansible.module_utils.basic import AnsibleModule


def random_kafka_uuid():
    """Kafka's Uuid.randomUuid(): a version-4 UUID in URL-safe base64 without padding; Kafka
    regenerates ids that start with '-' (they read as command-line options)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def read_properties(path):
    values = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip()
    return values


def read_word(path):
    """The content of a one-line state file, empty when there is none."""
    if not path or not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type="path", required=True),
                                              migration_phase_path=dict(type="path", required=False),
                                              release_path=dict(type="path", required=False),
                                              applied_path=dict(type="path", required=False)),
                           supports_check_mode=True)
    path = module.params["path"]
    phase_path = module.params["migration_phase_path"]
    phase = read_word(phase_path) or "none"
    release = read_word(module.params["release_path"])
    applied = read_word(module.params["applied_path"])
    values = {}
    if os.path.exists(path):
        try:
            values = read_properties(path)
        except OSError as exc:
            module.fail_json(msg="kraft_storage: cannot read %s: %s" % (path, exc))
    module.exit_json(changed=False, formatted=os.path.exists(path), cluster_id=values.get("cluster.id", ""),
                     node_id=values.get("node.id", values.get("broker.id", "")),
                     directory_id=values.get("directory.id", ""), version=values.get("version", ""),
                     migration_phase=phase, release=release, applied=applied,
                     new_cluster_id=random_kafka_uuid(), new_directory_id=random_kafka_uuid())


if __name__ == "__main__":
    main()
