# -*- coding: utf-8 -*-
"""Filters comparing the ACLs an inventory asks for with those kafka-acls --list prints."""

from __future__ import annotations

import re

DOCUMENTATION = r"""
name: acl_keys
short_description: The (resource, pattern, principal, operation) keys of one kafka_acls entry
description:
  - One key per operation, as C(TOPIC|name|PREFIXED|User:bench|WRITE); operations may be given
    as the CLI takes them (C(IdempotentWrite)) or as Kafka prints them (C(IDEMPOTENT_WRITE)).
options:
  _input:
    description: A kafka_acls entry {principal (or principals, a list), resource_type, name, pattern, operations}.
    type: dict
    required: true
"""

_RESOURCE = {"topic": "TOPIC", "group": "GROUP", "cluster": "CLUSTER", "transactional-id": "TRANSACTIONAL_ID"}
_HEADER = re.compile(r"resourceType=(\w+), name=(.*), patternType=(\w+)\)")
_ENTRY = re.compile(r"\(principal=(.*), host=(.*), operation=(\w+), permissionType=ALLOW\)")


def _operation(name):
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", str(name)).upper()


def acl_keys(entry):
    resource = _RESOURCE[entry["resource_type"]]
    name = "kafka-cluster" if resource == "CLUSTER" else entry["name"]
    pattern = str(entry.get("pattern", "literal")).upper()
    return [f"{resource}|{name}|{pattern}|{principal}|{_operation(op)}" for principal in principals(entry)
            for op in entry["operations"]]


def principals(entry):
    """The principals of a kafka_acls entry: `principals` (a list) or `principal`."""
    return list(entry.get("principals") or [entry["principal"]])


def acls_present(listing):
    """Keys of the allow rules in `kafka-acls --list` output (any host)."""
    keys, resource = [], None
    for line in str(listing).splitlines():
        header = _HEADER.search(line)
        if header:
            resource = "|".join(header.groups())
            continue
        entry = _ENTRY.search(line)
        if entry and resource:
            keys.append(f"{resource}|{entry.group(1)}|{entry.group(3)}")
    return keys


class FilterModule:
    def filters(self):
        return {"acl_keys": acl_keys, "acls_present": acls_present, "acl_principals": principals}
