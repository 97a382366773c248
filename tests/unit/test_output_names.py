"""How OutputBudget names a cut output's file: always inside its folder, and
by its route when it has one."""

from __future__ import annotations

from pathlib import Path

from lmc_runtime.budget.output import OutputBudget


def _cut(budget: OutputBudget) -> None:
    for i in range(50):
        budget.feed(f"line {i:03d}\n")


def test_a_message_id_with_slashes_never_places_the_file_outside_its_folder(
    tmp_path: Path,
) -> None:
    """Guards the spill file's name: a client's message id ('../x') is only a
    label, so the file stays in the spill folder."""
    spill = tmp_path / "spill" / "inner"
    budget = OutputBudget(100, spill, "../../escaped/../x y")
    _cut(budget)
    cut = budget.finish()
    assert cut is not None and budget.path is not None
    assert budget.path.parent == spill
    assert not (tmp_path / "escaped").exists()


def test_with_a_route_the_marker_names_the_route_not_the_path(tmp_path: Path) -> None:
    """Guards what a remote client is told: the address it can fetch, never
    the folder the server keeps the file in."""
    budget = OutputBudget(100, tmp_path, "run", route="/v1/sessions/s/outputs/")
    _cut(budget)
    cut = budget.finish()
    assert cut is not None and budget.path is not None
    assert cut.where == "/v1/sessions/s/outputs/" + budget.path.name
    assert cut.where in cut.text and str(tmp_path) not in cut.text
    assert budget.path.read_text() == "".join(f"line {i:03d}\n" for i in range(50))
