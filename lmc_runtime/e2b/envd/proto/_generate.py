"""Makes ``filesystem_pb2`` and ``process_pb2`` from E2B's envd schema (the
``.proto`` files beside this module, copied from ``spec/envd/`` of e2b-dev/E2B).

Run ``python lmc_runtime/e2b/envd/proto/_generate.py`` after changing a
``.proto``; it needs ``grpcio-tools`` 1.62 (protoc 25), at development time
only (it imports nothing of lmc_runtime): code from that protoc runs on
protobuf 4.21 to 5.x, the range the ``[serve]`` extra allows.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

__all__ = ["HEADER", "SCHEMAS", "generate"]

logger = logging.getLogger(__name__)

SCHEMAS = ("filesystem.proto", "process.proto")
HEADER = (
    "# Made by `python lmc_runtime/e2b/envd/proto/_generate.py` (grpcio-tools 1.62,\n"
    "# protoc 25) from the .proto beside it, E2B's envd schema. Do not edit.\n"
)

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[3]


def generate(out: Path) -> list[Path]:
    """Write the generated modules for :data:`SCHEMAS` into ``out``; returns their paths."""
    import grpc_tools  # type: ignore[import-not-found]
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"

    relative = _HERE.relative_to(_ROOT)
    with tempfile.TemporaryDirectory() as scratch:
        args = ["protoc", f"-I{_ROOT}", f"-I{well_known}"]
        args += [f"--python_out={scratch}", f"--pyi_out={scratch}"]
        args += [str(_HERE / name) for name in SCHEMAS]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed: {' '.join(args)}")
        written = []
        for made in sorted((Path(scratch) / relative).glob("*_pb2.py*")):
            target = out / made.name
            target.write_text(HEADER + made.read_text())
            written.append(target)
    return written


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else _HERE):
        logger.info("wrote %s", path)
