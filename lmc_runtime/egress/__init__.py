"""What a sandboxed session may reach on the network, and how.

* :mod:`.policy`: allow and deny lists (names with ``*.`` wildcards, addresses,
  networks, optional ports), narrowed by a session within the server's ceiling.
* :mod:`.gateway`: the server-side gateway that serves a session's listening
  sockets (made inside its network namespace and handed to the server): its DNS,
  its intercepted TCP connections and its explicit HTTP proxy.
* :mod:`.secrets`: secrets brokered on the way out, never inside the sandbox.
"""

from __future__ import annotations

from .hooks import Interceptor, SessionSockets

__all__ = ["Interceptor", "SessionSockets"]
