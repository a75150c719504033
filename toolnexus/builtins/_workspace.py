"""Paths in the workspace: confinement, length, per-path locks and OS errors.

Every file path a built-in touches goes through `Workspace`. `path_locks` makes the
read-modify-write of the file tools one step per file when calls run concurrently, and
`os_error` words an unexpected ``OSError`` (a race, an odd path) for a model.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

from toolnexus._registry import BuiltinSettings
from toolnexus.errors import ToolError

__all__ = ["MAX_PATH", "Moved", "Workspace", "os_error", "path_locks"]

MAX_PATH = 4096
"""Longest path (characters) a built-in accepts."""


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""No-follow everywhere; non-blocking so that opening a FIFO returns at once."""


class Moved(OSError):
    """A part of a path became a symlink (or stopped being a directory) while in use."""


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _step(parent: int, name: str, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


class Workspace:
    """Resolves tool paths against the root and refuses those that escape it.

    Paths are resolved with symlinks followed, so a link inside the root that points
    outside is refused too. The configured read-only dirs (the skill dirs) may be read,
    never written. With ``confine=False`` every path is allowed.
    """

    __slots__ = ("allow_hard_links", "confine", "read_only", "root")

    def __init__(self, settings: BuiltinSettings) -> None:
        self.root = settings.root
        self.read_only = settings.read_only
        self.confine = settings.confine
        self.allow_hard_links = settings.allow_hard_links

    def linked_elsewhere(self, info: os.stat_result) -> bool:
        """Tell whether the opened file ``info`` must not be read for its other hard links.

        A hard link in the workspace to a file outside is that file under a second name;
        the path checks cannot see it, so a confined workspace reads only files with a
        single link, unless the host allowed more (``allow_hard_links``).
        """
        return self.confine and not self.allow_hard_links and info.st_nlink > 1

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Return the absolute, symlink-free path for ``path``, or raise `ToolError`."""
        if not path or "\x00" in path:
            raise ToolError("The path is empty or contains a NUL character.")
        try:
            candidate = Path(path).expanduser()
            if not candidate.is_absolute():
                candidate = self.root / candidate
            real = candidate.resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise ToolError(f"Cannot use path {path[:200]!r}: {exc}") from None
        if not self.confine or _within(real, self.root):
            return real
        if any(_within(real, base) for base in self.read_only):
            if write:
                raise ToolError(
                    f"Path {path!r} is in a read-only skill directory; it can be read, not changed."
                )
            return real
        raise ToolError(
            f"Path {path[:200]!r} resolves to {str(real)[:300]}, outside the workspace "
            f"{self.root}. "
            "Use a path inside the workspace."
        )

    def _base(self, real: Path) -> Path:
        if self.confine:
            for base in (self.root, *self.read_only):
                if _within(real, base):
                    return base
            raise ToolError(f"{real} is outside the workspace {self.root}.")
        return Path(real.anchor)

    @contextlib.contextmanager
    def directory(self, real: Path, *, create: bool = False) -> Iterator[int]:
        """Yield a file descriptor of the directory ``real`` (a path from `resolve`).

        The path is opened one component at a time from its base (the root, a read-only
        dir, or ``/`` when not confined), never following a symlink: a directory swapped
        for a symlink between `resolve` and now raises `Moved` instead of leading outside.
        With ``create``, missing directories are made on the way.
        """
        base = self._base(real)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in real.relative_to(base).parts:
                try:
                    next_fd = _step(fd, name, create=create)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                        raise Moved(
                            exc.errno, "a part of the path changed while in use", str(real)
                        ) from None
                    raise
                os.close(fd)
                fd = next_fd
            yield fd
        finally:
            os.close(fd)

    def open_file(self, real: Path) -> int:
        """Open ``real`` (a path from `resolve`) for reading without following symlinks.

        Returns a file descriptor the caller closes. Opening does not block on a FIFO;
        callers check the type with ``os.fstat``. Raises `Moved` when the file or a
        directory on its path became a symlink since `resolve`.
        """
        with self.directory(real.parent) as parent:
            try:
                return os.open(real.name, _FILE_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Moved(
                        exc.errno, "the file became a symlink while in use", str(real)
                    ) from None
                raise

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it, else absolute."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)


def os_error(exc: OSError) -> ToolError:
    """Return a `ToolError` for an unexpected ``OSError`` (a race, an odd path)."""
    if isinstance(exc, Moved):
        return ToolError(
            f"{exc.filename} changed while in use: {exc.strerror} (a directory or the file "
            "was replaced by a symlink). Nothing was done; check the path and try again."
        )
    where = str(exc.filename or "the file")
    if len(where) > 200:
        where = f"{where[:200]}... ({len(where)} characters)"
    return ToolError(f"Cannot access {where}: {exc.strerror or exc}.")


_LOCKS: weakref.WeakValueDictionary[Path, threading.Lock] = weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(path)
        if lock is None:
            lock = threading.Lock()
            _LOCKS[path] = lock
        return lock


@contextlib.contextmanager
def path_locks(paths: Iterable[Path]) -> Iterator[None]:
    """Hold the lock of every resolved path in ``paths`` (taken in sorted order).

    The file tools are sync callables that `toolnexus.execute` runs on worker threads, so
    two calls of one turn can change one file at once; under these locks each call's
    read-modify-write of a file is one step and no edit is lost. Sorted order lets
    ``apply_patch`` take several locks without deadlocking against another call.
    """
    locks = [_lock_for(path) for path in sorted(set(paths))]
    with contextlib.ExitStack() as stack:
        for lock in locks:
            stack.enter_context(lock)
        yield
