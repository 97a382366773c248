"""The web console of ``lmc serve``, at ``/ui`` (see :mod:`.routes`)."""

from .routes import CSP, console_router, page_policy

__all__ = ["CSP", "console_router", "page_policy"]
