"""Reading and writing the files a user names: only regular files, bounded, UTF-8, checked early.

Every path that comes from the user (``@FILE`` layout texts, corpora, golden files, output files)
goes through this module, so that no input can hang or exhaust the process:

* :func:`read_text` opens with ``O_NONBLOCK`` (opening a FIFO never waits for a writer), checks
  with ``fstat`` that the path is a regular file (not a directory, FIFO, socket or device such as
  ``/dev/zero``), reads at most ``limit + 1`` bytes (so a file too large is refused without being
  read whole) and decodes strict UTF-8, naming the byte offset of the first bad byte.
* :func:`check_writable` runs *before* the work: it refuses an output path whose directory is
  missing, that is a directory, or that cannot be written, so that a long check does not end in
  a crash on the last step.
* :func:`write_text` writes an output file, turning ``OSError`` into :class:`LayoutError`.

Every failure is a :class:`~layoutverify.core.errors.LayoutError` naming the file and what it was
for (``what``), e.g. ``cannot read corpus 'x.toml': a directory, not a regular file``.
"""
from __future__ import annotations

import os
import stat

from layoutverify.core.errors import LayoutError

#: default largest file read (bytes): layout texts, corpora and golden files are far smaller
MAX_FILE_BYTES = 16 << 20


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def read_bytes(path, *, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (else :class:`LayoutError`)."""
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not name:
        raise LayoutError(f"empty {what} path")
    if "\0" in name:
        raise LayoutError(f"cannot read {what} {name!r}: the path contains a NUL character")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise LayoutError(f"cannot read {what} {name!r}: {_reason(e)}") from None
    except ValueError as e:  # e.g. an embedded NUL or a path the OS cannot represent
        raise LayoutError(f"cannot read {what} {name!r}: {e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LayoutError(f"cannot read {what} {name!r}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise LayoutError(f"{what} {name!r} is too large: {st.st_size} bytes (limit {limit})")
        chunks = []
        got = 0
        while got <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            except BlockingIOError:  # cannot happen for a regular file; never spin on it
                raise LayoutError(f"cannot read {what} {name!r}: the read would block") from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:  # grew while we read it
            raise LayoutError(f"{what} {name!r} is too large (limit {limit} bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise LayoutError(f"cannot read {what} {name!r}: {_reason(e)}") from None
    finally:
        os.close(fd)


def decode_utf8(data: bytes, *, what: str, name: str) -> str:
    """``data`` as strict UTF-8; a bad byte is an error naming its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LayoutError(f"{what} {name!r} is not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start} "
                          f"({e.reason})") from None


def read_text(path, *, what: str = "file", limit: int = MAX_FILE_BYTES) -> str:
    """The text of the regular file ``path``: strict UTF-8 (a leading BOM is dropped), ``limit`` bytes at most."""
    data = read_bytes(path, what=what, limit=limit)
    text = decode_utf8(data, what=what, name=os.fsdecode(os.fspath(path)))
    return text[1:] if text.startswith("\ufeff") else text


def check_writable(path, what: str = "output file") -> None:
    """Refuse, before any work, an output path that cannot be written.

    The path must not be a directory and its directory must exist. The check is a real one: an
    existing file is opened for appending (nothing is truncated; a FIFO without a reader is refused
    instead of blocking), a new one is created and removed again. Character devices such as
    ``/dev/null`` are fine.
    """
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not name:
        raise LayoutError(f"empty {what} path")
    if "\0" in name:
        raise LayoutError(f"cannot write {what} {name!r}: the path contains a NUL character")
    try:
        st = os.stat(name)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise LayoutError(f"cannot write {what} {name!r}: {_reason(e)}") from None
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise LayoutError(f"cannot write {what} {name!r}: it is a directory")
        try:
            os.close(os.open(name, flags | os.O_APPEND))
        except OSError as e:
            reason = "a FIFO with no reader" if stat.S_ISFIFO(st.st_mode) else _reason(e)
            raise LayoutError(f"cannot write {what} {name!r}: {reason}") from None
        return
    parent = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(parent):
        raise LayoutError(f"cannot write {what} {name!r}: directory {parent!r} does not exist")
    try:
        os.close(os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:  # appeared meanwhile: someone else's file, leave it be
        return
    except OSError as e:
        raise LayoutError(f"cannot write {what} {name!r}: {_reason(e)}") from None
    try:
        os.unlink(name)
    except OSError:
        pass


def write_text(path, text: str, *, what: str = "output file", append: bool = False) -> None:
    """Write (or append) ``text`` to ``path`` as UTF-8; failures are :class:`LayoutError`."""
    name = os.fspath(path)
    check_writable(name, what)
    try:
        with open(name, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise LayoutError(f"cannot write {what} {name!r}: {_reason(e)}") from None
