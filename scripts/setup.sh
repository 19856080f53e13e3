#!/usr/bin/env bash
# Installs what Warren needs on a Debian 12 host; safe to run again.
#   - system packages (debootstrap, iproute2, gcc for the guest's spawner helper) via apt
#     where missing
#   - PostgreSQL 15's server binaries (postgresql), without a system cluster running
#   - runsc (gVisor) 2024-07 from Debian 13's archive, kept in .state/bin
#     without touching the system's apt configuration
#   - npm dependencies, and the web dashboard's build (packages/dashboard/dist) when its sources changed
#   - chromium, for the dashboard's browser tests
#   - xfsprogs, for the volume pool (database branches share blocks with their parent)
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="$PWD/.state"
mkdir -p "$STATE/bin"
log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "Warren runs sandboxes with gVisor and needs root (run as root or with sudo)." >&2
    exit 1
  fi
}
need_root

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "Warren needs Node.js 20 or newer (found: $(node --version 2>/dev/null || echo none))." >&2
  exit 1
fi

apt_updated=""
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$apt_updated" ]; then
    log "apt-get update"
    apt-get update -qq
    apt_updated=1
  fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
apt_install debootstrap iproute2 ca-certificates curl jq gcc libc6-dev openssl e2fsprogs xfsprogs mount musl-tools postgresql-client util-linux python3-httpx python3-pytest chromium

# PostgreSQL 15's server binaries, for the PostgreSQL store's tests and for trying it on one
# machine (packages/server/src/store/pg-local.ts runs private clusters as the postgres user).
# The package would create, start and enable a system cluster: none is created, nothing is
# started during the install (policy-rc.d), and the service is left disabled.
if ! dpkg -s postgresql >/dev/null 2>&1; then
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/warren-no-main.conf
  policy=/usr/sbin/policy-rc.d
  saved=""
  if [ -e "$policy" ]; then saved=$(mktemp) && cp -p "$policy" "$saved"; fi
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
  restore_policy() { if [ -n "$saved" ]; then mv "$saved" "$policy"; else rm -f "$policy"; fi; }
  trap restore_policy EXIT
  apt_install postgresql
  restore_policy
  trap - EXIT
  if command -v systemctl >/dev/null 2>&1; then
    systemctl disable --quiet postgresql.service >/dev/null 2>&1 || true
  fi
fi

# gVisor: Debian 12's runsc (2022) cannot checkpoint a running sandbox reliably;
# Debian 13's (2024-07) is a static binary that runs here too.
RUNSC="$STATE/bin/runsc"
if ! "$RUNSC" --version >/dev/null 2>&1; then
  mirror=$(grep -hoE '^(URIs:|deb) +\S+' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v security | awk '{print $2}' | grep -E '^https?://' | head -n1 || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  work="$STATE/apt-trixie"
  rm -rf "$work" && mkdir -p "$work/lists/partial" "$work/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$work/sources.list"
  aptopts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache::Archives=$work/archives" -o APT::Sandbox::User=root)
  log "fetching runsc from Debian 13 ($mirror)"
  apt-get "${aptopts[@]}" update -qq
  (cd "$work" && apt-get "${aptopts[@]}" download runsc >/dev/null)
  dpkg-deb -x "$work"/runsc_*.deb "$work/x"
  install -m 0755 "$work/x/usr/bin/runsc" "$RUNSC"
  rm -rf "$work"
fi
log "$("$RUNSC" --version | head -n1)"

# Reinstall only when the lockfile changed since the last install.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules/fastify ] || [ "$(cat node_modules/.warren-lock-hash 2>/dev/null)" != "$lock_hash" ]; then
  log "installing npm dependencies (better-sqlite3 compiles from source: a minute or two)"
  npm ci --no-audit --no-fund
  echo "$lock_hash" >node_modules/.warren-lock-hash
fi

# The web dashboard: rebuilt only when its sources or the lockfile changed since the last build.
dash=packages/dashboard
dash_hash=$( (sha256sum package-lock.json "$dash/package.json" "$dash/index.html" "$dash/vite.config.ts"; find "$dash/src" -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dash/dist/.build-hash" 2>/dev/null)" != "$dash_hash" ]; then
  log "building the web dashboard"
  npm run build --silent -w "$dash" >/dev/null
  echo "$dash_hash" >"$dash/dist/.build-hash"
fi
