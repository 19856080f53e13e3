"""Volumes and templates (synchronous client)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

import warren

Make = Callable[..., warren.Sandbox]


@pytest.fixture
def volume_name() -> Iterator[str]:
    name = f"py-{uuid.uuid4().hex[:8]}"
    try:
        yield name
    finally:
        try:
            warren.Volumes.delete(name)
        except warren.NotFoundError:
            pass  # the test deleted it


def test_volumes(volume_name: str, make_sandbox: Make) -> None:
    # volume_name comes first so that its teardown runs after the sandboxes are killed.
    vol = warren.Volumes.create(volume_name, 16)
    assert vol["id"].startswith("vol_") and vol["size_mb"] == 16 and vol["attachments"] == []
    assert volume_name in [v["name"] for v in warren.Volumes.list()]
    assert warren.Volumes.get(vol["id"])["name"] == volume_name
    with pytest.raises(warren.ConflictError) as exists:
        warren.Volumes.create(volume_name, 16)
    assert exists.value.code == "VOLUME_EXISTS"
    with pytest.raises(warren.InvalidRequestError) as quota:
        warren.Volumes.create(f"{volume_name}-big", 10**7)
    assert quota.value.code == "VOLUME_QUOTA_EXCEEDED"

    writer = make_sandbox(volumes=[{"name": volume_name, "mount_path": "/data"}])
    assert writer.info["volumes"] == [{"name": volume_name, "mount_path": "/data", "read_only": False}]
    writer.files.write("/data/kept.txt", "outlives the sandbox\n")
    attached = warren.Volumes.get(volume_name)["attachments"]
    assert attached == [{"sandbox_id": writer.id, "mount_path": "/data", "read_only": False}]
    with pytest.raises(warren.ConflictError) as in_use:
        warren.Volumes.delete(volume_name)
    assert in_use.value.code == "VOLUME_IN_USE"
    with pytest.raises(warren.ConflictError) as has_volumes:
        writer.snapshot()
    assert has_volumes.value.code == "SANDBOX_HAS_VOLUMES"
    writer.kill()

    reader = make_sandbox(volumes=[{"name": volume_name, "mount_path": "/data", "read_only": True}])
    assert reader.files.read("/data/kept.txt") == "outlives the sandbox\n"
    ro = reader.commands.run("echo no > /data/new.txt")
    assert ro.exit_code != 0 and "Read-only file system" in ro.stderr
    reader.kill()

    warren.Volumes.delete(volume_name)
    with pytest.raises(warren.NotFoundError) as gone:
        warren.Volumes.get(volume_name)
    assert gone.value.code == "VOLUME_NOT_FOUND"


def test_templates_list_get_build_rebuild_delete(make_sandbox: Make) -> None:
    names = [t["name"] for t in warren.Templates.list()]
    assert "base" in names
    base = warren.Templates.get("base")
    assert base["state"] == "ready" and base["max_memory_mb"] >= base["default_memory_mb"]

    name = f"py-{uuid.uuid4().hex[:8]}"
    logs: list[tuple[str, int | None]] = []
    try:
        tpl = warren.Templates.build(
            name,
            base="base",
            steps=[
                {"run": "echo building step one; mkdir -p /srv"},
                warren.copy_step("/srv/app.py", "import os\nprint(40 + 2, os.environ['APP_MODE'])\n"),
                {"env": {"APP_MODE": "py"}},
                {"workdir": "/srv"},
            ],
            default_memory_mb=256,
            on_log=lambda line, step: logs.append((line, step)),
        )
        assert tpl["name"] == name and tpl["state"] == "ready" and tpl.get("source") == "recipe"
        assert tpl["default_memory_mb"] == 256 and tpl.get("workdir") == "/srv"
        # The log streamed, with the step each line belongs to.
        assert ("building step one", 1) in logs, logs
        assert any(step == 2 for _, step in logs)
        assert warren.Templates.get(name).get("base") == "base"

        sandbox = make_sandbox(template=name)
        assert sandbox.commands.run("python3 app.py").stdout == "42 py\n"
        with pytest.raises(warren.ConflictError) as in_use:
            warren.Templates.delete(name)
        assert in_use.value.code == "TEMPLATE_IN_USE"
        sandbox.kill()

        rebuilt: list[str] = []
        again = warren.Templates.rebuild(name, on_log=lambda line, _: rebuilt.append(line))
        assert again["name"] == name and rebuilt
        with pytest.raises(warren.ConflictError) as exists:
            warren.Templates.build(name, base="base", steps=[])
        assert exists.value.code == "TEMPLATE_EXISTS"
    finally:
        try:
            warren.Templates.delete(name)
        except warren.WarrenError:
            pass
    with pytest.raises(warren.NotFoundError) as gone:
        warren.Templates.get(name)
    assert gone.value.code == "TEMPLATE_NOT_FOUND"


def test_failed_builds_raise_typed_errors() -> None:
    name = f"py-{uuid.uuid4().hex[:8]}"
    steps: list[warren.RecipeStep] = [{"run": "echo one"}, {"run": "echo oops >&2; exit 3"}]
    lines: list[str] = []
    with pytest.raises(warren.TemplateBuildError) as failed:
        warren.Templates.build(name, base="base", steps=steps, on_log=lambda line, _: lines.append(line))
    assert failed.value.code == "TEMPLATE_BUILD_FAILED" and failed.value.status == 422
    assert failed.value.details == {"step": 2}
    assert "oops" in lines
    with pytest.raises(warren.NotFoundError):
        warren.Templates.get(name)

    with pytest.raises(warren.NotFoundError) as no_base:
        warren.Templates.build(name, base="no-such-base", steps=[])
    assert no_base.value.code == "TEMPLATE_NOT_FOUND"
    with pytest.raises(warren.InvalidRequestError) as not_image:
        warren.Templates.upload_image(name, b"this is not a tar archive" * 100)
    assert not_image.value.code == "INVALID_IMAGE"
