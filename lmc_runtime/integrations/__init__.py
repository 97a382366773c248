"""lmc-runtime inside agent frameworks: executors and tools built on
:class:`~lmc_runtime.Computer` (or a remote one), one module per framework.

Each module needs its framework's extra (``pip install 'lmc-runtime[langchain]'``...)
and raises :class:`~lmc_runtime.errors.MissingExtra` when it is absent.
"""
