"""``lmc env create|list|remove``: the environments of a server's data directory.

The data directory is found as ``lmc serve`` finds it: ``--data-dir``, else
``LMC_SERVE_DATA_DIR``, else ``$XDG_DATA_HOME/lmc-runtime``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import ServiceError

__all__ = ["add_env_commands", "data_dir_of"]

ENV_DESCRIPTION = """\
Make, list and remove environments: a virtualenv with ipykernel and the packages
asked for (from the package indexes this host reaches), and node packages if asked,
under the server's data directory. A session runs in one when it asks for it
({"environment": NAME}) or when `lmc serve --environment NAME` makes it the default;
its code sees the environment's packages, not the server's."""


def data_dir_of(args: argparse.Namespace) -> Path:
    """The data directory ``lmc serve`` would use with the same flag and variables."""
    from ..service.config import default_data_dir

    given = args.data_dir or os.environ.get("LMC_SERVE_DATA_DIR") or None
    return (Path(given).expanduser() if given else default_data_dir()).resolve()


def cmd_env_create(args: argparse.Namespace) -> int:
    from ..environments.build import BuildFailed, create_environment

    try:
        root = create_environment(
            data_dir_of(args),
            args.name,
            pip=args.pip,
            requirements=args.requirements,
            npm=args.npm,
            python=args.python,
        )
    except BuildFailed as exc:
        sys.stderr.write(f"lmc env create: {exc}\n")
        return 1
    sys.stdout.write(f"{args.name}: ready in {root}\n")
    return 0


def cmd_env_list(args: argparse.Namespace) -> int:
    from ..environments.store import list_environments

    listed = list_environments(data_dir_of(args))
    if not listed:
        sys.stdout.write("no environments (make one with `lmc env create NAME`)\n")
    for each in listed:
        manifest = each.manifest
        state = "ready" if each.problem is None else f"broken: {each.problem}"
        if manifest is None:
            sys.stdout.write(f"{each.name}: {state}\n")
            continue
        asked = [*manifest.pip, *manifest.requirements, *(f"npm:{p}" for p in manifest.npm)]
        packages = ", ".join(asked) or "no packages"
        line = f"{each.name}: Python {manifest.python}, {packages}; {manifest.created}; {state}"
        sys.stdout.write(line + "\n")
    return 0


def cmd_env_remove(args: argparse.Namespace) -> int:
    from ..environments.store import remove_environment

    try:
        remove_environment(data_dir_of(args), args.name)
    except (ServiceError, OSError) as exc:
        sys.stderr.write(f"lmc env remove: {exc}\n")
        return 1
    sys.stdout.write(f"{args.name}: removed\n")
    return 0


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the server's data directory (default: $LMC_SERVE_DATA_DIR, else "
        "$XDG_DATA_HOME/lmc-runtime, as lmc serve)",
    )


def add_env_commands(env: argparse.ArgumentParser) -> None:
    """``create``, ``list`` and ``remove`` under ``lmc env``."""
    sub = env.add_subparsers(dest="env_command", required=True, parser_class=type(env))
    create = sub.add_parser("create", help="build an environment")
    create.add_argument("name", metavar="NAME", help="its name: [a-z0-9][a-z0-9_-]{0,62}")
    create.add_argument(
        "--pip", nargs="+", default=[], metavar="PKG", help="pip requirements or paths"
    )
    create.add_argument(
        "--requirements",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="a pip requirements file (repeatable)",
    )
    create.add_argument("--npm", nargs="+", default=[], metavar="PKG", help="node packages")
    create.add_argument(
        "--python",
        metavar="PATH",
        help="the Python the virtualenv is made from (default: the one running lmc); "
        "it must be under a folder every sandbox sees, such as /usr",
    )
    _data_dir_option(create)
    create.set_defaults(func=cmd_env_create)
    listing = sub.add_parser("list", help="list the environments and whether they are ready")
    _data_dir_option(listing)
    listing.set_defaults(func=cmd_env_list)
    remove = sub.add_parser("remove", help="remove an environment")
    remove.add_argument("name", metavar="NAME")
    _data_dir_option(remove)
    remove.set_defaults(func=cmd_env_remove)
