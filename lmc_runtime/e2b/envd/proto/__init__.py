"""envd's message types: ``filesystem_pb2`` and ``process_pb2``, made by protoc
from E2B's schema (``docs/reference/envd/``, as in ``spec/envd/`` of
e2b-dev/E2B); ``docs/reference/envd/generate.py`` says how."""
