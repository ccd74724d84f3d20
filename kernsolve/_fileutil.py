"""Opening files: the one owner of how kernsolve opens what it reads and writes.

**Output files** (:func:`output_file`): the one writer behind every file
kernsolve writes.  A user names an output path the way they would for LIBSVM's tools, and
expects what ``fopen(path, "w")`` does, without its one flaw (an interrupted
run leaves half a file):

* a **regular file** (new or existing) is written to a temporary file in the
  same folder and renamed over the target at the end, so it is either complete
  or untouched; an existing file keeps its permission bits (and, for root, its
  owner), a new one gets ``0o666 & ~umask`` as ``open()`` would give it;
* a **symbolic link** is followed: the file it points to is replaced, the link
  stays a link;
* anything else that exists -- a **device** (``/dev/null``), a **FIFO**, a
  socket -- and any path under ``/dev`` or ``/proc`` (``/dev/stdout``,
  ``/dev/fd/3``) is opened and written in place, as svm-predict does: renaming
  over those would replace the device node, or cut off the reader of the pipe.

Temporary files are named ``.NAME.PID.XXXXXX.tmp``. A run killed by SIGKILL
cannot remove its own, so each write first removes the leftovers of NAME whose
process is gone.

**Compression** (:func:`compression`, :func:`open_read`, :func:`compressor`):
a data file whose name ends in ``.gz``, ``.bz2``, ``.xz`` or ``.lzma`` is read
and written through that codec, any other as plain bytes.  A compressed file
that is corrupt or truncated raises ``DataFormatError`` naming the file
(``data.gz: corrupt or truncated gzip data (...)``), whatever the codec's own
exception (EOFError, zlib.error, LZMAError, OSError) and wherever the read
happens.
"""
import bz2
import contextlib
import errno
import gzip
import lzma
import os
import stat
import tempfile
import zlib

from ._errors import DataFormatError

__all__ = ["output_file", "check_output_path", "umask", "compression", "open_read",
           "compressor"]

# Paths under these folders are streams or kernel objects, never files to replace.
_STREAM_FOLDERS = ("/dev/", "/proc/")


