"""The compiled catalog snapshot (issue #16): the same catalog as the YAML gives, never stale,
and a cache that cannot be used only costs speed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from planner.inputs import catalog_cache
from planner.inputs.catalog import DEFAULT_CATALOG_DIR, _read_catalog, load_catalog


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(catalog_cache.CACHE_ENV, str(folder))
    return folder


def _user_catalog(tmp_path: Path) -> Path:
    """A user folder with one GPU copied from the shipped catalog."""
    user = tmp_path / "user"
    (user / "gpus").mkdir(parents=True)
    shutil.copy(DEFAULT_CATALOG_DIR / "gpus" / "h100-sxm.yaml", user / "gpus" / "h100-sxm.yaml")
    return user


def test_snapshot_equals_the_yaml(cache):
    first = load_catalog()
    assert len(list(cache.glob("catalog-*.pickle"))) == 1
    again = load_catalog()  # read back from the snapshot
    assert again == first == _read_catalog(())
    assert again is not first


def test_an_edited_entry_is_never_served_stale(cache, tmp_path):
    user = _user_catalog(tmp_path)
    before = load_catalog(user)
    path = user / "gpus" / "h100-sxm.yaml"
    text = path.read_text(encoding="utf-8")
    old = before.gpu("h100-sxm").memory_gb
    assert f"memory_gb: {old:g}" in text
    path.write_text(text.replace(f"memory_gb: {old:g}", "memory_gb: 123"), encoding="utf-8")
    after = load_catalog(user)
    assert after.gpu("h100-sxm").memory_gb == 123
    assert len(list(cache.glob("catalog-*.pickle"))) == 2


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(catalog_cache.CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert catalog_cache.cache_dir() is None
    assert load_catalog() == _read_catalog(())
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_snapshot_is_rebuilt(cache):
    expected = load_catalog()
    (snapshot,) = cache.glob("catalog-*.pickle")
    snapshot.write_bytes(b"not a pickle")
    assert load_catalog() == expected
    assert snapshot.read_bytes() != b"not a pickle"


def test_an_unwritable_cache_folder_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv(catalog_cache.CACHE_ENV, str(blocker / "cache"))  # under a file
    assert load_catalog() == _read_catalog(())


def test_catalog_errors_still_raise_and_are_not_cached(cache, tmp_path):
    user = _user_catalog(tmp_path)
    (user / "gpus" / "h100-sxm.yaml").write_text("id: h100-sxm\nbogus: 1\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(Exception, match="h100-sxm"):
            load_catalog(user)
    assert not list(cache.glob("catalog-*.pickle"))
