"""The catalog: id -> spec for GPUs, models, quantizations, engines and API offerings.

The shipped catalog is package data (planner.catalogs, the repository's catalogs/). User
catalog folders (`--catalog DIR`, $PLANNER_CATALOG_DIR) add entries to it or replace shipped
ones with the same id; the earlier folder wins when several define an id.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from planner.errors import CatalogError, InputError, unknown_name_message
from planner.inputs.catalog_cache import cached
from planner.inputs.loading import load_yaml_model, package_folder
from planner.schema.api import ApiOffering, ApiProvider
from planner.schema.engine import EngineProfile
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.quant import Quant

M = TypeVar("M", bound=BaseModel)

# the shipped catalog: catalogs/ of the repository, installed as the package planner.catalogs
DEFAULT_CATALOG_DIR = package_folder("planner.catalogs")
CATALOG_ENV = "PLANNER_CATALOG_DIR"
# sub-folder of a catalog folder -> the schema of its entries
KINDS: dict[str, type[BaseModel]] = {
    "gpus": Gpu,
    "models": Model,
    "quants": Quant,
    "engines": EngineProfile,
    "apis": ApiProvider,
}
Folders = str | Path | Sequence[str | Path] | None


@dataclass(frozen=True)
class Catalog:
    """Every known spec, keyed by id. Frozen and picklable: plans fan out across processes."""

    gpus: dict[str, Gpu] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    quants: dict[str, Quant] = field(default_factory=dict)
    engines: dict[str, EngineProfile] = field(default_factory=dict)
    apis: dict[str, ApiProvider] = field(default_factory=dict)
    root: str = ""
    user_folders: tuple[str, ...] = ()

    def __repr__(self) -> str:
        where = " + ".join([self.root, *self.user_folders])
        return (
            f"Catalog({where!r}: {len(self.gpus)} GPUs, {len(self.models)} models, "
            f"{len(self.quants)} quants, {len(self.engines)} engines, {len(self.apis)} APIs)"
        )

    def gpu(self, gpu_id: str) -> Gpu:
        return _lookup(self.gpus, gpu_id, "GPU")

    def model(self, model_id: str) -> Model:
        return _lookup(self.models, model_id, "model")

    def quant(self, quant_id: str) -> Quant:
        return _lookup(self.quants, quant_id, "quantization")

    def engine(self, engine_id: str) -> EngineProfile:
        return _lookup(self.engines, engine_id, "engine profile")

    def api_offerings(self, model_id: str) -> list[tuple[ApiProvider, ApiOffering]]:
        """Every API offering of a model, across providers."""
        return [
            (prov, off)
            for prov in self.apis.values()
            for off in prov.offerings
            if off.model == model_id
        ]

    def with_model(self, model: Model) -> Catalog:
        """A copy with one more (user-imported) model."""
        return dataclasses.replace(self, models={**self.models, model.id: model})


def _lookup(table: dict[str, M], key: str, kind: str) -> M:
    try:
        return table[key]
    except KeyError:
        raise InputError(unknown_name_message(kind, key, table)) from None


def _read_folder(folder: Path, model: type[M]) -> dict[str, tuple[M, Path]]:
    """One YAML per entry, with the file it came from; the file name must equal the id and
    ids must be unique within the folder."""
    out: dict[str, tuple[M, Path]] = {}
    for path in sorted(folder.glob("*.y*ml")):
        entry = load_yaml_model(path, model)
        entry_id = entry.id  # type: ignore[attr-defined]
        if entry_id != path.stem:
            raise CatalogError(f"{path}: id '{entry_id}' does not match the file name")
        if entry_id in out:
            raise CatalogError(f"{path}: duplicate id '{entry_id}'")
        out[entry_id] = (entry, path)
    return out


def _load_folder(folder: Path, model: type[M]) -> dict[str, M]:
    """Load one catalog sub-folder that must exist (the shipped catalog has every kind)."""
    if not folder.is_dir():
        raise CatalogError(f"{folder}: catalog folder not found")
    return {key: entry for key, (entry, _) in _read_folder(folder, model).items()}


def user_catalog_dirs(explicit: Folders = None) -> tuple[Path, ...]:
    """The user catalog folders, highest precedence first: the explicit ones, else those of
    $PLANNER_CATALOG_DIR (separated by os.pathsep), else none."""
    if isinstance(explicit, str | Path):
        explicit = [explicit]
    if explicit:
        return tuple(Path(p) for p in explicit)
    env = os.environ.get(CATALOG_ENV, "")
    return tuple(Path(p) for p in env.split(os.pathsep) if p)


def write_dir(explicit: Folders = None) -> Path:
    """Where `calibrate` and `model import` write new entries by default: the first user
    catalog folder, else ./catalogs (never the installed package)."""
    folders = user_catalog_dirs(explicit)
    return folders[0] if folders else Path("catalogs")


def is_loaded(folder: Path, explicit: Folders = None) -> bool:
    """Whether `load_catalog(explicit)` reads `folder` (the shipped or a user catalog)."""
    loaded = [DEFAULT_CATALOG_DIR, *user_catalog_dirs(explicit)]
    return any(folder.resolve() == p.resolve() for p in loaded)


def _check_user_folder(folder: Path) -> None:
    """A user folder must exist; YAML files directly in it would be ignored, so they are an
    error (likely a kind's sub-folder given instead of the catalog folder)."""
    if not folder.is_dir():
        raise CatalogError(f"{folder}: catalog folder not found")
    loose = sorted(folder.glob("*.y*ml"))
    if loose:
        raise CatalogError(
            f"{loose[0]}: not read: entries go in the sub-folders "
            + ", ".join(f"{kind}/" for kind in KINDS)
            + f" of a catalog folder (is {folder} one of them?)"
        )


def load_catalog(folders: Folders = None) -> Catalog:
    """The shipped catalog with the user folders' entries added on top (an entry replaces
    the shipped or lower-precedence one with the same id); cross-references checked after."""
    users = user_catalog_dirs(folders)
    for folder in users:
        _check_user_folder(folder)
    # a hash-checked snapshot of the validated catalog (issue #16: the YAML costs ~0.3 CPU s)
    return cached([DEFAULT_CATALOG_DIR, *users], lambda: _read_catalog(users))


def _read_catalog(users: tuple[Path, ...]) -> Catalog:
    """Read, validate and cross-check the shipped catalog and the user folders' entries."""
    tables: dict[str, dict[str, Any]] = {}
    sources: dict[tuple[str, str], Path] = {}  # (kind, id) -> the file the entry came from
    for kind, model in KINDS.items():
        if not (DEFAULT_CATALOG_DIR / kind).is_dir():
            raise CatalogError(f"{DEFAULT_CATALOG_DIR / kind}: catalog folder not found")
        table: dict[str, Any] = {}
        for base in [DEFAULT_CATALOG_DIR, *reversed(users)]:  # lowest precedence first
            if (base / kind).is_dir():  # a user folder may lack any kind
                for key, (entry, path) in _read_folder(base / kind, model).items():
                    table[key] = entry
                    sources[kind, key] = path
        tables[kind] = table
    cat = Catalog(
        **tables,
        root=str(DEFAULT_CATALOG_DIR),
        user_folders=tuple(str(p) for p in users),
    )
    _check_references(cat, sources)
    return cat


def _check_references(cat: Catalog, sources: dict[tuple[str, str], Path]) -> None:
    """Dangling references: quant GPU lists, engine quant lists and API model ids must name
    known entries; the
    message names the file that holds the reference."""
    for quant in cat.quants.values():
        if quant.gpus != "all":
            for gpu_id in quant.gpus:
                if gpu_id not in cat.gpus:
                    raise CatalogError(
                        f"{sources['quants', quant.id]}: gpus: "
                        + unknown_name_message("GPU", gpu_id, cat.gpus)
                    )
    for engine in cat.engines.values():
        for quant_id in engine.quants:
            if quant_id not in cat.quants:
                raise CatalogError(
                    f"{sources['engines', engine.id]}: quants: "
                    + unknown_name_message("quantization", quant_id, cat.quants)
                )
    for prov in cat.apis.values():
        for off in prov.offerings:
            if off.model not in cat.models:
                raise CatalogError(
                    f"{sources['apis', prov.id]}: offering {off.provider_model_id}: "
                    + unknown_name_message("model", off.model, cat.models)
                )
