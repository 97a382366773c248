"""envd's message types: ``filesystem_pb2`` and ``process_pb2``, made by protoc
from E2B's schema (``filesystem.proto`` and ``process.proto`` here, as in
``spec/envd/`` of e2b-dev/E2B); ``_generate.py`` says how."""
