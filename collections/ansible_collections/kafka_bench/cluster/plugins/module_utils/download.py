# -*- coding: utf-8 -*-
"""Download helpers shared by the kafka_bench.cluster modules.

Everything is written to a temporary file beside the destination and renamed into
place only after the checksum matched, so a crash never leaves a half-written file
under the final name and concurrent writers of the same file cannot corrupt it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile

from ansible.module_utils.urls import open_url

SUPPORTED_ALGORITHMS = ("sha1", "sha256", "sha512")
_CHUNK = 1 << 20


class ChecksumError(Exception):
    """The downloaded content does not have the expected digest."""


def parse_checksum(spec):
    """Split 'algo:hexdigest' into (algo, hexdigest), validating both parts."""
    if ":" not in spec:
        raise ValueError("checksum must look like 'sha512:<hex>', got %r" % spec)
    algo, digest = spec.split(":", 1)
    algo = algo.strip().lower()
    digest = re.sub(r"\s+", "", digest).lower()
    if algo not in SUPPORTED_ALGORITHMS:
        raise ValueError("checksum algorithm %r is not one of %s" % (algo, ", ".join(SUPPORTED_ALGORITHMS)))
    if not re.fullmatch(r"[0-9a-f]+", digest) or len(digest) != hashlib.new(algo).digest_size * 2:
        raise ValueError("checksum %r is not a %s hex digest" % (digest, algo))
    return algo, digest


def parse_checksum_file(text, filename, algo):
    """Read the digest for `filename` from a checksum file.

    Understands the two formats Apache projects publish:
    - coreutils: '<hex>  <filename>' (one or more lines);
    - gpg --print-md: '<filename>: 8D6C2D4A 0E5A ...' possibly wrapped over several lines.
    """
    size = hashlib.new(algo).digest_size * 2
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and os.path.basename(parts[-1].lstrip("*")) == filename:
            candidate = parts[0].lower()
            if len(candidate) == size and re.fullmatch(r"[0-9a-f]+", candidate):
                return candidate
    gpg = re.match(r"\s*(\S+?)\s*:\s*(.*)", text, re.S)
    if gpg and os.path.basename(gpg.group(1)) == filename:
        candidate = re.sub(r"\s+", "", gpg.group(2)).lower()
        if len(candidate) == size and re.fullmatch(r"[0-9a-f]+", candidate):
            return candidate
    candidate = re.sub(r"\s+", "", text).lower()
    if len(candidate) == size and re.fullmatch(r"[0-9a-f]+", candidate):
        return candidate
    raise ValueError("no %s digest for %s found in the checksum file" % (algo, filename))


def file_digest(path, algo):
    digest = hashlib.new(algo)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _open(url, timeout):
    if url.startswith("file://"):
        return open(url[len("file://"):], "rb")
    return open_url(url, timeout=timeout, follow_redirects="safe")


def read_text(url, timeout):
    handle = _open(url, timeout)
    try:
        return handle.read().decode("utf-8", "replace")
    finally:
        handle.close()


def fetch_verified(url, dest, algo, expected, timeout):
    """Download `url` to `dest` atomically, failing with ChecksumError on mismatch."""
    directory = os.path.dirname(os.path.abspath(dest))
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=directory)
    try:
        digest = hashlib.new(algo)
        source = _open(url, timeout)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in iter(lambda: source.read(_CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
        finally:
            source.close()
        actual = digest.hexdigest()
        if actual != expected:
            raise ChecksumError("%s: expected %s %s, got %s" % (url, algo, expected, actual))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def copy_verified(src, dest, algo, expected):
    """Copy a cached file into place if (and only if) it has the expected digest."""
    if not os.path.isfile(src) or file_digest(src, algo) != expected:
        return False
    directory = os.path.dirname(os.path.abspath(dest))
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=directory)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o644)
        # The source's time too: a jar installed again from the cache is the same file to the
        # class-data sharing archives of the services that load it (they check size and time).
        stat = os.stat(src)
        os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True
