"""An exported suite as one file: ONNX's backend-test layout (``suite_layout.py``) in a gzipped tar archive.

Why a ``.tar.gz`` (measured on the default export, 40,191 cases in both graph forms: 412,759 files holding
100 MB, 44 MB of it the manifest):

- as a folder it takes 1.3 GB on disk: a file-system block for each of its files, and 190,000 folders;
- as a zip its per-entry headers alone (76 bytes and the name, ~100 characters, twice) would be 114 MB, over
  100 MiB before a byte of data: zip compresses each file on its own and never its headers;
- as a tar.gz it is ~17 MB: the tar headers compress to almost nothing, and the cases follow one another in
  the order they are made, so a case's files sit next to the nearly identical files of its neighbours, within
  deflate's window.

What a tar.gz gives up is random access: ``run --suite`` reads the archive once, from start to end, and keeps
its bytes in memory (~100 MB for the default export); its manifest is the first member, so reading only the
manifest stops there.

Every member is a regular file under one top folder named after the archive (``NAME.tar.gz`` holds ``NAME/``),
so ``tar -xzf NAME.tar.gz`` gives the folder layout, which ``run --suite NAME`` and ONNX's loader read. The
members carry no time, owner or mode of the machine that wrote them (ustar headers: mode 0644, mtime 0, owner
0/0 with no names; a pax ``path`` record for a path longer than ustar holds; no folder entries, which tar
makes as it extracts), and the gzip headers carry no time or name: the same suite gives identical bytes. The
archive is several gzip members one after another (RFC 1952, 2.2: each worker process compresses the part it
writes); gzip, tar, Python's gzip and tarfile read them as one stream.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO

#: the names an archive's --out ends with
SUFFIXES = (".tar.gz", ".tgz")
#: zlib's default: level 9 saves 3% more and costs twice the time
LEVEL = 6
BLOCK = 512
_ZERO = bytes(BLOCK)
#: the end of a tar archive: two zero blocks
END = bytes(2 * BLOCK)
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no flags, no mtime, unknown OS


class ArchiveError(ValueError):
    """A file that is not a suite archive this reader knows: one line saying why."""


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` names an archive (by its name: ``.tar.gz`` or ``.tgz``)."""
    return str(path).endswith(SUFFIXES)


def top_folder(path: str | Path) -> str:
    """The folder an archive's members are under: its file name without the suffix."""
    name = Path(path).name
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)] or "suite"
    return name


#: a ustar header's fields between the name and the prefix, the size and the checksum left out: mode 0644,
#: owner and group 0, mtime 0; then (after the size and checksum) a regular file, no link, "ustar\000",
#: no owner names, no device
_OWNER = b"0000000\0" * 2
_MTIME = b"00000000000\0"
_AFTER_CHECKSUM = b"%s" + bytes(100) + b"ustar\x0000" + bytes(80)
_CHECKSUM_SPACES = sum(b" " * 8)
FILE_MODE, FOLDER_MODE = b"0000644\0", b"0000755\0"


def _ustar(name: bytes, size: int, typeflag: bytes = b"0", mode: bytes = FILE_MODE) -> bytes | None:
    """A ustar header block for a member, or None when the name does not fit ustar's 100 + 155 bytes."""
    prefix = b""
    if len(name) > 100:
        cut = name.rfind(b"/", 0, 156)  # (the rightmost place: a place further left leaves a longer name)
        if cut <= 0 or len(name) - cut - 1 > 100:
            return None
        prefix, name = name[:cut], name[cut + 1:]
    size_field = b"%011o\0" % size
    tail = _AFTER_CHECKSUM % typeflag
    checksum = (sum(name) + sum(prefix) + sum(mode) + sum(size_field) + sum(tail) + _CHECKSUM_SPACES
                + _SUM_FIXED)
    return b"".join((name, bytes(100 - len(name)), mode, _OWNER, size_field, _MTIME, b"%06o\0 " % checksum,
                     tail, prefix, bytes(167 - len(prefix))))


_SUM_FIXED = sum(_OWNER) + sum(_MTIME)


def _padded(data: bytes) -> bytes:
    return data + _ZERO[:-len(data) % BLOCK] if len(data) % BLOCK else data


def member(name: str, data: bytes, folder: bool = False) -> bytes:
    """One regular file (or, ``folder``, a folder: ``name`` ends with "/", ``data`` is empty) as tar blocks:
    its header (a pax record first when the path is too long for ustar) and its bytes, padded to a block."""
    raw = name.encode("utf-8")
    kind, mode = (b"5", FOLDER_MODE) if folder else (b"0", FILE_MODE)
    head = _ustar(raw, len(data), kind, mode)
    if head is None:
        record = b" path=" + raw + b"\n"
        n = len(record) + 1
        while len(str(n).encode()) + len(record) != n:
            n += 1
        pax = str(n).encode() + record
        pax_head = _ustar(b"PaxHeader/" + raw.rstrip(b"/").rsplit(b"/", 1)[-1][-80:], len(pax), b"x")
        short = _ustar(raw[-100:], len(data), kind, mode)  # (what a reader that ignores pax records names it)
        assert pax_head is not None and short is not None
        head = pax_head + _padded(pax) + short
    return head + _padded(data)


