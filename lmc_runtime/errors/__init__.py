"""The exceptions lmc-runtime raises.

Errors in *user code* are never exceptions: they come back as computer-role
messages. The classes below are for failures of the runtime itself, and for
misuse of its API; they live by audience (:mod:`.runtime` for the library's users,
:mod:`.service` for the service's refusals, :mod:`.remote` for a client of
``lmc serve``) and are all named here. Every one derives from :class:`LMCError`::

    LMCError
    ├── MessageError          a message is malformed (carries a precise reason)
    ├── UsageError            the API was used wrongly (closed Computer, wrong loop)
    │   ├── ArgumentTypeError     an argument of the wrong type (also a TypeError)
    │   ├── ArgumentValueError    an argument with a value it does not take (a ValueError)
    │   ├── CheckpointsUnsupported  checkpoints asked of a language that has none
    │   └── CheckpointNotFound    no checkpoint has that id, or it is gone
    ├── MissingExtra          an optional part's packages are not installed (an ImportError)
    ├── SandboxError          a session's sandbox could not be set up or used
    │   ├── ForkFailed            a kernel could not be forked into its sandbox
    │   ├── SandboxUnavailable    bubblewrap is missing or cannot create namespaces
    │   └── UnsafePath            a path into a session could escape it (``..``, links)
    ├── StoreError            a thread store failed (I/O, corrupt records)
    │   ├── InvalidThreadId       a thread id is unsafe (path separators, ``..``)
    │   ├── ThreadNotFound        no thread has that id
    │   └── ThreadExists          a thread with that id already exists
    ├── BackendError          a backend failed; dependency errors are chained
    │   ├── BackendUnavailable    the language cannot run on this machine
    │   ├── KernelStartError      a kernel or process did not come up in time
    │   ├── KernelDied            a kernel or process ended unexpectedly
    │   ├── CheckpointFailed      an interpreter did not take a checkpoint
    │   └── GatewayError          a Jupyter gateway refused, failed or went away
    └── ServiceError          ``lmc serve`` or ``lmc mcp`` refuses a request
        └── TokenRejected, OriginNotAllowed, HostNotAllowed
            (the service's other refusals are in :mod:`lmc_runtime.service.errors`)
    RemoteError           a remote ``lmc serve`` refused a client's request
        ├── RemoteUnauthorized, RemoteSessionNotFound (RemoteSessionEnded,
        │   RemoteSessionLost), RemoteBusy
        ├── RemoteCapacityExceeded, RemoteTooLarge, RemoteUnavailable
        ├── RemotePathError (RemoteFileNotFound, RemoteFileExists)
        ├── RemoteCheckpointNotFound, RemoteCheckpointsUnsupported (also the
        │   local CheckpointNotFound and CheckpointsUnsupported)
        └── ConnectionLost        the connection broke mid-request

The executor turns :class:`MessageError` and :class:`BackendError` into
"not understood" or status replies, so an agent loop that only iterates over
``Computer.run`` never sees them.
"""

from __future__ import annotations

from . import remote, runtime, service
from .remote import *  # noqa: F403
from .runtime import *  # noqa: F403
from .service import *  # noqa: F403

__all__ = runtime.__all__ + service.__all__ + remote.__all__

# Each class keeps its public name, ``lmc_runtime.errors.X``, in tracebacks and reprs.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
