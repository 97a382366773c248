"""Installing packages in a session: pip installs into the session's own site
folder (outside the listed home), and a failed install fails the run."""

from __future__ import annotations

import io
import tarfile
import zipfile

from .server import Server, final_status, output

_WHEEL = "tinylmc-0.1-py3-none-any.whl"


def _wheel() -> bytes:
    """A pure-Python wheel of one module, made here: no index is ever asked."""
    files = {
        "tinylmc/__init__.py": "ANSWER = 42\n",
        "tinylmc-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinylmc\nVersion: 0.1\n",
        "tinylmc-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "tinylmc-0.1.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name, text in {**files, "tinylmc-0.1.dist-info/RECORD": record}.items():
            wheel.writestr(name, text)
    return buffer.getvalue()


def test_pip_install_without_network_is_an_error_with_a_plain_message(server: Server) -> None:
    """Guards %pip's failure: an install that cannot reach an index (a package
    this host lacks) ends the run as an error, and says so without ANSI codes."""
    session_id = server.create()
    try:
        messages = server.execute(session_id, "%pip install tinylmc")
        assert final_status(messages) == "error", messages
        text = output(messages) + "".join(str(m.get("content") or "") for m in messages)
        assert "\x1b" not in text, text
        assert "pip install tinylmc failed" in text, text
        assert "Read-only file system" not in text, text
    finally:
        server.delete(session_id)


def test_a_local_wheel_installs_and_imports_in_the_same_session(server: Server) -> None:
    """Guards the session's site folder: %pip and pip in a shell install there,
    the package imports at once in the kernel and in new Pythons, and the
    install leaves nothing in the listed home but the uploaded wheel."""
    session_id = server.create(languages=["python", "shell"])
    base = f"/v1/sessions/{session_id}"
    try:
        with server.client() as client:
            put = client.put(f"{base}/files/{_WHEEL}", content=_wheel())
            assert put.status_code == 201, put.text
            installed = server.execute(session_id, f"%pip install --no-index ./{_WHEEL}")
            assert final_status(installed) == "ok", installed
            used = server.execute(session_id, "import tinylmc\nprint(tinylmc.ANSWER)")
            assert output(used) == "42\n", used
            shell = server.execute(
                session_id,
                "pip uninstall -y -q tinylmc && pip install -q --no-index ./"
                + _WHEEL
                + " && python3 -c 'import tinylmc, sys; print(tinylmc.__file__)'",
                language="shell",
            )
            assert "/run/lmc/local/" in output(shell), shell
            listing = client.get(f"{base}/list").json()
            assert [entry["name"] for entry in listing["entries"]] == [_WHEEL]
    finally:
        server.delete(session_id)


def _npm_package() -> bytes:
    """A tarball of a one-file npm package, made here (as `npm pack` would)."""
    files = {
        "package/package.json": b'{"name": "tinylmc", "version": "1.0.0", "main": "index.js"}',
        "package/index.js": b"module.exports = { answer: 42 };\n",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_npm_install_in_the_home_is_required_by_javascript(server: Server) -> None:
    """Guards npm in a session: it installs into ./node_modules of the working
    directory (its cache in the runtime folder), and JavaScript requires it."""
    session_id = server.create(languages=["javascript", "shell"])
    try:
        with server.client() as client:
            put = client.put(f"/v1/sessions/{session_id}/files/tinylmc.tgz", content=_npm_package())
            assert put.status_code == 201, put.text
        installed = server.execute(
            session_id,
            "npm install --offline --no-audit --no-fund ./tinylmc.tgz",
            language="shell",
        )
        assert final_status(installed) == "ok", installed
        used = server.execute(
            session_id, "console.log(require('tinylmc').answer)", language="javascript"
        )
        assert output(used) == "42\n", used
        with server.client() as client:
            listing = client.get(f"/v1/sessions/{session_id}/list").json()
        names = {entry["name"] for entry in listing["entries"]}
        assert names == {"tinylmc.tgz", "node_modules", "package.json", "package-lock.json"}
    finally:
        server.delete(session_id)
