#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Create a node's directories and write its small text files (rendered configuration, recorded
state) in one module run, each only when it is missing or differs."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_files
short_description: Create a node's directories and write its small text files in one run
description:
  - Creates the directories of O(directories) first (with their parents), when absent.
  - Writes each file of O(files) from the content given, atomically (a temporary file in the same
    directory, renamed over the old one), only when its content differs from what the file holds;
    then sets its mode, owner and group when given and different.
  - One module run for all the files of a step, where C(ansible.builtin.template) and
    C(ansible.builtin.copy) cost two to three runs on the host per file (a stat, a transfer and
    the copy). Render templates with C(lookup('ansible.builtin.template', ...)) on the controller.
  - Returns the SHA-1 checksum of each file's content, as C(ansible.builtin.template) does, so a
    configuration's checksums read the same whichever wrote it.
  - Supports check mode (nothing written; reports what would change) and diff mode (the before
    and after of each file whose content changes).
options:
  directories:
    description:
      - Directories that must exist before the files are written, in order; each is created with
        any parent missing, and its mode, owner and group (and those of the parents created) set
        when given and different.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory.
        type: path
        required: true
      mode:
        description: Its permissions, as an octal string such as C("0755").
        type: raw
      owner:
        description: Its owner; unchanged when not given or empty.
        type: str
      group:
        description: Its group; unchanged when not given or empty.
        type: str
  files:
    description: The files to write, in order.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file to write. Its directory must exist.
        type: path
        required: true
      content:
        description: The file's whole content.
        type: str
        required: true
      mode:
        description: The file's permissions, as an octal string such as C("0644").
        type: raw
      owner:
        description: The file's owner; unchanged when not given or empty.
        type: str
      group:
        description: The file's group; unchanged when not given or empty.
        type: str
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Write the node's configuration
  kafka_bench.cluster.node_files:
    files:
      - path: /etc/kafka/server.properties
        content: "{{ lookup('ansible.builtin.template', 'server.properties.j2') }}"
        mode: "0644"
      - path: /var/run/kafka/applied-config
        content: "{{ checksums }}\n"
        mode: "0644"
  register: written
  notify: kafka restart
"""

RETURN = r"""
files:
  description: One entry per file, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    checksum:
      description: SHA-1 of the content given (what the file holds once written).
      type: str
    changed:
      description: Whether the content, mode, owner or group changed (or would, in check mode).
      type: bool
checksums:
  description: The files' checksums, in the order given.
  returned: always
  type: list
  elements: str
"""

import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text


def current_bytes(path):
    """What the file holds, or None when there is none."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomically(module, path, data):
    directory = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        module.atomic_move(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def attributes(path, mode, owner, group):
    """The file arguments of AnsibleModule for one path; an empty owner or group leaves it as it is."""
    return {"path": path, "mode": mode, "owner": owner or None, "group": group or None}


def ensure_directory(module, spec):
    """Whether the directory was created (with any parent missing) or its attributes set, or would
    be in check mode. The attributes go on the directory and on the parents created."""
    if not spec["path"]:
        module.fail_json(msg="node_files: a directory's path is empty")
    missing, path = [], spec["path"]
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path.rstrip("/"))
    if module.check_mode and missing:
        return True
    for directory in reversed(missing):
        try:
            os.mkdir(directory)
        except FileExistsError:  # a directory the nodes of a machine share, made by another's run
            pass
    changed = bool(missing)
    for directory in missing or [spec["path"]]:
        changed = module.set_fs_attributes_if_different(module.load_file_common_arguments(attributes(
            directory, spec.get("mode"), spec.get("owner"), spec.get("group"))), changed)
    return changed


def write_one(module, spec):
    path, data = spec["path"], to_bytes(spec["content"], errors="surrogate_or_strict")
    if not path:
        module.fail_json(msg="node_files: a file's path is empty")
    before = current_bytes(path)
    if before is None and not os.path.isdir(os.path.dirname(path) or ".") and not module.check_mode:
        module.fail_json(msg="node_files: the directory of %s does not exist" % path)
    content_changed = before != data
    if content_changed and not module.check_mode:
        write_atomically(module, path, data)
    if os.path.exists(path):
        attributes_changed = module.set_fs_attributes_if_different(
            module.load_file_common_arguments(attributes(path, spec.get("mode"), spec.get("owner"), spec.get("group"))),
            False)
    else:  # check mode, new file: it will get them
        attributes_changed = True
    entry = {"path": path, "checksum": hashlib.sha1(data).hexdigest(), "changed": content_changed or attributes_changed}
    diff = None
    if content_changed and module._diff:
        diff = {"before_header": path, "after_header": path,
                "before": "" if before is None else to_text(before, errors="surrogate_or_replace"),
                "after": to_text(data, errors="surrogate_or_replace")}
    return entry, diff


def main():
    attribute_options = dict(mode=dict(type="raw"), owner=dict(type="str"), group=dict(type="str"))
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[],
                             options=dict(path=dict(type="path", required=True), **attribute_options)),
            files=dict(type="list", elements="dict", default=[],
                       options=dict(path=dict(type="path", required=True),
                                    content=dict(type="str", required=True, no_log=False), **attribute_options))),
        supports_check_mode=True)
    created = [ensure_directory(module, spec) for spec in module.params["directories"]]
    entries, diffs = [], []
    for spec in module.params["files"]:
        entry, diff = write_one(module, spec)
        entries.append(entry)
        if diff is not None:
            diffs.append(diff)
    result = dict(changed=any(created) or any(e["changed"] for e in entries), files=entries,
                  checksums=[e["checksum"] for e in entries])
    if diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
