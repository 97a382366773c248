"""The Java runner's plan for ``lmc setup --dry-run``: what building it would do."""

from __future__ import annotations

from pathlib import Path

from lmc_runtime import java_runner


def test_the_java_runners_dry_run_says_each_step_left_and_builds_nothing(tmp_path: Path) -> None:
    """Guards the dry run: an unbuilt runner is a javac build, a built one without its
    class-data archive a recording, a whole one nothing; no folder is made."""
    source = tmp_path / "lmc-java" / "LmcJava.java"
    source.parent.mkdir()
    source.write_text("class LmcJava {}\n")
    target = java_runner.runner_build(source)
    assert target.parent.parent == source.parent
    said: list[str] = []
    java_runner.plan_runner(source, said.append)
    assert said == [f"lmc setup: would build the Java runner with javac into {target}"]
    assert not target.parent.exists()
    target.mkdir(parents=True)
    (target / java_runner.JAR).write_bytes(b"")
    java_runner.plan_runner(source, said.append)
    assert said[1] == f"lmc setup: would record the Java runner's class-data archive in {target}"
    (target / java_runner.ARCHIVE).write_bytes(b"")
    java_runner.plan_runner(source, said.append)
    assert said[2:] == ["lmc setup: the Java runner is built"]


def test_the_java_runners_build_folder_follows_every_source_beside_it(tmp_path: Path) -> None:
    """Guards the rebuild: a change to any class of the runner (not only its main one)
    names a new build folder, so ``lmc setup`` compiles the runner again."""
    source = tmp_path / "lmc-java" / "LmcJava.java"
    source.parent.mkdir()
    source.write_text("class LmcJava {}\n")
    helper = source.parent / "LmcJson.java"
    helper.write_text("final class LmcJson {}\n")
    assert java_runner.runner_sources(source) == [source, helper]
    before = java_runner.runner_build(source)
    helper.write_text("final class LmcJson { static int n; }\n")
    assert java_runner.runner_build(source) != before
