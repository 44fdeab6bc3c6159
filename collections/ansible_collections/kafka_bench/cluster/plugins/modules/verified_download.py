#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Fetch one file and verify its checksum."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verified_download
short_description: Download a file and verify it against a checksum
description:
  - Downloads O(url) (http, https or file) to O(dest) and verifies its digest before the
    file appears under its final name.
  - The digest is either given in O(checksum) or read from O(checksum_url), which may be in
    coreutils C(sha512sum) format or in the C(gpg --print-md) format of Apache release
    archives.
  - Idempotent: an existing O(dest) with the right digest is left alone. Supports check mode.
options:
  url:
    description: Where to fetch the file from.
    type: str
    required: true
  dest:
    description: Absolute path of the file to write.
    type: path
    required: true
  checksum:
    description: Expected digest as C(algorithm:hex), for example C(sha512:1a2b...).
    type: str
    default: ""
  checksum_url:
    description: URL of a checksum file to read the digest from when O(checksum) is empty.
    type: str
    default: ""
  checksum_algorithm:
    description: Algorithm of the digest in O(checksum_url).
    type: str
    default: sha512
    choices: [sha1, sha256, sha512]
  timeout:
    description: Network timeout in seconds.
    type: int
    default: 60
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Fetch the Kafka release archive and verify it
  kafka_bench.cluster.verified_download:
    url: https://archive.apache.org/dist/kafka/3.9.2/kafka_2.13-3.9.2.tgz
    checksum_url: https://archive.apache.org/dist/kafka/3.9.2/kafka_2.13-3.9.2.tgz.sha512
    dest: /var/cache/kafka/kafka_2.13-3.9.2.tgz
"""

RETURN = r"""
checksum:
  description: The verified digest, as C(algorithm:hex).
  returned: success
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kafka_bench.cluster.plugins.module_utils.download import (
    ChecksumError,
    fetch_verified,
    file_digest,
    parse_checksum,
    parse_checksum_file,
    read_text,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            dest=dict(type="path", required=True),
            checksum=dict(type="str", default=""),
            checksum_url=dict(type="str", default=""),
            checksum_algorithm=dict(type="str", default="sha512", choices=["sha1", "sha256", "sha512"]),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    url, dest = params["url"], params["dest"]
    try:
        if params["checksum"]:
            algo, expected = parse_checksum(params["checksum"])
        elif params["checksum_url"]:
            algo = params["checksum_algorithm"]
            text = read_text(params["checksum_url"], params["timeout"])
            expected = parse_checksum_file(text, os.path.basename(url), algo)
        else:
            module.fail_json(msg="verified_download: set checksum or checksum_url for %s; "
                                 "unverified downloads are refused" % url)
    except (ValueError, OSError) as exc:
        module.fail_json(msg="verified_download: cannot get the checksum for %s: %s" % (url, exc))

    result = dict(changed=False, dest=dest, checksum="%s:%s" % (algo, expected))
    if os.path.isfile(dest) and file_digest(dest, algo) == expected:
        module.exit_json(**result)
    result["changed"] = True
    if module.check_mode:
        module.exit_json(**result)
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    try:
        fetch_verified(url, dest, algo, expected, params["timeout"])
    except ChecksumError as exc:
        module.fail_json(msg="verified_download: checksum mismatch, file discarded: %s" % exc, **result)
    except Exception as exc:  # network and file errors alike: report, never leave a partial file
        module.fail_json(msg="verified_download: cannot fetch %s: %s" % (url, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
