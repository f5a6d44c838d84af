"""The catalogue of vendor secret formats, ``knowledge_base/secrets.yaml``: schema, validation, loading.

Each format is an RE2 pattern (linear time) with what of a match to keep, the substrings that gate it
(``triggers``), the vendor's documentation URL and lines that must (``examples``) and must not
(``counter_examples``) be redacted. :func:`load_secret_formats` raises :class:`SecretsCatalogError`
(a configuration error) naming the file and line of the first problem: invalid YAML, an unknown field,
a pattern RE2 rejects, ``keep: prefix`` without a group, or an id used twice.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import re2
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin
from diag_service.yamlio import load_yaml_model

#: RE2's memory budget per compiled pattern (bytes); far above what the catalogue's patterns need.
RE2_MAX_MEM = 64 << 20


class SecretsCatalogError(DiagError):
    """The secret-format catalogue is malformed; the message names the file and line."""

    kind = ErrorKind.CONFIG


def compile_re2(pattern: str) -> re2._Regexp:
    """``pattern`` compiled by RE2 with :data:`RE2_MAX_MEM`. Raises ``re2.error`` when RE2 rejects it."""
    opts = re2.Options()
    opts.max_mem = RE2_MAX_MEM
    return re2.compile(pattern, opts)


class Example(BaseModel):
    """A line that must be redacted, and the part of it (``secret``) that must be gone afterwards."""

    model_config = ConfigDict(extra="forbid")

    line: str = Field(min_length=1)
    secret: str = Field(min_length=4)

    @model_validator(mode="after")
    def _secret_in_line(self) -> Example:
        if self.secret not in self.line:
            raise ValueError("secret is not part of line")
        return self


class SecretFormat(BaseModel):
    """One vendor secret format (see the header of ``knowledge_base/secrets.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    pattern: str = Field(min_length=1)
    keep: Literal["none", "prefix"]
    quoted: bool = False
    triggers: list[str] = Field(min_length=1)
    source: str = Field(pattern=r"^https://\S+$")
    examples: list[Example] = Field(min_length=1)
    counter_examples: list[str] = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _re2(cls, v: str) -> str:
        try:
            compile_re2(v)
        except re2.error as exc:
            raise ValueError(f"RE2 rejects the pattern: {exc}") from exc
        return v

    @field_validator("triggers")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        bad = [t for t in v if not t or t != t.lower()]
        if bad:
            raise ValueError(f"triggers must be non-empty lower-case substrings, got {bad}")
        return v

    @model_validator(mode="after")
    def _groups(self) -> SecretFormat:
        groups = compile_re2(self.pattern).groups
        if self.keep == "prefix" and groups < 1:
            raise ValueError("keep: prefix needs a capturing group (the part kept)")
        if self.quoted and self.keep != "prefix":
            raise ValueError("quoted applies to keep: prefix only")
        return self


class SecretCatalog(BaseModel):
    """The document: ``formats``, in the order they run."""

    model_config = ConfigDict(extra="forbid")

    formats: list[SecretFormat] = Field(min_length=1)

    @field_validator("formats")
    @classmethod
    def _unique(cls, formats: list[SecretFormat]) -> list[SecretFormat]:
        seen: set[str] = set()
        for f in formats:
            if f.id in seen:
                raise ValueError(f"format id {f.id!r} used twice")
            seen.add(f.id)
        return formats


def default_secrets_path() -> Path:
    """The built-in ``knowledge_base/secrets.yaml``."""
    return builtin("knowledge_base", "secrets.yaml")


def load_secret_formats(path: str | Path | None = None) -> list[SecretFormat]:
    """The formats of the catalogue at ``path`` (default: the built-in one), in order.

    Raises :class:`SecretsCatalogError` with file and line."""
    p = Path(path) if path is not None else default_secrets_path()
    cat, _text, _node = load_yaml_model(p, SecretCatalog, SecretsCatalogError)
    return cat.formats


@cache
def builtin_secret_formats() -> tuple[SecretFormat, ...]:
    """The built-in catalogue, read and validated once per process."""
    return tuple(load_secret_formats())


__all__ = ["Example", "SecretCatalog", "SecretFormat", "SecretsCatalogError", "builtin_secret_formats",
           "compile_re2", "default_secrets_path", "load_secret_formats"]
