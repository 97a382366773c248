"""Checkpoints, rollback and fork of a :class:`~lmc_runtime.remote.RemoteComputer`'s
session: the methods of :class:`~lmc_runtime.computer_like.BranchingLike`, on the
service's routes (``/v1/sessions/{id}/checkpoints``, ``/rollback``, ``/fork``).

A checkpoint of the service keeps the session's working directory too, and a
rollback restores it; a fork is a new session (its own sandbox and limits) with
the working directory copied and the Python variables carried by value. The
errors are the local Computer's: :class:`~lmc_runtime.errors.CheckpointNotFound`
(an unknown or gone checkpoint) and
:class:`~lmc_runtime.errors.CheckpointsUnsupported`, raised as their remote
subclasses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ..backends.checkpoints import CheckpointInfo
from ..errors import CheckpointsUnsupported, RemoteCheckpointNotFound
from .rest import Api

if TYPE_CHECKING:
    from .models import RemoteTimeouts

__all__ = ["RemoteBranching"]

T = TypeVar("T")

#: The languages whose state the service can checkpoint.
_CHECKPOINTED = ("python",)


class RemoteBranching:
    """The checkpoint and fork methods of ``RemoteComputer``."""

    if TYPE_CHECKING:  # what they use of the RemoteComputer
        url: str
        token: str | None
        transport: Any
        timeouts: RemoteTimeouts

        def __init__(self, url: str, **kwargs: Any) -> None: ...
        def resolve(self, language: str) -> str | None: ...
        async def __aenter__(self) -> Self: ...

    async def _open_api(self) -> Api:
        raise NotImplementedError

    def _call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        raise NotImplementedError

    def _python(self, language: str) -> None:
        name = self.resolve(language) or language
        if name not in _CHECKPOINTED:
            raise CheckpointsUnsupported(f"checkpoints are not supported for {name}")

    async def acheckpoint(self, language: str = "python") -> str:
        """Freeze a copy of the session's Python state and of its working
        directory; the checkpoint's id."""
        self._python(language)
        api = await self._open_api()
        made = await api.json("POST", api.path("/checkpoints"))
        return str(made["id"])

    async def arollback(self, checkpoint_id: str) -> None:
        """Make the session's Python state and working directory the checkpoint's;
        the checkpoint stays, for another rollback."""
        api = await self._open_api()
        await api.json("POST", api.path("/rollback"), json={"checkpoint": checkpoint_id})

    async def acheckpoints(self) -> list[CheckpointInfo]:
        """The session's checkpoints, oldest first (``bytes``: memory and files)."""
        api = await self._open_api()
        listed = await api.json("GET", api.path("/checkpoints"))
        return [_info(each) for each in listed.get("checkpoints", [])]

    async def acheckpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """One of the session's checkpoints, as :meth:`acheckpoints` lists it."""
        for info in await self.acheckpoints():
            if info.id == checkpoint_id:
                return info
        raise RemoteCheckpointNotFound(
            f"no checkpoint {checkpoint_id!r}", status=404, code="checkpoint_not_found"
        )

    async def adrop_checkpoint(self, checkpoint_id: str) -> None:
        """End the checkpoint's frozen process and remove its files."""
        api = await self._open_api()
        await api.request("DELETE", api.path(f"/checkpoints/{checkpoint_id}"))

    async def afork(self, language: str = "python") -> Self:
        """A new, open RemoteComputer on a fork of this session (deleted when it
        closes); its first run says what of the state did not carry over."""
        other = self._forked(await self._fork(language))
        await other.__aenter__()  # the caller's to close
        return other

    async def _fork(self, language: str) -> str:
        self._python(language)
        api = await self._open_api()
        made = await api.json("POST", api.path("/fork"))
        return str(made["id"])

    def _forked(self, session_id: str) -> Self:
        return type(self)(
            self.url,
            token=self.token,
            transport=self.transport,
            timeouts=self.timeouts,
            session=session_id,
            delete_on_close=True,
        )

    # -- the sync layer ------------------------------------------------------------

    def checkpoint(self, language: str = "python") -> str:
        """The sync form of :meth:`acheckpoint`."""
        return self._call(self.acheckpoint, language)

    def rollback(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`arollback`."""
        self._call(self.arollback, checkpoint_id)

    def checkpoints(self) -> list[CheckpointInfo]:
        """The sync form of :meth:`acheckpoints`."""
        return self._call(self.acheckpoints)

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """The sync form of :meth:`acheckpoint_info`."""
        return self._call(self.acheckpoint_info, checkpoint_id)

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`adrop_checkpoint`."""
        self._call(self.adrop_checkpoint, checkpoint_id)

    def fork(self, language: str = "python") -> Self:
        """The sync form of :meth:`afork`: the new RemoteComputer opens on first
        use of its sync methods and is closed with ``close``."""
        return self._forked(self._call(self._fork, language))


def _info(data: dict[str, Any]) -> CheckpointInfo:
    return CheckpointInfo(
        id=str(data["id"]),
        language="python",
        created_at=float(data["created_at"]),
        bytes=int(data["bytes"]),
        alive=bool(data.get("alive", True)),
        pid=0,
    )
