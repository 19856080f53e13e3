"""The API's objects as typed dictionaries: exactly the JSON the REST API answers.

Field names are the API's (snake_case); see docs/api.md for their meaning.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

SandboxState = Literal["creating", "running", "paused", "hibernated", "stopping", "stopped", "error"]
Signal = Literal[
    "SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT"
]


class VolumeMount(TypedDict):
    """A volume to attach at create: ``{"name", "mount_path", "read_only"?}``."""

    name: str
    mount_path: str
    read_only: NotRequired[bool]


class SandboxInfo(TypedDict):
    id: str
    org_id: str
    template: str
    state: SandboxState
    cpu: float
    memory_mb: int
    disk_mb: int
    volumes: list[VolumeMount]
    metadata: dict[str, str]
    env_keys: list[str]
    ttl_seconds: int
    host_id: str
    created_at: str
    last_activity_at: str
    expires_at: str
    stopped_at: str | None
    stop_reason: str | None
    parent_id: str | None
    snapshot_id: str | None
    lineage: list[str]
    fork_kind: Literal["memory", "disk"] | None
    persistent: bool
    idle_timeout_seconds: int
    preview_url: str
    preview_auth: bool
    preview_token: NotRequired[str]


class SandboxEvent(TypedDict):
    at: str
    from_state: str | None
    to_state: str
    cause: str


class ExecRequest(TypedDict):
    cmd: str
    args: list[str]
    env: NotRequired[dict[str, str]]
    cwd: NotRequired[str]
    stdin: NotRequired[str]
    timeout: NotRequired[float]
    user: NotRequired[str]


class ExecResult(TypedDict):
    pid: int
    exit_code: int
    signal: str | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: float


class ProcessInfo(TypedDict):
    pid: int
    cmd: str
    args: list[str]
    cwd: str
    state: Literal["running", "exited"]
    exit_code: int | None
    signal: str | None
    timed_out: bool
    started_at: str
    ended_at: str | None
    output_truncated: bool


class StartEvent(TypedDict):
    type: Literal["start"]
    pid: int


class StdoutEvent(TypedDict):
    type: Literal["stdout"]
    data: str


class StderrEvent(TypedDict):
    type: Literal["stderr"]
    data: str


class ExitEvent(TypedDict):
    type: Literal["exit"]
    exit_code: int
    signal: str | None
    timed_out: bool
    duration_ms: float


class ErrorEvent(TypedDict):
    type: Literal["error"]
    code: str
    message: str


ExecEvent = StartEvent | StdoutEvent | StderrEvent | ExitEvent | ErrorEvent


class FileInfo(TypedDict):
    name: str
    path: str
    type: Literal["file", "dir", "symlink", "other"]
    size: int
    mode: str
    mtime: str
    symlink_target: NotRequired[str]


class WriteResult(TypedDict):
    path: str
    size: int


class NetworkPolicy(TypedDict):
    mode: Literal["none", "restricted", "open"]
    allow: NotRequired[list[str]]
    deny: NotRequired[list[str]]


class EgressSecret(TypedDict):
    host: str
    header: str
    value: str


class SecretView(TypedDict):
    host: str
    header: str


class NetworkView(TypedDict):
    mode: Literal["none", "restricted", "open"]
    allow: list[str]
    deny: list[str]
    secrets: list[SecretView]


class EgressEvent(TypedDict):
    id: int
    at: str
    protocol: Literal["http", "connect", "socks5"]
    host: str
    port: int
    address: str | None
    decision: Literal["allowed", "denied"]
    reason: str
    bytes_out: int
    bytes_in: int
    duration_ms: int


class VolumeAttachment(TypedDict):
    sandbox_id: str
    mount_path: str
    read_only: bool


class Volume(TypedDict):
    id: str
    org_id: str
    name: str
    size_mb: int
    used_bytes: int
    attachments: list[VolumeAttachment]
    created_at: str


class ApiKey(TypedDict):
    id: str
    org_id: str
    name: str
    prefix: str
    scopes: list[str]
    sandbox_id: str | None
    sandbox_labels: dict[str, str] | None
    created_at: str
    created_by: str | None
    expires_at: str | None
    last_used_at: str | None


class CreatedKey(ApiKey):
    key: str


class Snapshot(TypedDict):
    id: str
    org_id: str
    sandbox_id: str
    template: str
    cpu: float
    memory_mb: int
    size_bytes: int
    parent_pause_ms: float
    created_at: str


class ReadyProbe(TypedDict):
    cmd: list[str]
    timeout: NotRequired[float]


class TemplateLayer(TypedDict):
    digest: str
    size: int


class TemplateBuildHint(TypedDict):
    cli: str
    api: str


class Template(TypedDict):
    id: str
    name: str
    state: Literal["not_built", "building", "ready", "error"]
    description: NotRequired[str]
    build: NotRequired[TemplateBuildHint]
    error: NotRequired[str]
    default_cpu: float
    default_memory_mb: int
    max_cpu: float
    max_memory_mb: int
    default_disk_mb: int
    max_disk_mb: int
    rootfs_bytes: int
    snapshot_bytes: int
    built_at: str | None
    source: NotRequired[Literal["builtin", "image", "recipe"]]
    base: NotRequired[str]
    layers: NotRequired[list[TemplateLayer]]
    build_ms: NotRequired[float]
    env: NotRequired[dict[str, str]]
    workdir: NotRequired[str | None]
    user: NotRequired[str | None]
    start: NotRequired[list[str] | None]
    ready: NotRequired[ReadyProbe | None]


class RunStep(TypedDict):
    run: str
    timeout: NotRequired[float]


class CopySpec(TypedDict):
    dest: str
    content: str
    mode: NotRequired[str]


class CopyStep(TypedDict):
    copy: CopySpec


class EnvStep(TypedDict):
    env: dict[str, str]


class WorkdirStep(TypedDict):
    workdir: str


class StartStep(TypedDict):
    start: list[str]


class ReadyStep(TypedDict):
    ready: ReadyProbe


RecipeStep = RunStep | CopyStep | EnvStep | WorkdirStep | StartStep | ReadyStep


class HostHealth(TypedDict):
    id: str
    memory_budget_mb: int
    memory_reserved_mb: int
    sandboxes: int


class RuntimeInfo(TypedDict):
    driver: str
    version: str
    volume_clone: Literal["reflink", "copy"]


class Health(TypedDict):
    status: Literal["ok"]
    version: str
    runtime: RuntimeInfo
    hosts: list[HostHealth]
    uptime_seconds: float
    leader: bool


DatabaseState = Literal["creating", "ready", "hibernated", "recovering", "failed"]


class DatabaseArchive(TypedDict):
    last_archived_wal: str | None
    last_archived_at: str | None
    last_base_backup_at: str | None
    last_base_backup_lsn: str | None
    epoch: int


class DatabaseInfo(TypedDict):
    id: str
    org_id: str
    label: str
    state: DatabaseState
    version: str
    cpu: float
    memory_mb: int
    disk_mb: int
    scale_to_zero_seconds: int
    archive_timeout_seconds: int
    user: str
    database: str
    password: str
    host: str
    port: int
    connection_url: str
    pooled_url: str
    parent_id: str | None
    restored_to: str | None
    sandbox_id: str
    archive: DatabaseArchive
    archive_lag_seconds: int | None
    metadata: dict[str, str]
    created_at: str


class DatabaseEvent(TypedDict):
    at: str
    kind: str
    message: str
