"""Typed, frozen run parameters — no Dagster import.

A paper declares its parameters as frozen dataclasses in `assets/<slug>/params.py`; `parse`
turns the profile's merged mapping from params.yaml into them. A missing or unknown key, or a
value of the wrong type, is an error that names its path (`viar.cpu.ar.width`), raised before
any work starts.

Supported field types: bool, int, float (ints accepted), str, Any, X | None, Literal[...],
tuple[X, ...] and tuple[X, Y] (from YAML lists), dict[str, X] / Mapping[str, X] (read-only
mappings), and nested dataclasses. Dataclass fields with defaults may be left out.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

_MISSING = dataclasses.MISSING


class ParamsError(ValueError):
    """A params.yaml value does not fit the paper's declared parameters."""


def parse(cls: type, data: Any, path: str) -> Any:
    """`data` (the merged profile mapping) as an instance of the frozen dataclass `cls`."""
    return _convert(cls, data, path)


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _convert(tp: Any, value: Any, path: str) -> Any:
    if tp is Any:
        return _freeze(value)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, path)
            except ParamsError as err:
                errors.append(str(err))
        raise ParamsError(errors[0] if len(errors) == 1 else f"{path}: {value!r} fits none of {tp}")
    if origin is Literal:
        if value not in get_args(tp):
            raise ParamsError(f"{path}: {value!r} is not one of {list(get_args(tp))}")
        return value
    if _is_dataclass_type(tp):
        return _dataclass(tp, value, path)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ParamsError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ParamsError(f"{path}: expected {len(args)} items, got {len(value)}")
        return tuple(_convert(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin in (dict, Mapping, typing.Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ParamsError(f"{path}: expected a mapping, got {type(value).__name__} {value!r}")
        key_tp, val_tp = get_args(tp) or (str, Any)
        return types.MappingProxyType({_convert(key_tp, k, f"{path}.{k}"): _convert(val_tp, v, f"{path}.{k}")
                                       for k, v in value.items()})
    if tp is bool:
        if not isinstance(value, bool):
            raise ParamsError(f"{path}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamsError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamsError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ParamsError(f"{path}: expected a string, got {value!r}")
        return value
    raise TypeError(f"{path}: unsupported parameter type {tp!r}")


def _dataclass(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise ParamsError(f"{path}: expected a mapping for {cls.__name__}, got {type(value).__name__} {value!r}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ParamsError(f"unknown key {path}.{unknown[0]}" + (f" (and {unknown[1:]})" if unknown[1:] else "")
                          + f"; {cls.__name__} takes {', '.join(fields)}")
    kwargs = {}
    for name, field in fields.items():
        if name in value:
            kwargs[name] = _convert(hints[name], value[name], f"{path}.{name}")
        elif field.default is _MISSING and field.default_factory is _MISSING:
            raise ParamsError(f"missing key {path}.{name} ({cls.__name__})")
    return cls(**kwargs)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain dicts/lists of a parsed value (dataclasses included), e.g. for a JSON sidecar."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: thaw(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