def umask():
    """The process umask, read without changing it (``os.umask`` is not thread-safe)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _in_place(path):
    """True when ``path`` must be written through rather than replaced."""
    absolute = os.path.abspath(path)
    if absolute.startswith(_STREAM_FOLDERS):
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    return not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # EPERM: alive, another user's
        return True
    return True


def _remove_stale_temporaries(folder, base):
    """Remove ``.BASE.PID.XXXXXX.tmp`` files left by processes that no longer run."""
    prefix = f".{base}."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):-len(".tmp")].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


@contextlib.contextmanager
def output_file(path, binary=False, keep_partial=False):
    """Open ``path`` for writing; yield the file object (see the module notes).

    Text mode writes ASCII with ``\\n`` line ends. If the ``with`` block raises
    (KeyboardInterrupt included), a regular target is left as it was; with
    ``keep_partial`` (a log whose finished lines a later run resumes from) it is
    replaced by what was written, unless writing itself failed (an OSError
    naming no file or ``path``).
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    kwargs = {} if binary else {"encoding": "ascii", "newline": "\n"}
    mode = "wb" if binary else "w"
    if _in_place(path):
        f = open(path, mode, **kwargs)
        with _closing(f):
            yield f
        return
    target = os.path.realpath(path)       # write where a symlink points
    folder, base = os.path.split(target)
    _remove_stale_temporaries(folder, base)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=".tmp",
                               dir=folder)
    try:
        f = os.fdopen(fd, mode, **kwargs)
        with _closing(f):
            try:
                yield f
            except BaseException as exc:
                if keep_partial and not _writing_failed(exc, path):
                    _finish(f, tmp, target)
                raise
            _finish(f, tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _writing_failed(exc, path):
    """An OSError naming no file or this one: writing the file itself failed."""
    return isinstance(exc, OSError) and exc.filename in (None, path)


@contextlib.contextmanager
def _closing(f):
    """Close ``f`` after the block; after an error, quietly (closing flushes
    what a failed write left, and that second error would hide the first)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            f.close()
        raise
    f.close()


def _finish(f, tmp, target):
    """Flush the temporary file to disk and rename it over the target, with
    the target's permission bits (and owner) or a new file's."""
    f.flush()
    os.fsync(f.fileno())
    try:
        old = os.stat(target)
    except FileNotFoundError:
        os.chmod(tmp, 0o666 & ~umask())
    else:
        os.chmod(tmp, stat.S_IMODE(old.st_mode))
        if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
            with contextlib.suppress(OSError):
                os.chown(tmp, old.st_uid, old.st_gid)
    os.replace(tmp, target)


def check_output_path(path):
    """Return None if ``path`` can be written, else the reason (``strerror`` text).

    Called before long computations, so a bad output path fails at once.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return os.strerror(errno.EISDIR)
    if _in_place(path):
        if os.path.exists(path) and not os.access(path, os.W_OK):
            return _denied(path)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(path) and not os.path.isdir(folder):
            return os.strerror(errno.ENOENT)
        return None
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        return os.strerror(errno.ENOENT)
    if not os.access(folder, os.W_OK):
        return _denied(folder)
    return None


def _denied(path):
    """Why ``path`` cannot be written: a read-only file system, or permissions."""
    with contextlib.suppress(OSError, AttributeError):
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    return os.strerror(errno.EACCES)


# ------------------------------------------------------------ compression

_COMPRESSED = {".gz": "gz", ".bz2": "bz2", ".xz": "xz", ".lzma": "xz"}


def compression(path):
    """"gz", "bz2" or "xz" by the extension of ``path``, or None for a plain file."""
    return _COMPRESSED.get(os.path.splitext(path)[1].lower())


_CODEC_NAMES = {"gz": "gzip", "bz2": "bzip2", "xz": "xz"}


def open_read(path):
    """``path`` opened for reading bytes, decompressed by its extension
    (a corrupt or truncated stream raises ``DataFormatError`` naming ``path``)."""
    kind = compression(path)
    if kind == "gz":
        return _Decompressed(gzip.open(path, "rb"), path, kind)
    if kind == "bz2":
        return _Decompressed(bz2.open(path, "rb"), path, kind)
    if kind == "xz":
        return _Decompressed(lzma.open(path, "rb"), path, kind)
    return open(path, "rb", buffering=0)


class _Decompressed:
    """A decompressing reader whose codec errors are ``DataFormatError``s
    naming the file (the codecs raise EOFError, zlib.error, LZMAError or an
    OSError without errno; a real I/O error keeps its errno and passes)."""

    def __init__(self, f, path, kind):
        self._f, self.name, self._codec = f, path, _CODEC_NAMES[kind]

    @contextlib.contextmanager
    def _checked(self):
        try:
            yield
        except (EOFError, zlib.error, lzma.LZMAError) as exc:
            raise self._error(exc) from None
        except OSError as exc:
            if exc.errno is not None:
                raise
            raise self._error(exc) from None

    def _error(self, exc):
        return DataFormatError(f"{self.name}: corrupt or truncated {self._codec} data "
                               f"({str(exc) or type(exc).__name__})")

    def read(self, size=-1):
        with self._checked():
            return self._f.read(size)

    def readinto(self, view):
        with self._checked():
            return self._f.readinto(view)

    def seek(self, offset, whence=0):
        with self._checked():
            return self._f.seek(offset, whence)

    def seekable(self):
        return self._f.seekable()

    def fileno(self):
        return self._f.fileno()

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def compressor(raw, path):
    """A writer that compresses into ``raw`` by the extension of ``path``, or None."""
    kind = compression(path)
    if kind == "gz":
        return gzip.GzipFile(fileobj=raw, mode="wb")
    if kind == "bz2":
        return bz2.BZ2File(raw, "wb")
    if kind == "xz":
        return lzma.LZMAFile(raw, "wb")
    return None
