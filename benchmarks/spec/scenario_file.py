"""Reading a scenario file or a client profile: YAML that refuses a key written twice, and
ScenarioError, by which every invalid scenario is reported (file, field, allowed values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class ScenarioError(ValueError):
    """A scenario file is invalid; the message names file, field and allowed values."""


class DuplicateKey(yaml.MarkedYAMLError):
    """A mapping of the file has a key written twice (YAML keeps the last one, silently)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping with a key written twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = lines.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base loader says so
                continue
            if first != key_node.start_mark.line + 1:
                raise DuplicateKey(problem=f"key {key!r} written twice: at line {first} and at line "
                                           f"{key_node.start_mark.line + 1} (YAML would keep the last silently)",
                                   problem_mark=key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def read_yaml(text: str) -> Any:
    """A YAML document; DuplicateKey for a mapping with a key written twice."""
    return yaml.load(text, Loader=_UniqueKeyLoader)


def read_file(path: Path) -> Any:
    """A scenario file's or a client profile's YAML; what keeps it from being read is a
    ScenarioError naming the file (and the line of a key written twice)."""
    try:
        return read_yaml(path.read_text())
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except DuplicateKey as exc:
        raise ScenarioError(f"{path}: line {exc.problem_mark.line + 1 if exc.problem_mark else '?'}: "
                            f"{exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None
