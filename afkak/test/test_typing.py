"""The types users see stay precise, and mypy stays strict where it is.

Two guards against regressions that mypy alone would not report: setup.cfg
keeps mypy --strict's checks on the packages that have them (a removed line
turns the checks off silently), and every public call of the public classes
that returns a Deferred says what it fires with (``Deferred[Any]`` says
nothing; mypy accepts it).
"""

from __future__ import annotations

import configparser
import inspect
import os
import shutil
import tempfile
import typing
import unittest
from collections.abc import Callable, Iterator

from twisted.internet.defer import Deferred

import afkak
import afkak.admin
import afkak.client
import afkak.connection
import afkak.consumer
import afkak.group
import afkak.producer
import afkak.testing

SETUP_CFG = os.path.join(os.path.dirname(os.path.dirname(afkak.__file__)), "setup.cfg")

#: The packages type-checked with mypy --strict's checks.
STRICT_PACKAGES = (
    "afkak.client",
    "afkak.connection",
    "afkak.consumer",
    "afkak.producer",
    "afkak.group",
)

#: mypy --strict's per-module checks (the global ones, warn_unused_ignores and
#: warn_redundant_casts, are in [mypy] itself).
STRICT_OPTIONS = (
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "disallow_untyped_calls",
    "disallow_untyped_decorators",
    "disallow_any_generics",
    "disallow_subclassing_any",
    "check_untyped_defs",
    "warn_return_any",
    "no_implicit_reexport",
    "strict_equality",
    "extra_checks",
)

PUBLIC_MODULES = (
    afkak,
    afkak.client,
    afkak.connection,
    afkak.producer,
    afkak.consumer,
    afkak.group,
    afkak.admin,
    afkak.testing,
)

#: Public calls whose Deferred fires with the decoded response of whatever
#: request message was given: its class is ``afkak.protocol.response_class(
#: request.API_KEY)``, which Python's types cannot compute from the argument
#: without every generated request class naming its response type.
RAW_REQUESTS = frozenset(
    {
        "send_request_to_broker",
        "send_request_to_any_broker",
        "send_request_to_coordinator",
        "request",  # BrokerConnection.request
    }
)


def strict_sections(path: str) -> dict[str, dict[str, str]]:
    """Module pattern -> options, for each [mypy-...] section of a setup.cfg."""
    parser = configparser.ConfigParser()
    parser.read(path)
    found = {}
    for section in parser.sections():
        if section.startswith("mypy-"):
            for pattern in section[len("mypy-") :].split(","):
                found[pattern.strip()] = dict(parser[section])
    return found


def missing_strictness(path: str, packages: tuple[str, ...]) -> list[str]:
    sections = strict_sections(path)
    problems = []
    for package in packages:
        options = sections.get(f"{package}.*")
        if options is None:
            problems.append(f"{package}: no [mypy-{package}.*] section")
            continue
        for option in STRICT_OPTIONS:
            if options.get(option, "").strip() != "True":
                problems.append(f"{package}: {option} is not True")
    return problems


def _mentions_any(annotation: object) -> bool:
    if annotation is typing.Any:
        return True
    return any(_mentions_any(arg) for arg in typing.get_args(annotation))


def _deferreds_in(annotation: object) -> Iterator[object]:
    if (typing.get_origin(annotation) or annotation) is Deferred:
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _deferreds_in(arg)


def _public_classes() -> Iterator[tuple[str, type]]:
    seen: set[type] = set()
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and obj not in seen and obj.__module__.startswith("afkak"):
                # typing.Protocol classes describe what afkak calls (hooks whose
                # result it ignores), not calls a user makes.
                if not getattr(obj, "_is_protocol", False):
                    seen.add(obj)
                    yield f"{module.__name__}.{name}", obj


def _public_functions() -> Iterator[tuple[str, Callable[..., object]]]:
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and obj.__module__.startswith("afkak"):
                yield f"{module.__name__}.{name}", obj


def _vague_returns(where: str, function: Callable[..., object]) -> list[str]:
    vague = []
    for signature in typing.get_overloads(function) or [function]:
        returns = typing.get_type_hints(signature).get("return")
        if returns is None:
            vague.append(f"{where}: no return type")
        for deferred in _deferreds_in(returns):
            if not typing.get_args(deferred) or _mentions_any(deferred):
                vague.append(f"{where} -> {deferred}")
    return vague


def vague_deferreds(classes: typing.Iterable[tuple[str, type]]) -> list[str]:
    """Public methods and properties whose Deferred result mentions Any (or has no type)."""
    vague = []
    for where, cls in classes:
        for attr, static in inspect.getmembers_static(cls):
            if attr.startswith("_") or attr in RAW_REQUESTS:
                continue
            function = static.fget if isinstance(static, property) else static
            function = getattr(function, "__func__", function)
            if inspect.isfunction(function) and function.__module__.startswith("afkak"):
                vague.extend(_vague_returns(f"{where}.{attr}", function))
    return vague


class StrictConfigTests(unittest.TestCase):
    def test_strict_packages_keep_their_checks(self) -> None:
        self.assertEqual(missing_strictness(SETUP_CFG, STRICT_PACKAGES), [])

    def test_a_dropped_check_is_found(self) -> None:
        with open(SETUP_CFG) as f:
            text = f.read()
        planted = os.path.join(self.mktemp_dir(), "setup.cfg")
        with open(planted, "w") as f:
            f.write(text.replace("warn_return_any = True", "warn_return_any = False"))
        self.assertIn(
            "afkak.producer: warn_return_any is not True",
            missing_strictness(planted, STRICT_PACKAGES),
        )
        self.assertEqual(
            missing_strictness(planted, ("afkak.nowhere",)),
            ["afkak.nowhere: no [mypy-afkak.nowhere.*] section"],
        )

    def mktemp_dir(self) -> str:
        path = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, path)
        return path


class PublicDeferredTests(unittest.TestCase):
    def test_public_deferreds_say_what_they_fire_with(self) -> None:
        self.assertEqual(vague_deferreds(_public_classes()), [])

    def test_public_functions_deferreds_say_what_they_fire_with(self) -> None:
        functions = list(_public_functions())
        self.assertIn("afkak.group.describe_group", dict(functions))
        self.assertEqual([v for w, f in functions for v in _vague_returns(w, f)], [])

    def test_a_vague_deferred_is_found(self) -> None:
        class Vague:
            def some(self) -> Deferred[typing.Any]:
                raise NotImplementedError

            def nested(self) -> Deferred[dict[str, typing.Any]] | None:
                raise NotImplementedError

            def precise(self) -> Deferred[int]:
                raise NotImplementedError

        Vague.__module__ = "afkak.planted"
        for f in (Vague.some, Vague.nested, Vague.precise):
            f.__module__ = "afkak.planted"

        def untyped():  # type: ignore[no-untyped-def]
            raise NotImplementedError

        self.assertEqual(_vague_returns("untyped", untyped), ["untyped: no return type"])
        found = vague_deferreds([("Vague", Vague)])
        self.assertEqual(
            found,
            [
                "Vague.nested -> twisted.internet.defer.Deferred[dict[str, typing.Any]]",
                "Vague.some -> twisted.internet.defer.Deferred[typing.Any]",
            ],
        )
