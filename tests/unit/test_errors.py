"""lmc_runtime.errors: every exception derives from LMCError, MessageError is a
ValueError carrying ``reason``, and the hierarchy matches the module docstring."""

from __future__ import annotations

import inspect

import pytest

import lmc_runtime
from lmc_runtime import errors
from lmc_runtime.errors import (
    BackendError,
    BackendUnavailable,
    KernelDied,
    KernelStartError,
    LMCError,
    MessageError,
    UsageError,
)

EXCEPTIONS = [getattr(errors, name) for name in errors.__all__]


def test_all_lists_every_exception_the_module_defines() -> None:
    defined = {
        name
        for name, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: e.__name__)
def test_every_exception_derives_from_lmc_error(exc: type[Exception]) -> None:
    assert issubclass(exc, LMCError)
    assert issubclass(exc, Exception)


@pytest.mark.parametrize(
    ("exc", "parent"),
    [
        (MessageError, ValueError),
        (UsageError, RuntimeError),
        (BackendUnavailable, BackendError),
        (KernelStartError, BackendError),
        (KernelDied, BackendError),
    ],
)
def test_hierarchy(exc: type[Exception], parent: type[Exception]) -> None:
    assert issubclass(exc, parent)


def test_backend_errors_are_not_message_or_usage_errors() -> None:
    for exc in (BackendError, BackendUnavailable, KernelStartError, KernelDied):
        assert not issubclass(exc, (MessageError, UsageError, ValueError))


def test_message_error_carries_its_reason_and_is_caught_as_value_error() -> None:
    with pytest.raises(ValueError) as info:
        raise MessageError("role: field required")
    assert isinstance(info.value, MessageError)
    assert info.value.reason == "role: field required"
    assert str(info.value) == "role: field required"


def test_backend_unavailable_names_the_language_and_reason() -> None:
    exc = BackendUnavailable("r", "Rscript is not on PATH")
    assert (exc.language, exc.reason) == ("r", "Rscript is not on PATH")
    assert str(exc) == "r is not available: Rscript is not on PATH"


def test_kernel_died_keeps_description_and_exit_code() -> None:
    exc = KernelDied("kernel exited", exit_code=-9)
    assert (exc.description, exc.exit_code, str(exc)) == ("kernel exited", -9, "kernel exited")
    assert KernelDied("gone").exit_code is None


def test_package_reexports_the_same_classes() -> None:
    exported = [name for name in lmc_runtime.__all__ if name in errors.__all__]
    assert exported
    for name in exported:
        assert getattr(lmc_runtime, name) is getattr(errors, name)


def test_package_exports_only_what_users_catch() -> None:
    """The top level stays short: at most 25 names, and none of the server's refusals."""
    assert len(lmc_runtime.__all__) <= 25
    assert len(set(lmc_runtime.__all__)) == len(lmc_runtime.__all__)
    for name in ("LMCError", "UsageError", "MessageError", "KernelStartError", "RemoteError"):
        assert name in lmc_runtime.__all__
    for name in lmc_runtime.__all__:
        assert hasattr(lmc_runtime, name)
        exc = getattr(lmc_runtime, name)
        assert not (isinstance(exc, type) and issubclass(exc, errors.ServiceError)), name
    assert not hasattr(lmc_runtime, "SessionNotFound")


def test_the_servers_refusals_live_in_the_service() -> None:
    """lmc_runtime.errors keeps only ServiceError and the credential refusals that
    lmc mcp shares; every other refusal is in lmc_runtime.service.errors, or in
    the folder below the service that finds it (a network policy's, an
    environment's), and named by lmc_runtime.service.errors too."""
    from lmc_runtime.service import errors as refusals

    here = {
        name
        for name, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, errors.ServiceError) and obj.__module__ == errors.__name__
    }
    assert here == {"ServiceError", "TokenRejected", "OriginNotAllowed", "HostNotAllowed"}
    moved = {
        name
        for name, obj in inspect.getmembers(refusals, inspect.isclass)
        if issubclass(obj, errors.ServiceError) and obj.__module__ == refusals.__name__
    }
    assert len(moved) == 27
    below = {"BadNetworkPolicy", "NetworkNotAllowed", "UnknownEnvironment", "EnvironmentBroken"}
    for name in below:
        assert getattr(refusals, name).__module__.split(".")[1] in ("egress", "environments")
    assert moved | below | {"ServiceError"} == set(refusals.__all__)


def test_a_templated_error_is_still_an_exception_in_all_but_its_constructor() -> None:
    # Built from a message template and fields, it keeps what exceptions do: one
    # argument (its message), identity equality, a hash, an exception's repr.
    died = KernelDied("the kernel ended", exit_code=9)
    assert died.args == ("the kernel ended",)
    assert repr(died) == "KernelDied('the kernel ended')"
    assert died != KernelDied("the kernel ended", exit_code=9)
    assert {died: 1}[died] == 1
    with pytest.raises(TypeError):
        KernelDied("the kernel ended", 9)  # type: ignore[call-arg]  # exit_code is keyword-only


def test_a_refusal_built_from_a_template_keeps_its_message_attribute() -> None:
    from lmc_runtime.sandbox.fileops import NoSuchFile
    from lmc_runtime.service.errors import SessionNotFound

    refused = SessionNotFound("s1")
    assert (refused.message, refused.session_id) == ("no session 's1'", "s1")
    missing = NoSuchFile("a/b")
    assert (missing.message, missing.path, str(missing)) == (
        "no file 'a/b' in the session",
        "a/b",
        "no file 'a/b' in the session",
    )
