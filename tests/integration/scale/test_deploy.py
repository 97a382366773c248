"""The deployment examples in ``examples/deploy/`` hold together: HAProxy accepts
its config as the Kubernetes manifests fill it in, the manifests parse, and
what one names (replicas, services, secrets, the config) the others have."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

import pytest

from .cluster import CONFIG, HAPROXY

DEPLOY = CONFIG.parent


@pytest.fixture(scope="module")
def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    """Every object of the kustomization's resources, by (kind, name)."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: pip install pyyaml")
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    for generated in kustomization["configMapGenerator"]:
        for name in generated["files"]:
            assert (DEPLOY / name).is_file(), name
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / resource).read_text()):
            assert doc["apiVersion"] and doc["metadata"]["name"], resource
            objects[(doc["kind"], doc["metadata"]["name"])] = doc
    found = {str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*.yaml")} - {"kustomization.yaml"}
    assert found == set(kustomization["resources"])  # no manifest left out
    return objects


def _container(objects: dict[tuple[str, str], dict[str, Any]], kind: str, name: str) -> Any:
    return objects[(kind, name)]["spec"]["template"]["spec"]["containers"][0]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if not os.path.exists(HAPROXY):
        pytest.skip(f"HAProxy is not installed ({HAPROXY}): apt-get install haproxy")
    return subprocess.run(
        [HAPROXY, "-c", "-f", str(CONFIG)],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_haproxy_accepts_the_config_as_kubernetes_fills_it_in(
    manifests: dict[tuple[str, str], dict[str, Any]],
) -> None:
    env = _env(_container(manifests, "Deployment", "lmc-balancer"))
    checked = _check(env)
    assert checked.returncode == 0, checked.stderr
    # Only the replicas' names, which resolve inside the cluster, are warned about.
    warnings = [line for line in checked.stderr.splitlines() if "[WARNING]" in line]
    assert all("could not resolve address" in line for line in warnings), warnings


def test_haproxy_accepts_the_config_with_one_replica_and_refuses_a_broken_one() -> None:
    one = {"LMC_BALANCER_BIND": "127.0.0.1:8765", "LMC_REPLICA_1": "r1"}
    checked = _check({**one, "LMC_REPLICA_1_ADDR": "127.0.0.1:1"})
    assert checked.returncode == 0 and "WARNING" not in checked.stderr, checked.stderr
    broken = _check(one)  # no address for the replica
    assert broken.returncode != 0 and "expects <name> and <addr>" in broken.stderr


def test_the_balancer_lists_exactly_the_statefulsets_pods(
    manifests: dict[tuple[str, str], dict[str, Any]],
) -> None:
    replicas = manifests[("StatefulSet", "lmc")]
    service = manifests[("Service", replicas["spec"]["serviceName"])]
    assert service["spec"]["clusterIP"] == "None"  # headless: a DNS name per pod
    port = service["spec"]["ports"][0]["port"]
    env = _env(_container(manifests, "Deployment", "lmc-balancer"))
    listed = {
        env[name]: env[f"{name}_ADDR"] for name in env if re.fullmatch(r"LMC_REPLICA_\d+", name)
    }
    pods = [f"lmc-{i}" for i in range(replicas["spec"]["replicas"])]
    assert listed == {pod: f"{pod}.{service['metadata']['name']}:{port}" for pod in pods}
    balancer = manifests[("Deployment", "lmc-balancer")]["spec"]["template"]["spec"]
    assert balancer["volumes"][0]["configMap"]["name"] == "lmc-haproxy"


def test_each_replica_is_named_by_its_pod_and_finds_its_secrets_and_gateway(
    manifests: dict[tuple[str, str], dict[str, Any]],
) -> None:
    lmc = _container(manifests, "StatefulSet", "lmc")
    env = _env(lmc)
    assert "--replica=$(POD_NAME)" in lmc["args"]
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert "--store=$(LMC_STORE)" in lmc["args"]
    secret = manifests[("Secret", "lmc")]["stringData"]
    for name in ("LMC_TOKEN", "LMC_STORE", "LMC_GATEWAY_TOKEN"):
        assert env[name]["secretKeyRef"]["key"] in secret, name
    assert secret["store"].startswith("postgresql://")
    gateway = next(a for a in lmc["args"] if a.startswith("--gateway-url="))
    host, port = re.fullmatch(r"--gateway-url=http://([\w-]+):(\d+)", gateway).groups()  # type: ignore[union-attr]
    assert manifests[("Service", host)]["spec"]["ports"][0]["port"] == int(port)
    assert lmc["readinessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_image_runs_lmc_serve_as_a_user_with_bubblewrap() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"apt-get install .*\bbubblewrap\b", dockerfile)
    assert re.search(r"pip install .*\[serve[,\]]", dockerfile)
    users = re.findall(r"^USER (\S+)", dockerfile, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT .*"lmc", "serve"', dockerfile, re.MULTILINE)
