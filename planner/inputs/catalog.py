"""The catalog: id -> spec for GPUs, models, quantizations, engines and API offerings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from planner.errors import CatalogError, InputError, unknown_name_message
from planner.inputs.loading import load_yaml_model, package_folder
from planner.schema.api import ApiOffering, ApiProvider
from planner.schema.engine import EngineProfile
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.quant import Quant

M = TypeVar("M", bound=BaseModel)

# catalogs/ of the repository, installed as the package planner.catalogs
DEFAULT_CATALOG_DIR = package_folder("planner.catalogs")


@dataclass(frozen=True)
class Catalog:
    """Every known spec, keyed by id. Frozen and picklable: plans fan out across processes."""

    gpus: dict[str, Gpu] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    quants: dict[str, Quant] = field(default_factory=dict)
    engines: dict[str, EngineProfile] = field(default_factory=dict)
    apis: dict[str, ApiProvider] = field(default_factory=dict)
    root: str = ""

    def __repr__(self) -> str:
        return (
            f"Catalog({self.root!r}: {len(self.gpus)} GPUs, {len(self.models)} models, "
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
        return Catalog(
            gpus=self.gpus,
            models={**self.models, model.id: model},
            quants=self.quants,
            engines=self.engines,
            apis=self.apis,
            root=self.root,
        )


def _lookup(table: dict[str, M], key: str, kind: str) -> M:
    try:
        return table[key]
    except KeyError:
        raise InputError(unknown_name_message(kind, key, table)) from None


def _load_folder(folder: Path, model: type[M]) -> dict[str, M]:
    """Load one YAML per entry; the file name must equal the id, ids must be unique."""
    out: dict[str, M] = {}
    if not folder.is_dir():
        raise CatalogError(f"{folder}: catalog folder not found")
    for path in sorted(folder.glob("*.y*ml")):
        entry = load_yaml_model(path, model)
        entry_id = entry.id  # type: ignore[attr-defined]
        if entry_id != path.stem:
            raise CatalogError(f"{path}: id '{entry_id}' does not match the file name")
        if entry_id in out:
            raise CatalogError(f"{path}: duplicate id '{entry_id}'")
        out[entry_id] = entry
    return out


def catalog_dir(explicit: str | Path | None = None) -> Path:
    """Where the catalog lives: an explicit path, $PLANNER_CATALOG_DIR, or the project's."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("PLANNER_CATALOG_DIR")
    return Path(env) if env else DEFAULT_CATALOG_DIR


def load_catalog(root: str | Path | None = None) -> Catalog:
    """Read every catalog folder and check cross-references."""
    base = catalog_dir(root)
    cat = Catalog(
        gpus=_load_folder(base / "gpus", Gpu),
        models=_load_folder(base / "models", Model),
        quants=_load_folder(base / "quants", Quant),
        engines=_load_folder(base / "engines", EngineProfile),
        apis=_load_folder(base / "apis", ApiProvider),
        root=str(base),
    )
    _check_references(cat)
    return cat


def _check_references(cat: Catalog) -> None:
    """Dangling references: quant GPU lists and API model ids must name known entries."""
    for quant in cat.quants.values():
        if quant.gpus != "all":
            for gpu_id in quant.gpus:
                if gpu_id not in cat.gpus:
                    raise CatalogError(
                        f"quants/{quant.id}.yaml: gpus: "
                        + unknown_name_message("GPU", gpu_id, cat.gpus)
                    )
    for prov in cat.apis.values():
        for off in prov.offerings:
            if off.model not in cat.models:
                raise CatalogError(
                    f"apis/{prov.id}.yaml: offering {off.provider_model_id}: "
                    + unknown_name_message("model", off.model, cat.models)
                )