class PartWriter:
    """One part of an archive, compressed as its members come: a gzip member written to ``fh`` (a
    ``suite_layout.Sink``). ``close(end=True)``: the part that ends the archive (the two zero blocks)."""

    def __init__(self, fh: BinaryIO, level: int = LEVEL) -> None:
        self._fh = fh
        self._z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._crc = 0
        self._size = 0
        self._pending: list[bytes] = []  # (compressed a batch at a time: a call per member cost a tenth)
        self._pending_size = 0
        fh.write(_GZIP_HEADER)

    def folder(self, path: str) -> None:
        """Add the folder ``path`` (an empty one, a data set without inputs, is part of the layout)."""
        self._blocks(member(path + "/", b"", folder=True))

    def write(self, path: str, data: bytes) -> None:
        """Add the file ``path`` (a member's name: ``/``-separated, under the archive's top folder)."""
        self._blocks(member(path, data))

    def _blocks(self, blocks: bytes) -> None:
        self._pending.append(blocks)
        self._pending_size += len(blocks)
        if self._pending_size >= 1 << 18:
            self._compress()

    def _compress(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        out = self._z.compress(data)
        if out:
            self._fh.write(out)

    def close(self, end: bool = False) -> None:
        if end:
            self._blocks(END)
        self._compress()
        self._fh.write(self._z.flush() + struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))


def _number(field: bytes) -> int:
    if field[:1] == b"\x80":  # (GNU's base-256 for a size over 8 GiB)
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    return int(text, 8) if text else 0


def _chunks(path: str | Path) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file of one or more members, a chunk at a time (Python's gzip reads
    them too, at a fifth of the speed for a tar's many small reads)."""
    with open(path, "rb") as fh:
        z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        fresh = True  # (nothing of the current member read yet)
        while True:
            raw = fh.read(1 << 20)
            if not raw:
                break
            while raw:
                fresh = False
                out = z.decompress(raw, 1 << 22)  # (at most 4 MiB at a time: the headers inflate 100-fold)
                if out:
                    yield out
                if z.eof:  # (the rest is in unused_data: the next gzip member, if any)
                    raw = z.unused_data
                    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    fresh = True
                else:
                    raw = z.unconsumed_tail  # (empty: read on)
        if not fresh:
            raise ArchiveError(f"{path}: ends inside a gzip member (a truncated archive?)")


class _Reader:
    """Reads n bytes at a time from a stream of chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""
        self._pos = 0

    def read(self, n: int) -> bytes:
        end = self._pos + n
        if end <= len(self._buf):
            out = self._buf[self._pos:end]
            self._pos = end
            return out
        parts = [self._buf[self._pos:]]  # (joined once: a 44 MB manifest spans a dozen chunks)
        have = len(parts[0])
        while have < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                self._buf, self._pos = b"", 0
                return b"".join(parts)
            parts.append(chunk)
            have += len(chunk)
        last = parts[-1]
        cut = len(last) - (have - n)
        parts[-1] = last[:cut]
        self._buf, self._pos = last, cut
        return b"".join(parts)


def members(path: str | Path) -> Generator[tuple[str, bytes], None, None]:
    """(name, bytes) of every regular file of a tar.gz archive, in order: ustar, pax and GNU long names;
    a hard link gives the bytes of the file it links to; folders, symbolic links and devices are passed over.
    ArchiveError when it is not a gzipped tar archive, or ends early."""
    seen: dict[str, bytes] = {}
    first = True
    try:
        fh = _Reader(_chunks(path))
        long_name: str | None = None
        while True:
            h = fh.read(BLOCK)
            if len(h) < BLOCK:
                if not h:  # (no end blocks: GNU tar reads such an archive, and so does this)
                    return
                raise ArchiveError(f"{path}: ends inside a tar header (a truncated archive?)")
            if h == _ZERO:
                return
            try:
                if first and sum(h[:148]) + 256 + sum(h[156:]) != _number(h[148:156]):
                    raise ValueError("its first header's checksum does not match")
                size = _number(h[124:136])
            except ValueError as e:
                raise ArchiveError(f"{path}: not a tar archive ({e})") from None
            first = False  # (the rest is guarded by gzip's CRC)
            data = fh.read(size)
            if len(data) < size:
                raise ArchiveError(f"{path}: ends inside a member (a truncated archive?)")
            fh.read(-size % BLOCK)
            kind = h[156:157]
            if kind == b"x":
                long_name = _pax_path(data) or long_name
                continue
            if kind == b"L":
                long_name = data.split(b"\0", 1)[0].decode("utf-8", "replace")
                continue
            name = long_name or _ustar_name(h)
            long_name = None
            if kind in (b"0", b"\0", b"7"):
                seen[name] = data
                yield name, data
            elif kind == b"1" and _ustar_field(h[157:257]) in seen:
                yield name, seen[_ustar_field(h[157:257])]
    except (OSError, EOFError, zlib.error) as e:
        raise ArchiveError(f"{path}: cannot read it as a gzipped tar archive: {e}") from None


def _ustar_field(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "replace")


def _ustar_name(h: bytes) -> str:
    name = h[0:100].split(b"\0", 1)[0]
    if h[345] != 0 and h[257:262] == b"ustar":
        name = h[345:500].split(b"\0", 1)[0] + b"/" + name
    return name.decode("utf-8", "replace")


def _pax_path(data: bytes) -> str | None:
    path = None
    for line in data.split(b"\n"):
        _, _, record = line.partition(b" ")
        key, eq, value = record.partition(b"=")
        if eq and key == b"path":
            path = value.decode("utf-8", "replace")
    return path
