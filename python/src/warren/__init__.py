"""Warren: self-hosted gVisor sandboxes and managed PostgreSQL, from Python.

``warren.Sandbox`` is the synchronous client, ``warren.AsyncSandbox`` its
asyncio twin; both find the API and the token on their own (arguments, then
``$WARREN_API``/``$WARREN_API_KEY``, then ``http://127.0.0.1:8080`` and
``$WARREN_HOME/admin-token``).
"""

from ._async.commands import AsyncCommandHandle, AsyncCommands
from ._async.files import AsyncFiles
from ._async.network import AsyncNetwork
from ._async.processes import AsyncProcesses
from ._async.resources import (
    AsyncDatabase,
    AsyncKeys,
    AsyncSnapshots,
    AsyncTemplates,
    AsyncVolumes,
    async_get_health,
)
from ._async.sandbox import AsyncForkTree, AsyncSandbox, SandboxCreation
from ._config import DEFAULT_API_URL, ResolvedConfig, resolve_config, token_file_path, warren_home
from ._errors import (
    ERROR_STATUS,
    AuthError,
    CapacityError,
    RateLimitError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    NotReadyError,
    PermissionDeniedError,
    ServerError,
    TemplateBuildError,
    UpstreamError,
    WarrenConnectionError,
    WarrenError,
    error_class,
)
from ._results import CommandResult, OutputHandler, to_exec_request
from ._code import Execution, ExecutionError, Result
from ._streams import AsyncByteStream, AsyncEventStream, ByteStream, EventStream
from ._sync.commands import CommandHandle, Commands
from ._sync.files import Files
from ._sync.network import Network
from ._sync.processes import Processes
from ._sync.resources import Database, Keys, Snapshots, Templates, Volumes, get_health
from ._sync.sandbox import ForkTree, Sandbox, SandboxPage
from ._templates import BuildLogHandler
from ._types import (
    DatabaseEvent,
    DatabaseInfo,
    DatabaseState,
    EgressEvent,
    EgressSecret,
    ExecEvent,
    ExecRequest,
    FileInfo,
    Health,
    NetworkPolicy,
    NetworkView,
    ProcessInfo,
    ReadyProbe,
    RecipeStep,
    SandboxEvent,
    SandboxInfo,
    SandboxState,
    Signal,
    Snapshot,
    Template,
    Volume,
    VolumeMount,
    WriteResult,
)
from ._util import copy_step

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_API_URL",
    "ERROR_STATUS",
    "AsyncByteStream",
    "AsyncCommandHandle",
    "AsyncCommands",
    "AsyncDatabase",
    "AsyncEventStream",
    "AsyncFiles",
    "AsyncForkTree",
    "AsyncNetwork",
    "AsyncProcesses",
    "AsyncSandbox",
    "AsyncSnapshots",
    "AsyncTemplates",
    "AsyncVolumes",
    "AsyncKeys",
    "AuthError",
    "BuildLogHandler",
    "ByteStream",
    "CapacityError",
    "RateLimitError",
    "CommandHandle",
    "CommandResult",
    "Commands",
    "ConflictError",
    "Database",
    "DatabaseEvent",
    "DatabaseInfo",
    "DatabaseState",
    "EgressEvent",
    "EgressSecret",
    "EventStream",
    "ExecEvent",
    "ExecRequest",
    "FileInfo",
    "Files",
    "ForkTree",
    "Health",
    "InvalidRequestError",
    "Network",
    "NetworkPolicy",
    "NetworkView",
    "NotFoundError",
    "NotReadyError",
    "OutputHandler",
    "PermissionDeniedError",
    "ProcessInfo",
    "Processes",
    "ReadyProbe",
    "RecipeStep",
    "ResolvedConfig",
    "Sandbox",
    "SandboxCreation",
    "SandboxEvent",
    "SandboxInfo",
    "SandboxPage",
    "SandboxState",
    "ServerError",
    "Signal",
    "Snapshot",
    "Snapshots",
    "Template",
    "TemplateBuildError",
    "Templates",
    "UpstreamError",
    "Execution",
    "ExecutionError",
    "Result",
    "Volume",
    "VolumeMount",
    "Volumes",
    "Keys",
    "WarrenConnectionError",
    "WarrenError",
    "WriteResult",
    "__version__",
    "async_get_health",
    "copy_step",
    "error_class",
    "get_health",
    "resolve_config",
    "to_exec_request",
    "token_file_path",
    "warren_home",
]
