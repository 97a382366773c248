"""Makes ``lmc_runtime/e2b/envd/proto/filesystem_pb2`` and ``process_pb2`` from
E2B's envd schema (the ``.proto`` files beside this script, copied from
``spec/envd/`` of e2b-dev/E2B).

Run ``python docs/reference/envd/generate.py`` after changing a ``.proto``; it
needs ``grpcio-tools`` 1.62 (protoc 25), at development time only (it imports
nothing of lmc_runtime): code from that protoc runs on protobuf 4.21 to 5.x, the
range the ``[serve]`` extra allows. Nothing reads the schema at run time: the
generated modules carry it. protoc is given each schema under the package's
module path, the name the generated modules register it by.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["HEADER", "PACKAGE_DIR", "SCHEMAS", "generate"]

logger = logging.getLogger(__name__)

SCHEMAS = ("filesystem.proto", "process.proto")
HEADER = (
    "# Made by `python docs/reference/envd/generate.py` (grpcio-tools 1.62,\n"
    "# protoc 25) from E2B's envd schema in docs/reference/envd/. Do not edit.\n"
)

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[2]
#: Where the generated modules live, relative to the checkout (and the name
#: protoc gives each schema: ``lmc_runtime/e2b/envd/proto/process.proto``).
PACKAGE_DIR = Path("lmc_runtime", "e2b", "envd", "proto")


def generate(out: Path) -> list[Path]:
    """Write the generated modules for :data:`SCHEMAS` into ``out``; returns their paths."""
    import grpc_tools  # type: ignore[import-not-found]
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"

    with tempfile.TemporaryDirectory() as scratch:
        schemas = Path(scratch, "in") / PACKAGE_DIR
        schemas.mkdir(parents=True)
        for name in SCHEMAS:
            shutil.copyfile(_HERE / name, schemas / name)
        made_dir = Path(scratch, "out")
        made_dir.mkdir()
        args = ["protoc", f"-I{Path(scratch, 'in')}", f"-I{well_known}"]
        args += [f"--python_out={made_dir}", f"--pyi_out={made_dir}"]
        args += [str(schemas / name) for name in SCHEMAS]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed: {' '.join(args)}")
        written = []
        for made in sorted((made_dir / PACKAGE_DIR).glob("*_pb2.py*")):
            target = out / made.name
            target.write_text(HEADER + made.read_text())
            written.append(target)
    return written


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else _ROOT / PACKAGE_DIR):
        logger.info("wrote %s", path)
