"""Jupyter kernels on a gateway (Kernel Gateway, Enterprise Gateway).

:mod:`.rest` speaks the gateway's REST API, :mod:`.channels` a kernel's WebSocket,
:mod:`.interpreter` runs code on such a kernel and :mod:`.startup` is the
runtime's startup code sent to it.
"""
