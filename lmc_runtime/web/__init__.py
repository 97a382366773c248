"""What every HTTP door of lmc-runtime is made of, shared by ``lmc serve``
(:mod:`lmc_runtime.service`) and ``lmc mcp --http`` (:mod:`lmc_runtime.mcp`):
the bearer token, Origin and Host checks (:mod:`.auth`), the listening socket
(:mod:`.sockets`), the connection limits and the guarded HTTP protocols
(:mod:`.connections`, :mod:`.guarded`), the hardened uvicorn server
(:mod:`.hardened`) and middleware for one type of scope (:mod:`.scoped`). It
imports neither of them."""
