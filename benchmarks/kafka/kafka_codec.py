"""Kafka's wire encoding, apart from any request: the primitive types, the flexible versions'
compact strings and arrays, varints and tagged fields (`Writer` builds a request body, `Reader`
walks a response), and the error of a broker that did not answer or answered with an error."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any


class ProtocolError(RuntimeError):
    """The broker or controller did not answer, or answered with an error code."""


class Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> Writer:
        self.buf += struct.pack(">b", v)
        return self

    def int16(self, v: int) -> Writer:
        self.buf += struct.pack(">h", v)
        return self

    def int32(self, v: int) -> Writer:
        self.buf += struct.pack(">i", v)
        return self

    def uvarint(self, v: int) -> Writer:
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)
        return self

    def string(self, v: str | None) -> Writer:
        """A compact (nullable) string: length + 1 as an unsigned varint, 0 for null."""
        if v is None:
            return self.uvarint(0)
        data = v.encode()
        self.uvarint(len(data) + 1)
        self.buf += data
        return self

    def array(self, items: list[Any], each: Callable[[Writer, Any], object]) -> Writer:
        self.uvarint(len(items) + 1)
        for item in items:
            each(self, item)
        return self

    def tags(self) -> Writer:
        return self.uvarint(0)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def int8(self) -> int:
        return int(self._take(">b"))

    def int16(self) -> int:
        return int(self._take(">h"))

    def uint16(self) -> int:
        return int(self._take(">H"))

    def int32(self) -> int:
        return int(self._take(">i"))

    def int64(self) -> int:
        return int(self._take(">q"))

    def boolean(self) -> bool:
        return self.int8() != 0

    def uuid(self) -> bytes:
        value = self.data[self.pos:self.pos + 16]
        self.pos += 16
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        value = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return value

    def array(self, each: Callable[[Reader], Any]) -> list[Any] | None:
        n = self.uvarint() - 1
        return None if n < 0 else [each(self) for _ in range(n)]

    def tags(self, known: dict[int, Callable[[Reader], Any]] | None = None) -> dict[int, Any]:
        """Tagged fields: those in `known` decoded, the others skipped."""
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            end = self.pos + size
            if known and tag in known:
                out[tag] = known[tag](self)
            self.pos = end
        return out
